#include "daemon/client_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

namespace herdless {

ClientAddress::ClientAddress(const struct sockaddr* sa) : family_(sa->sa_family) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const struct sockaddr_in*>(sa);
    port_ = ntohs(in->sin_port);
    std::memcpy(addr_, &in->sin_addr, sizeof(in->sin_addr));
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(sa);
    port_ = ntohs(in6->sin6_port);
    std::memcpy(addr_, &in6->sin6_addr, sizeof(in6->sin6_addr));
  }
}

std::string ClientAddress::Host() const {
  char host[INET6_ADDRSTRLEN] = "";
  if (family_ == AF_INET || family_ == AF_INET6) inet_ntop(family_, addr_, host, sizeof(host));
  return host;
}

std::string ClientAddress::Text() const {
  switch (family_) {
    case AF_INET: return "tcp:" + Host() + ":" + std::to_string(port_);
    case AF_INET6: return "tcp6:[" + Host() + "]:" + std::to_string(port_);
    case AF_UNIX: return "unix:";
    default: return "<AF " + std::to_string(family_) + ">";
  }
}

std::string AddressText(const struct sockaddr* sa) {
  if (sa->sa_family == AF_UNIX) {
    return std::string("unix:") + reinterpret_cast<const struct sockaddr_un*>(sa)->sun_path;
  }
  return ClientAddress(sa).Text();
}

std::string LocalAddressText(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) != 0) return "";
  return AddressText(reinterpret_cast<struct sockaddr*>(&ss));
}

}  // namespace herdless
