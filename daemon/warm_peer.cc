#include "daemon/warm_peer.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "protocol/numbers.h"
#include "protocol/peer_reply.h"

namespace herdless {

namespace {

int64_t MonotonicMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

bool ParsePeerList(std::string_view list, std::vector<PeerAddress>* out, std::string* error) {
  out->clear();
  size_t i = 0;
  while (i <= list.size()) {
    const size_t j = list.find(';', i);
    const std::string_view entry = list.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    i = j == std::string_view::npos ? list.size() + 1 : j + 1;
    if (entry.empty()) continue;
    PeerAddress a;
    a.text = std::string(entry);
    if (entry[0] == '/') {
      if (entry.size() >= sizeof(sockaddr_un::sun_path)) {
        *error = "warm_peer: unix socket path too long: " + a.text;
        return false;
      }
      a.path = a.text;
      out->push_back(std::move(a));
      continue;
    }
    const size_t colon = entry.rfind(':');
    int64_t port = 0;
    if (colon == std::string_view::npos || !ParseWholeNumber(entry.substr(colon + 1), &port) || port < 1 ||
        port > 65535 || colon == 0) {
      *error = "warm_peer: expected HOST:PORT or /unix/path, got " + a.text;
      return false;
    }
    std::string_view host = entry.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    a.host = std::string(host);
    a.port = static_cast<int>(port);
    out->push_back(std::move(a));
  }
  if (out->empty()) {
    *error = "warm_peer: no peer given";
    return false;
  }
  return true;
}

struct WarmPeers::Peer {
  WarmPeers* owner = nullptr;
  PeerAddress address;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  bool resolved = false;
  int fd = -1;
  event* read_event = nullptr;
  event* write_event = nullptr;
  bool connecting = false;
  bool meta = true;             // false once it answered mg with ERROR
  bool forget = true;           // false once it answered `ring forget` with an error
  int64_t rest_until_ms = 0;
  std::string out;
  std::string in;
  // What went out, in order: the request's id (0: a reply to ignore) and, for
  // a fetch, its key, kept here so that a lease won by a fetch forgotten
  // meanwhile (Cancel, its reader gone) still goes back.
  struct Asked {
    uint64_t id;
    std::string fetch_key;
  };
  std::deque<Asked> asked;
};

struct WarmPeers::Pending {
  WarmPeers* owner = nullptr;
  uint64_t id = 0;
  std::string key;
  Done done;
  size_t peer = 0;              // the peer asked now (or next)
  size_t end = 0;               // ... up to (not including) this one
  bool saw_miss = false;        // a peer answered: no such key
  bool saw_stale = false;       // ... or a stub being recomputed (W, Z)
  WarmResult stale;             // the first stale value a peer had (kind kStale), if any
  bool has_stale() const { return stale.kind == WarmResult::Kind::kStale; }
  bool invalidation = false;    // `ring forget` / `delete <key>`, not a fetch
  bool asked_forget = false;    // ... sent as `ring forget`
  event* timer = nullptr;
  bool ready = false;           // `result` is final: deliver it on the timer
  WarmResult result;
};

WarmPeers::WarmPeers(event_base* base, std::vector<PeerAddress> peers, uint32_t timeout_ms, size_t max_value)
    : base_(base), timeout_ms_(timeout_ms), max_value_(max_value) {
  for (PeerAddress& a : peers) {
    auto peer = std::make_unique<Peer>();
    peer->owner = this;
    if (!a.path.empty()) {
      sockaddr_un* un = reinterpret_cast<sockaddr_un*>(&peer->addr);
      un->sun_family = AF_UNIX;
      std::memcpy(un->sun_path, a.path.data(), a.path.size());
      peer->addr_len = sizeof(sockaddr_un);
      peer->resolved = true;
    } else {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const std::string port = std::to_string(a.port);
      if (getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res) == 0 && res != nullptr) {
        std::memcpy(&peer->addr, res->ai_addr, res->ai_addrlen);
        peer->addr_len = res->ai_addrlen;
        peer->resolved = true;
      }
      if (res != nullptr) freeaddrinfo(res);
    }
    peer->address = std::move(a);
    peers_.push_back(std::move(peer));
  }
}

WarmPeers::~WarmPeers() {
  for (auto& [id, p] : pending_) {
    if (p->timer != nullptr) event_free(p->timer);
  }
  for (auto& peer : peers_) {
    if (peer->read_event != nullptr) event_free(peer->read_event);
    if (peer->write_event != nullptr) event_free(peer->write_event);
    if (peer->fd >= 0) close(peer->fd);
  }
}

uint64_t WarmPeers::Fetch(std::string_view key, Done done, int only_peer) {
  if (pending_.size() - invalidations_ >= kMaxInFlight) return 0;
  const size_t first = only_peer >= 0 ? static_cast<size_t>(only_peer) : 0;
  return Start(key, std::move(done), first, only_peer >= 0 ? first + 1 : peers_.size(), false);
}

bool WarmPeers::Invalidate(std::string_view key, int peer, Done done) {
  if (invalidations_ >= kMaxInvalidations || peer < 0) return false;
  return Start(key, std::move(done), static_cast<size_t>(peer), static_cast<size_t>(peer) + 1, true) != 0;
}

uint64_t WarmPeers::Start(std::string_view key, Done done, size_t first, size_t end, bool invalidation) {
  auto owned = std::make_unique<Pending>();
  Pending* p = owned.get();
  p->owner = this;
  p->id = next_id_++;
  p->key = std::string(key);
  p->done = std::move(done);
  p->peer = first;
  p->end = end;
  p->invalidation = invalidation;
  p->timer = event_new(base_, -1, 0, &WarmPeers::OnTimer, p);
  if (p->timer == nullptr) return 0;
  struct timeval tv = {static_cast<time_t>(timeout_ms_ / 1000),
                       static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000)};
  event_add(p->timer, &tv);
  if (invalidation) invalidations_++;
  pending_.emplace(p->id, std::move(owned));
  Ask(p);
  return p->id;
}

void WarmPeers::Cancel(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  if (it->second->timer != nullptr) event_free(it->second->timer);
  if (it->second->invalidation) invalidations_--;
  pending_.erase(it);   // a reply still owed is read when it comes (GiveLeaseBack)
}

void WarmPeers::Ask(Pending* p) {
  const int64_t now = MonotonicMs();
  for (; p->peer < p->end && p->peer < peers_.size(); p->peer++) {
    Peer* peer = peers_[p->peer].get();
    if (peer->rest_until_ms > now || !peer->resolved) continue;
    if (peer->fd < 0 && !Connect(peer)) {
      peer->rest_until_ms = now + kPeerRestMs;
      continue;
    }
    Send(peer, p);
    return;
  }
  WarmResult r;
  if (p->has_stale()) {
    r = std::move(p->stale);   // no peer had it fresh
  } else {
    r.kind = p->saw_miss ? WarmResult::Kind::kMiss : WarmResult::Kind::kError;
    r.stale = p->saw_stale;
  }
  FinishSoon(p, std::move(r));
}

bool WarmPeers::Connect(Peer* peer) {
  const int fd = socket(peer->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  if (peer->addr.ss_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer->addr), peer->addr_len) != 0 && errno != EINPROGRESS) {
    close(fd);
    return false;
  }
  peer->read_event = event_new(base_, fd, EV_READ | EV_PERSIST, &WarmPeers::OnPeerEvent, peer);
  peer->write_event = event_new(base_, fd, EV_WRITE, &WarmPeers::OnPeerEvent, peer);
  if (peer->read_event == nullptr || peer->write_event == nullptr) {
    if (peer->read_event != nullptr) event_free(peer->read_event);
    if (peer->write_event != nullptr) event_free(peer->write_event);
    peer->read_event = peer->write_event = nullptr;
    close(fd);
    return false;
  }
  peer->fd = fd;
  peer->connecting = true;
  event_add(peer->read_event, nullptr);
  event_add(peer->write_event, nullptr);
  return true;
}

void WarmPeers::Send(Peer* peer, Pending* p) {
  p->asked_forget = p->invalidation && peer->forget;
  peer->out += p->invalidation ? (p->asked_forget ? "ring forget " : "delete ") : peer->meta ? "mg " : "gets ";
  peer->out += p->key;
  peer->out += !p->invalidation && peer->meta ? " v f t c\r\n" : "\r\n";
  peer->asked.push_back({p->id, p->invalidation ? std::string() : p->key});
  if (!peer->connecting) OnWritable(peer);
}

void WarmPeers::OnPeerEvent(int, short what, void* arg) {
  Peer* peer = static_cast<Peer*>(arg);
  WarmPeers* self = peer->owner;
  if (what & EV_WRITE) {
    self->OnWritable(peer);
    if (peer->fd < 0) return;
  }
  if (what & EV_READ) self->OnReadable(peer);
}

void WarmPeers::OnWritable(Peer* peer) {
  if (peer->connecting) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(peer->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      Reset(peer);
      return;
    }
    peer->connecting = false;
  }
  while (!peer->out.empty()) {
    const ssize_t n = send(peer->fd, peer->out.data(), peer->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      peer->out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    Reset(peer);
    return;
  }
  if (!peer->out.empty()) event_add(peer->write_event, nullptr);
}

void WarmPeers::OnReadable(Peer* peer) {
  char buf[16384];
  for (;;) {
    const ssize_t n = recv(peer->fd, buf, sizeof(buf), 0);
    if (n > 0) {
      peer->in.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    Reset(peer);   // closed or failed
    return;
  }
  if (!ParseReplies(peer)) Reset(peer);
}

// One reply at a time from the front of peer->in (protocol/peer_reply.h).
bool WarmPeers::ParseReplies(Peer* peer) {
  while (peer->fd >= 0 && !peer->in.empty()) {
    if (peer->asked.empty()) return false;   // a reply nobody asked for
    PeerReply reply;
    size_t used = 0;
    switch (ParsePeerReply(peer->in, max_value_, &reply, &used)) {
      case PeerParse::kNeedMore: return true;
      case PeerParse::kBad: return false;
      case PeerParse::kDone: break;
    }
    peer->in.erase(0, used);
    std::string won_key;   // a fetch's key whose lease the peer handed it
    if (reply.won && reply.cas != 0) won_key = std::move(peer->asked.front().fetch_key);
    WarmResult r;
    switch (reply.kind) {
      case PeerReply::Kind::kHit: r.kind = WarmResult::Kind::kHit; break;
      case PeerReply::Kind::kStale: r.kind = WarmResult::Kind::kStale; break;
      case PeerReply::Kind::kMiss: r.kind = WarmResult::Kind::kMiss; break;
      case PeerReply::Kind::kDeleted: r.kind = WarmResult::Kind::kDeleted; break;
      default: r.kind = WarmResult::Kind::kError; break;
    }
    r.value = std::move(reply.value);
    r.flags = reply.flags;
    r.ttl_s = reply.ttl_s;
    r.ttl_known = reply.ttl_known;
    r.stale = reply.stale;
    Answered(peer, std::move(r), reply.kind == PeerReply::Kind::kUnknownCommand);
    if (!won_key.empty() && peer->fd >= 0) GiveLeaseBack(peer, won_key, reply.cas);
  }
  return true;
}

// A peer that holds the key stale handed this fetch its lease (W), which
// only a reader there should have: this node recomputes for its own readers,
// never for the peer's, so the lease goes back at once with memcached's
// `md <key> I C<token>` (the value stays stale there, the token is dropped,
// so the peer's next reader wins; a value replaced meanwhile is left alone:
// EX), also for a fetch cancelled before the reply came. Its reply is read
// and ignored (id 0 is never a fetch's). A fetch that timed out closed its
// connection, which ends a herdless peer's leases of it.
void WarmPeers::GiveLeaseBack(Peer* peer, const std::string& key, uint64_t token) {
  peer->out += "md ";
  peer->out += key;
  peer->out += " I C" + std::to_string(token) + "\r\n";
  peer->asked.push_back({0, std::string()});
  if (!peer->connecting) OnWritable(peer);
}

void WarmPeers::Answered(Peer* peer, WarmResult&& r, bool error_line) {
  const uint64_t id = peer->asked.front().id;
  peer->asked.pop_front();
  auto it = pending_.find(id);
  if (it == pending_.end()) return;   // cancelled or timed out meanwhile
  Pending* p = it->second.get();
  if (p->invalidation) {
    if (r.kind != WarmResult::Kind::kDeleted && p->asked_forget) {
      peer->forget = false;   // not a herdless (a memcached answers ERROR): a plain delete
      Send(peer, p);
      return;
    }
    if (r.kind != WarmResult::Kind::kDeleted) r.kind = WarmResult::Kind::kError;
    Finish(p, std::move(r));
    return;
  }
  if (r.kind == WarmResult::Kind::kDeleted) r.kind = WarmResult::Kind::kError;   // not an answer to mg
  if (error_line && peer->meta) {
    peer->meta = false;   // no meta commands there: ask again with gets
    Send(peer, p);
    return;
  }
  if (r.kind == WarmResult::Kind::kHit) {
    Finish(p, std::move(r));
    return;
  }
  if (r.kind == WarmResult::Kind::kStale && !p->has_stale()) {
    p->stale = std::move(r);   // kept in case no later peer has it fresh
  } else if (r.kind == WarmResult::Kind::kMiss) {
    p->saw_miss = true;
    if (r.stale) p->saw_stale = true;
  }
  p->peer++;
  Ask(p);
}

void WarmPeers::Reset(Peer* peer) {
  if (peer->read_event != nullptr) event_free(peer->read_event);
  if (peer->write_event != nullptr) event_free(peer->write_event);
  peer->read_event = peer->write_event = nullptr;
  if (peer->fd >= 0) close(peer->fd);
  peer->fd = -1;
  peer->connecting = false;
  peer->in.clear();
  peer->out.clear();
  peer->rest_until_ms = MonotonicMs() + kPeerRestMs;
  std::deque<Peer::Asked> asked;
  asked.swap(peer->asked);
  for (const Peer::Asked& a : asked) {
    auto it = pending_.find(a.id);
    if (it == pending_.end() || it->second->ready) continue;
    it->second->peer++;
    Ask(it->second.get());
  }
}

void WarmPeers::Finish(Pending* p, WarmResult&& r) {
  Done done = std::move(p->done);
  const WarmResult result = std::move(r);   // r may be p->result
  if (p->timer != nullptr) event_free(p->timer);
  if (p->invalidation) invalidations_--;
  pending_.erase(p->id);   // frees p
  done(result);
}

void WarmPeers::FinishSoon(Pending* p, WarmResult&& r) {
  p->ready = true;
  p->result = std::move(r);
  event_active(p->timer, EV_TIMEOUT, 0);
}

void WarmPeers::OnTimer(int, short, void* arg) {
  Pending* p = static_cast<Pending*>(arg);
  WarmPeers* self = p->owner;
  if (p->ready) {
    self->Finish(p, std::move(p->result));
    return;
  }
  // The peer asked now is too slow: drop its connection (its other fetches
  // go on to the next peer) and give this reader up, with the stale value an
  // earlier peer had if any.
  const size_t asked_at = p->peer;
  WarmResult r;
  if (p->has_stale()) r = std::move(p->stale);
  else r.kind = WarmResult::Kind::kTimeout;
  self->Finish(p, std::move(r));
  if (asked_at < self->peers_.size() && self->peers_[asked_at]->fd >= 0) self->Reset(self->peers_[asked_at].get());
}

}  // namespace herdless
