// WarmPeers: one worker's client of the warm peers (-o warm_peer): memcached
// or herdless servers, over TCP or a unix socket, in the text protocol. A
// fetch asks the peers in their listed order (`mg <key> v f t c`, or `gets
// <key>` for a peer that answers mg with ERROR) until one has the value, and
// reports a hit (value, flags, remaining TTL), else the first stale value a
// peer had (protocol/peer_reply.h), else a miss, an error or a timeout
// (timeout_ms for the whole fetch). An invalidation sends `ring forget <key>`
// (or `delete <key>` to a peer that answers that with an error: a memcached) to one peer and reports whether the peer confirmed it
// (DELETED / NOT_FOUND) within timeout_ms; it travels on the connection the fetches use, so a later
// fetch from this worker reaches that peer after it. Non-blocking, on the
// worker's loop: one connection per peer, requests pipelined on it; a peer
// that times out or fails is disconnected and skipped for kPeerRestMs.
// Worker thread only.
#ifndef HERDLESS_DAEMON_WARM_PEER_H_
#define HERDLESS_DAEMON_WARM_PEER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct event;
struct event_base;

namespace herdless {

// One peer: "host:port" (a numeric IPv4 or IPv6 address, "[v6]:port", or a
// name resolved once at start), or a unix socket path (starting with '/').
struct PeerAddress {
  std::string text;    // as given
  std::string host;    // "" for a unix socket
  int port = 0;
  std::string path;    // unix socket
};

// Parses -o warm_peer's list ("a:1;b:2;/run/m.sock"). False with *error.
bool ParsePeerList(std::string_view list, std::vector<PeerAddress>* out, std::string* error);

struct WarmResult {
  enum class Kind : uint8_t {
    kHit, kStale /* a value stale or being recomputed there */, kMiss, kTimeout, kError,
    kDeleted /* an invalidation confirmed */
  };
  Kind kind = Kind::kMiss;
  std::string value;
  uint32_t flags = 0;
  int64_t ttl_s = -1;      // seconds left at the peer, -1 = no expiry (kStale: <= 0 once expired)
  bool ttl_known = true;   // false: the peer spoke only gets (no TTL)
  bool stale = false;      // kMiss: a peer held only a stub being recomputed (W, Z)
};

class WarmPeers {
 public:
  static constexpr int kPeerRestMs = 1000;    // a failed peer is skipped this long
  static constexpr size_t kMaxInFlight = 256;  // fetches per worker
  static constexpr size_t kMaxInvalidations = 4096;  // invalidations under way per worker
  using Done = std::function<void(const WarmResult&)>;

  // `max_value`: the largest value accepted (item_size_max).
  WarmPeers(event_base* base, std::vector<PeerAddress> peers, uint32_t timeout_ms, size_t max_value);
  ~WarmPeers();
  WarmPeers(const WarmPeers&) = delete;
  WarmPeers& operator=(const WarmPeers&) = delete;

  // Starts a fetch of `key` (a WarmableKey); `done` runs once, later, on the
  // loop (never inside Fetch). Returns its id for Cancel, or 0 when refused
  // (kMaxInFlight fetches under way: `done` never runs).
  // `only_peer` >= 0: ask that peer (an index into the list) and no other.
  uint64_t Fetch(std::string_view key, Done done, int only_peer = -1);
  // Forgets a fetch (its reader went away): `done` never runs; a peer's lease
  // its reply hands over is still given back.
  void Cancel(uint64_t id);
  // Sends `delete <key>` to peer `peer`; `done` runs once, later, on the loop:
  // kDeleted when the peer confirmed it, else kError or kTimeout. False when
  // refused (kMaxInvalidations under way: `done` never runs).
  bool Invalidate(std::string_view key, int peer, Done done);
  size_t peer_count() const { return peers_.size(); }

 private:
  struct Peer;
  struct Pending;
  static void OnPeerEvent(int fd, short what, void* arg);
  static void OnTimer(int fd, short what, void* arg);

  uint64_t Start(std::string_view key, Done done, size_t first, size_t end, bool invalidation);
  void Ask(Pending* p);                 // send to p->peer, or the next live peer
  bool Connect(Peer* peer);
  void Send(Peer* peer, Pending* p);
  void OnReadable(Peer* peer);
  void OnWritable(Peer* peer);
  bool ParseReplies(Peer* peer);        // false: the peer spoke nonsense
  void Reset(Peer* peer);               // disconnect; its pending fetches go on to the next peer
  void GiveLeaseBack(Peer* peer, const std::string& key, uint64_t token);   // a lease a fetch won there
  void Answered(Peer* peer, WarmResult&& r, bool error_line);
  void Finish(Pending* p, WarmResult&& r);
  void FinishSoon(Pending* p, WarmResult&& r);

  event_base* const base_;
  const uint32_t timeout_ms_;
  const size_t max_value_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_;
  uint64_t next_id_ = 1;
  size_t invalidations_ = 0;   // of pending_
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_WARM_PEER_H_
