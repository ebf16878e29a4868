#include "daemon/transport.h"

#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "protocol/reply.h"

namespace herdless {

namespace {

constexpr int kMaxIovecs = IOV_MAX;

}  // namespace

SocketTransport::~SocketTransport() {
  if (read_event_ != nullptr) event_free(read_event_);
  if (write_event_ != nullptr) event_free(write_event_);
  close(fd_);
}

bool SocketTransport::Start(Owner* owner) {
  owner_ = owner;
  // The write event is made when a write first blocks (most connections never
  // fill their socket): an idle connection holds one event.
  read_event_ = event_new(base_, fd_, EV_READ | EV_PERSIST, &SocketTransport::OnReadEvent, this);
  if (read_event_ == nullptr) return false;
  SetReading(true);
  return reading_;
}

void SocketTransport::OnReadEvent(int, short, void* arg) {
  static_cast<SocketTransport*>(arg)->OnSocketReadable();
}

void SocketTransport::OnWriteEvent(int, short, void* arg) {
  static_cast<SocketTransport*>(arg)->OnSocketWritable();
}

Transport::Io SocketTransport::Read(char* dest, size_t room, size_t* n) {
  const ssize_t got = read(fd_, dest, room);
  if (got > 0) {
    *n = static_cast<size_t>(got);
    return Io::kDone;
  }
  if (got == 0) return Io::kEof;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Io::kAgain;
  return Io::kError;   // ECONNRESET and friends: close quietly
}

Transport::Io SocketTransport::Write(ReplyBuffer* out, size_t* n) {
  struct iovec iov[kMaxIovecs];
  *n = 0;
  while (!out->empty()) {
    const int count = out->FillIovecs(iov, kMaxIovecs);
    struct msghdr msg;
    std::memset(&msg, 0, sizeof(msg));
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t sent = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (sent > 0) {
      out->Consume(static_cast<size_t>(sent));
      *n += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kAgain;   // EV_WRITE
    return Io::kError;   // EPIPE, ECONNRESET, ...
  }
  return Io::kDone;
}

void SocketTransport::DiscardUnread() {
  // Raw socket bytes, TLS records or not: they are only thrown away.
  char scratch[16 * 1024];
  for (int i = 0; i < 64; ++i) {
    if (read(fd_, scratch, sizeof(scratch)) <= 0) break;
  }
}

void SocketTransport::ChangeReading(bool on) {
  if (on ? event_add(read_event_, nullptr) == 0 : event_del(read_event_) == 0) reading_ = on;
}

void SocketTransport::ChangeWriting(bool on) {
  if (on && write_event_ == nullptr) {
    write_event_ = event_new(base_, fd_, EV_WRITE | EV_PERSIST, &SocketTransport::OnWriteEvent, this);
    if (write_event_ == nullptr) return;   // the connection waits for its next read or timeout
  }
  if (on ? event_add(write_event_, nullptr) == 0 : event_del(write_event_) == 0) writing_ = on;
}

void SocketTransport::ActivateRead() { event_active(read_event_, EV_READ, 0); }

}  // namespace herdless
