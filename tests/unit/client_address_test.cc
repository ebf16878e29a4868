// A connection's packed peer address formats as memcached's `stats conns`
// and watch connevents show it.
#include "daemon/client_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace herdless {
namespace {

ClientAddress V4(const char* ip, uint16_t port) {
  struct sockaddr_in in;
  std::memset(&in, 0, sizeof(in));
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  EXPECT_EQ(inet_pton(AF_INET, ip, &in.sin_addr), 1);
  return ClientAddress(reinterpret_cast<struct sockaddr*>(&in));
}

ClientAddress V6(const char* ip, uint16_t port) {
  struct sockaddr_in6 in6;
  std::memset(&in6, 0, sizeof(in6));
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  EXPECT_EQ(inet_pton(AF_INET6, ip, &in6.sin6_addr), 1);
  return ClientAddress(reinterpret_cast<struct sockaddr*>(&in6));
}

TEST(ClientAddressTest, FormatsAsMemcachedDoes) {
  const ClientAddress v4 = V4("255.255.255.255", 65535);
  EXPECT_EQ(v4.Text(), "tcp:255.255.255.255:65535");
  EXPECT_EQ(v4.Host(), "255.255.255.255");
  EXPECT_EQ(v4.port(), 65535);
  EXPECT_FALSE(v4.is_unix());
  EXPECT_EQ(V4("127.0.0.1", 0).Text(), "tcp:127.0.0.1:0");

  const ClientAddress v6 = V6("fe80::1:2", 40000);
  EXPECT_EQ(v6.Text(), "tcp6:[fe80::1:2]:40000");
  EXPECT_EQ(v6.Host(), "fe80::1:2");
  EXPECT_EQ(v6.port(), 40000);
}

TEST(ClientAddressTest, AUnixPeerKeepsOnlyItsFamily) {
  struct sockaddr_un un;
  std::memset(&un, 0, sizeof(un));
  un.sun_family = AF_UNIX;
  std::strcpy(un.sun_path, "/tmp/client.sock");
  const ClientAddress peer(reinterpret_cast<struct sockaddr*>(&un));
  EXPECT_TRUE(peer.is_unix());
  EXPECT_EQ(peer.Text(), "unix:");
  EXPECT_EQ(peer.Host(), "");
  EXPECT_EQ(peer.port(), 0);
  // A listener's or a local end's text keeps the path.
  EXPECT_EQ(AddressText(reinterpret_cast<struct sockaddr*>(&un)), "unix:/tmp/client.sock");
}

TEST(ClientAddressTest, LocalAddressTextIsTheSocketsOwnEnd) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_in in;
  std::memset(&in, 0, sizeof(in));
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr*>(&in), sizeof(in)), 0);
  socklen_t len = sizeof(in);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<struct sockaddr*>(&in), &len), 0);
  EXPECT_EQ(LocalAddressText(fd), "tcp:127.0.0.1:" + std::to_string(ntohs(in.sin_port)));
  close(fd);
  EXPECT_EQ(LocalAddressText(fd), "");   // closed: getsockname fails
}

}  // namespace
}  // namespace herdless
