#include "daemon/ring_return.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "daemon/log.h"
#include "protocol/cluster_ring.h"
#include "storage/item_store.h"

namespace herdless {

namespace {

int ConnectTo(const RingServer& s, int timeout_ms) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  auto ready = [&tv](int fd) {
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));   // also bounds connect()
    return fd;
  };
  if (s.host.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (s.listed.size() >= sizeof(addr.sun_path)) return -1;
    std::memcpy(addr.sun_path, s.listed.data(), s.listed.size());
    const int fd = ready(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    if (fd >= 0) close(fd);
    return -1;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(s.host.c_str(), std::to_string(s.port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ready(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// The lines of one `ring foreign` reply up to END; false on anything else.
bool AskForeign(int fd, const std::string& self, std::string* reply) {
  const std::string request = "ring foreign " + self + "\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return false;
  char buf[16384];
  for (;;) {
    if (reply->size() >= 5 && reply->compare(reply->size() - 5, 5, "END\r\n") == 0 &&
        (reply->size() == 5 || (*reply)[reply->size() - 6] == '\n')) {
      return true;
    }
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    reply->append(buf, static_cast<size_t>(n));
    if (reply->compare(0, 5, "ERROR") == 0 || reply->compare(0, 6, "CLIENT") == 0 ||
        reply->compare(0, 6, "SERVER") == 0) {
      return false;
    }
  }
}

}  // namespace

ReturnFigures ReturnToRing(const ClusterRing& ring, ItemStore* store, int timeout_ms) {
  ReturnFigures f;
  const std::vector<RingServer>& servers = ring.pool().servers;
  const std::string& self = servers[ring.self()].listed;
  for (size_t i = 0; i < servers.size(); i++) {
    if (static_cast<int>(i) == ring.self()) continue;
    const int fd = ConnectTo(servers[i], timeout_ms);
    std::string reply;
    const bool ok = fd >= 0 && AskForeign(fd, self, &reply);
    if (fd >= 0) close(fd);
    if (!ok) {
      f.silent++;
      continue;
    }
    f.asked++;
    size_t at = 0;
    while (at < reply.size()) {
      const size_t eol = reply.find("\r\n", at);
      if (eol == std::string::npos) break;
      const std::string_view line(reply.data() + at, eol - at);
      at = eol + 2;
      if (line == "OVERFLOW") {
        f.flushed = true;
      } else if (line.substr(0, 4) == "KEY ") {
        f.listed++;
        DeleteRequest del;
        del.key = line.substr(4);
        del.client = false;   // the server that listed it has the newer value: warm from it
        if (store->Delete(del) == DeleteStatus::kDeleted) f.dropped++;
      }
    }
  }
  if (f.flushed) store->FlushAll(0, /*client=*/false);
  return f;
}

void LogReturn(const ReturnFigures& f, int after_s) {
  Log(LogLevel::kNotice, "ring, %d s after start: %u servers asked (%u silent), %llu keys changed there, %llu copies dropped%s",
      after_s, f.asked, f.silent, static_cast<unsigned long long>(f.listed), static_cast<unsigned long long>(f.dropped),
      f.flushed ? ", a list overflowed: everything dropped" : "");
}

LaterRingReturns::LaterRingReturns(const ClusterRing* ring, ItemStore* store, int timeout_ms)
    : thread_([this, ring, store, timeout_ms] { Run(ring, store, timeout_ms); }) {}

LaterRingReturns::~LaterRingReturns() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

void LaterRingReturns::Run(const ClusterRing* ring, ItemStore* store, int timeout_ms) {
  const auto start = std::chrono::steady_clock::now();
  for (int after_s = 2; after_s <= 64; after_s *= 2) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_cv_.wait_until(lock, start + std::chrono::seconds(after_s), [this] { return stop_; })) return;
    }
    const ReturnFigures f = ReturnToRing(*ring, store, timeout_ms);
    if (f.listed != 0 || f.flushed) LogReturn(f, after_s);
  }
}

}  // namespace herdless
