// WarmInvalidations: keeps a warm peer's old copy of a key from coming back
// after a client changed the key here (-o warm_peer, -o ring;
// docs/deployment.md, "Deletes and warm-up"). The store reports each client
// store, delete and incr/decr (storage/peer_copies.h); for a key this node
// would warm (every listed peer; with a ring, the key's previous owner, for
// a key it owns) the worker that made the change sends `delete <key>` to
// that peer through its WarmPeers, until warm_for ends. A delete the peer
// did not confirm (down, slow, too many under way), or a change made while
// warm-up is stopped (`warm off`, warm_min_hit_ratio: nothing is sent then),
// refuses the key's warm fills for the rest of warm-up; a client's flush_all refuses every fill
// for that long. Counts warm_invalidations and warm_invalidations_failed.
// Changes and flushes count on a worker's thread (elsewhere: none is made).
#ifndef HERDLESS_DAEMON_WARM_INVALIDATIONS_H_
#define HERDLESS_DAEMON_WARM_INVALIDATIONS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "protocol/server_info.h"
#include "storage/item_store.h"

#include "storage/peer_copies.h"

namespace herdless {

class ClusterRing;
class Worker;

class WarmInvalidations final : public PeerCopies {
 public:
  // `ring`: nullptr without -o ring; `stopped`: set while warm-up is stopped;
  // `warm_until_s`: CoarseNowSeconds() when warm-up ends (warm_for), 0 = never.
  WarmInvalidations(const ClusterRing* ring, const std::atomic<bool>* stopped, int64_t warm_until_s)
      : ring_(ring), stopped_(stopped), warm_until_s_(warm_until_s) {}
  // The one for these settings (warm-up on), its hold-offs set in *store: a
  // change sent on is confirmed, or failed and its key refused, within
  // warm_timeout_ms; its key's fills are held off twice that meanwhile.
  static std::unique_ptr<WarmInvalidations> Configure(const ProtocolSettings& s, const ClusterRing* ring,
                                                      const std::atomic<bool>* stopped, StoreConfig* store);
  int64_t warm_until_s() const { return warm_until_s_; }

  // PeerCopies
  bool Changed(std::string_view key) override;
  void Flushed() override;

 private:
  bool Over() const;                     // warm-up has ended for good
  static int64_t RefusalSeconds(int64_t warm_until_s);   // the rest of warm-up
  static void Failed(Worker* worker, std::string_view key, int64_t warm_until_s);

  const ClusterRing* const ring_;
  const std::atomic<bool>* const stopped_;
  const int64_t warm_until_s_;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_WARM_INVALIDATIONS_H_
