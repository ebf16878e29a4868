// The replies a warm peer sends (daemon/warm_peer.h): one at a time from the
// front of what has been read, for `mg <key> v f t c` (VA <len> f<flags>
// t<ttl> c<cas> [W Z X] / EN), for `gets <key>` (VALUE <key> <flags> <len> <cas>
// ... END / END) and for `delete <key>` (DELETED / NOT_FOUND), or an error line.
// A value marked X, or W or Z with bytes, is the peer's stale value (kStale);
// W or Z on an empty value is a stub waiting for one. A pure function of the bytes: no socket.
#ifndef HERDLESS_PROTOCOL_PEER_REPLY_H_
#define HERDLESS_PROTOCOL_PEER_REPLY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herdless {

struct PeerReply {
  enum class Kind : uint8_t {
    kHit,        // a value, fresh at the peer
    kStale,      // a value the peer holds stale (X) or is recomputing (W, Z): ttl_s <= 0 if expired
    kMiss,       // EN / END, a stub (W or Z, no bytes), or a value whose TTL is 0
    kError,      // an error line (CLIENT_ERROR, SERVER_ERROR, anything else)
    kUnknownCommand,   // "ERROR": the peer has no such command (no meta: use gets)
    kDeleted,    // DELETED / NOT_FOUND: the key is gone there
  };
  Kind kind = Kind::kMiss;
  std::string value;
  uint32_t flags = 0;
  int64_t ttl_s = -1;      // seconds left, -1 = no expiry
  bool ttl_known = true;   // false for a gets reply
  bool stale = false;      // kStale, or kMiss of a stub (W, Z)
  bool won = false;        // W: the peer handed this client the key's lease there
  uint64_t cas = 0;        // the c flag's token (0: none)
};

enum class PeerParse : uint8_t {
  kNeedMore,   // no whole reply yet
  kDone,       // *reply holds one, *used bytes of `in` made it
  kBad,        // not a reply this client could have asked for: drop the connection
};

// `max_value`: the largest value accepted (larger: kBad).
PeerParse ParsePeerReply(std::string_view in, size_t max_value, PeerReply* reply, size_t* used);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_PEER_REPLY_H_
