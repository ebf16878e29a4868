// OpenListener: one listening TCP socket, or one bound UDP socket, for an
// address getaddrinfo found, with memcached's socket options (SO_REUSEADDR;
// TCP: SO_KEEPALIVE and TCP_NODELAY, inherited by accepted sockets; UDP: a
// large send buffer; IPv6: V6ONLY, so "::" and "0.0.0.0" both bind). A nonzero
// `cookie_id` (-o sock_cookie_id, memcached 1.6.45) marks it with SO_MARK for
// firewall rules; a mark the kernel refuses is logged and the socket kept.
#ifndef HERDLESS_DAEMON_LISTEN_SOCKET_H_
#define HERDLESS_DAEMON_LISTEN_SOCKET_H_

#include <netdb.h>

#include <cstdint>

namespace herdless {

// The socket (nonblocking, close-on-exec), or -1 with errno set.
int OpenListener(const struct addrinfo* ai, int backlog, uint32_t cookie_id);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_LISTEN_SOCKET_H_
