#include "daemon/udp.h"

#include <event2/event.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "daemon/worker.h"
#include "protocol/binary_wire.h"

namespace herdless {

namespace {

// Datagrams read per readable event before the loop serves others.
constexpr int kDatagramsPerEvent = 32;
constexpr size_t kUdpDataSize = kUdpMaxPayload - kUdpHeaderSize;

}  // namespace

UdpEndpoint::UdpEndpoint(Worker* worker, int fd)
    : worker_(worker), fd_(fd), buffer_(new char[kUdpReadBuffer]) {
  output_.TrackMessages(true);
}

UdpEndpoint::~UdpEndpoint() {
  if (read_event_ != nullptr) event_free(read_event_);
  close(fd_);
}

bool UdpEndpoint::Start() {
  read_event_ = event_new(worker_->base(), fd_, EV_READ | EV_PERSIST, &UdpEndpoint::OnReadable, this);
  return read_event_ != nullptr && event_add(read_event_, nullptr) == 0;
}

void UdpEndpoint::OnReadable(int, short, void* arg) {
  UdpEndpoint* u = static_cast<UdpEndpoint*>(arg);
  for (int i = 0; i < kDatagramsPerEvent; ++i) {
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);
    const ssize_t n = recvfrom(u->fd_, u->buffer_.get(), kUdpReadBuffer, 0,
                               reinterpret_cast<struct sockaddr*>(&peer), &peer_len);
    if (n < 0) return;   // EAGAIN (another worker took it) or an error: wait for the next
    u->HandleDatagram(std::string_view(u->buffer_.get(), static_cast<size_t>(n)),
                      reinterpret_cast<struct sockaddr*>(&peer), peer_len);
  }
}

void UdpEndpoint::HandleDatagram(std::string_view datagram, const struct sockaddr* peer,
                                 socklen_t peer_len) {
  // memcached ignores datagrams of 8 bytes or less, and those that claim to
  // be one of several (it does not reassemble requests).
  if (datagram.size() <= kUdpHeaderSize) return;
  ThreadStats& stats = worker_->stats();
  stats.bytes_read.Add(datagram.size());
  const auto* h = reinterpret_cast<const unsigned char*>(datagram.data());
  if (h[4] != 0 || h[5] != 1) return;
  const uint16_t request_id = static_cast<uint16_t>(h[0] << 8 | h[1]);
  std::string_view input = datagram.substr(kUdpHeaderSize);
  const bool binary = static_cast<unsigned char>(input[0]) == binary::kRequestMagic;
  // The whole datagram at once: no -R limit, no output bound (a datagram's
  // requests are bounded by its 64 KiB), no parking.
  worker_->executor().set_client_fd(fd_, /*datagram=*/true);
  ProcessOutcome o = binary ? worker_->binary_executor().Process(input, &output_, SIZE_MAX, 0)
                            : worker_->executor().Process(input, &output_, SIZE_MAX, 0);
  (void)o;   // what is left (an incomplete request, a swallow, a close) is dropped
  SendMessages(request_id, peer, peer_len);
  output_.Clear();
}

void UdpEndpoint::SendMessages(uint16_t request_id, const struct sockaddr* peer,
                               socklen_t peer_len) {
  ThreadStats& stats = worker_->stats();
  if (output_.leading_empty_message()) {
    // memcached sends an empty first response object as a bare header
    // (sequence 0 of 0 datagrams).
    const unsigned char header[kUdpHeaderSize] = {static_cast<unsigned char>(request_id >> 8),
                                                  static_cast<unsigned char>(request_id),
                                                  0, 0, 0, 0, 0, 0};
    const ssize_t sent = sendto(fd_, header, sizeof(header), 0, peer, peer_len);
    if (sent < 0) return;
    stats.bytes_written.Add(static_cast<uint64_t>(sent));
  }
  if (output_.empty()) return;
  output_.EndMessage();
  // Message ends count bytes from the start of this datagram's replies.
  flat_.clear();
  while (!output_.empty()) {
    struct iovec iov[64];
    const int n = output_.FillIovecs(iov, 64);
    size_t copied = 0;
    for (int i = 0; i < n; ++i) {
      flat_.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      copied += iov[i].iov_len;
    }
    output_.Consume(copied);
  }
  size_t start = 0;
  for (size_t end : output_.message_ends()) {
    const size_t len = end - start;
    const size_t total = std::min<size_t>((len + kUdpDataSize - 1) / kUdpDataSize, USHRT_MAX);
    for (size_t seq = 0; seq < total; ++seq) {
      const size_t from = start + seq * kUdpDataSize;
      const size_t chunk = std::min(kUdpDataSize, end - from);
      unsigned char header[kUdpHeaderSize] = {
          static_cast<unsigned char>(request_id >> 8), static_cast<unsigned char>(request_id),
          static_cast<unsigned char>(seq >> 8),        static_cast<unsigned char>(seq),
          static_cast<unsigned char>(total >> 8),      static_cast<unsigned char>(total),
          0, 0};
      struct iovec parts[2] = {{header, sizeof(header)},
                               {const_cast<char*>(flat_.data() + from), chunk}};
      struct msghdr msg;
      std::memset(&msg, 0, sizeof(msg));
      msg.msg_name = const_cast<struct sockaddr*>(peer);
      msg.msg_namelen = peer_len;
      msg.msg_iov = parts;
      msg.msg_iovlen = 2;
      const ssize_t sent = sendmsg(fd_, &msg, 0);
      // A full send buffer drops the rest of the reply: UDP clients retry.
      if (sent < 0) return;
      stats.bytes_written.Add(static_cast<uint64_t>(sent));
    }
    start = end;
  }
}

}  // namespace herdless
