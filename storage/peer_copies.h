// PeerCopies: the copies of this node's keys that its warm peers hold (-o
// warm_peer, -o ring; daemon/warm_invalidations.h implements it). A peer's
// copy is older than any change a client makes here, so the store reports
// each such change (a store, a delete, incr/decr: Changed) and each client
// flush (Flushed) for the peer's copy to be invalidated before warm-up could
// copy it back. Called outside the store's locks, on the calling thread; may
// call ItemStore::RefuseWarmFills, nothing else of the store.
#ifndef HERDLESS_STORAGE_PEER_COPIES_H_
#define HERDLESS_STORAGE_PEER_COPIES_H_

#include <string_view>

namespace herdless {

class PeerCopies {
 public:
  // True when the change was sent on to a peer: the store then refuses warm
  // fills of the key for StoreConfig::forwarded_holdoff_ms, while it travels.
  virtual bool Changed(std::string_view key) = 0;
  virtual void Flushed() = 0;

 protected:
  ~PeerCopies() = default;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_PEER_COPIES_H_
