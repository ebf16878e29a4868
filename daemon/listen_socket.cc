#include "daemon/listen_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/log.h"

namespace herdless {

namespace {

constexpr int kUdpSendBuffer = 64 << 20;

}  // namespace

int OpenListener(const struct addrinfo* ai, int backlog, uint32_t cookie_id) {
  const bool udp = ai->ai_socktype == SOCK_DGRAM;
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return -1;
  int on = 1;
  if (cookie_id != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &cookie_id, sizeof(cookie_id)) != 0) {
    Log(LogLevel::kWarning, "setsockopt(SO_MARK %u): %s", cookie_id, std::strerror(errno));
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (udp) {
    // Room for replies of many datagrams (memcached's maximize_sndbuf; the
    // kernel caps it at net.core.wmem_max).
    int size = kUdpSendBuffer;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  } else {
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));   // inherited by accepted sockets
  }
  if (ai->ai_family == AF_INET6) {
    // Lets "::" and "0.0.0.0" both bind, as memcached does.
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  }
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || (!udp && listen(fd, backlog) != 0)) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace herdless
