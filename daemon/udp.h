// UdpEndpoint: one worker's share of a UDP listening socket (-U), as in
// memcached each worker reads the socket through its own descriptor. A
// datagram carries memcached's 8-byte frame header (request id, sequence
// number, datagram count, reserved) and one or more whole requests, text or
// binary (its first byte picks, whatever -B says, as memcached). Replies go
// back to the sender as memcached 1.6 sends them: each response object (a
// command's reply; each key of a multi-key get) as its own message, split
// into datagrams of at most 1400 bytes, each with the request id, its
// sequence number and the message's datagram count. Multi-datagram requests
// are dropped, as are requests cut off by the end of their datagram. A UDP
// read never parks (there is no connection to hold the reply).
// Lives on its worker's thread and is used only there.
#ifndef HERDLESS_DAEMON_UDP_H_
#define HERDLESS_DAEMON_UDP_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/reply.h"

struct event;

namespace herdless {

class Worker;

// memcached's UDP_HEADER_SIZE, UDP_MAX_PAYLOAD_SIZE (header included) and
// UDP_READ_BUFFER_SIZE.
inline constexpr size_t kUdpHeaderSize = 8;
inline constexpr size_t kUdpMaxPayload = 1400;
inline constexpr size_t kUdpReadBuffer = 65536;

class UdpEndpoint {
 public:
  // Takes ownership of the non-blocking datagram socket `fd`.
  UdpEndpoint(Worker* worker, int fd);
  ~UdpEndpoint();   // closes the descriptor
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  // Registers the socket with the worker's loop. False: it could not.
  bool Start();

  // Handles one datagram (exposed for tests): runs its requests and sends
  // the replies to `peer`.
  void HandleDatagram(std::string_view datagram, const struct sockaddr* peer, socklen_t peer_len);

 private:
  static void OnReadable(int fd, short what, void* arg);
  void SendMessages(uint16_t request_id, const struct sockaddr* peer, socklen_t peer_len);

  Worker* const worker_;
  const int fd_;
  event* read_event_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  ReplyBuffer output_;
  std::string flat_;   // the output, copied out once to be cut into datagrams
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_UDP_H_
