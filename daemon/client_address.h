// ClientAddress: a connection's peer as accept(2) gave it, packed into 20
// bytes with no allocation (10,000s of idle connections each keep one) and
// formatted only when asked, in memcached's `stats conns` form. A unix
// socket's peer keeps only its family ("unix:"). AddressText is that form
// of any socket address (a unix path in full), LocalAddressText of a
// socket's own end.
#ifndef HERDLESS_DAEMON_CLIENT_ADDRESS_H_
#define HERDLESS_DAEMON_CLIENT_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace herdless {

class ClientAddress {
 public:
  explicit ClientAddress(const struct sockaddr* sa);

  bool is_unix() const { return family_ == AF_UNIX; }
  uint16_t port() const { return port_; }
  std::string Host() const;   // "127.0.0.1", "::1"; empty for a unix socket
  std::string Text() const;   // "tcp:127.0.0.1:40000", "tcp6:[::1]:40000", "unix:"

 private:
  uint16_t family_;
  uint16_t port_ = 0;        // host order
  uint8_t addr_[16] = {};    // in_addr or in6_addr, network order
};

// memcached's `stats conns` text: "tcp:127.0.0.1:11211", "tcp6:[::1]:11211", "unix:/path".
std::string AddressText(const struct sockaddr* sa);
std::string LocalAddressText(int fd);   // getsockname(fd)'s; empty when it fails

}  // namespace herdless

#endif  // HERDLESS_DAEMON_CLIENT_ADDRESS_H_
