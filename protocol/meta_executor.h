// Meta command execution (mg ms md ma mn me): applies a parsed meta Request to
// the ItemStore and writes memcached 1.6's meta replies (HD/VA/EN/NS/EX/NF/MN/ME
// with return flags in request order, then Z, X, W). Called by Executor.
#ifndef HERDLESS_PROTOCOL_META_EXECUTOR_H_
#define HERDLESS_PROTOCOL_META_EXECUTOR_H_

#include "protocol/reply.h"
#include "protocol/watch.h"
#include "protocol/request.h"
#include "protocol/thread_stats.h"
#include "protocol/warm.h"
#include "storage/item_store.h"

namespace herdless {

// `watch`, when given, logs mg's fetch and ms's store (protocol/watch.h).
// `warm`, when given, may divert an mg that wins a miss's lease to the peer
// (protocol/warm.h), into `outcome`. `park`, with `outcome`: an mg of a value
// on flash (-o ext_path) parks on it until it is fetched. `key_hash`: the hash
// ItemStore::Prefetch returned for req.key (every command given one key uses it),
// 0 = not known.
void ExecuteMeta(ItemStore* store, ThreadStats* stats, const Request& req, ReplyBuffer* out,
                 const WatchContext* watch = nullptr, WarmGate* warm = nullptr,
                 ProcessOutcome* outcome = nullptr, const WaitTicket* park = nullptr,
                 uint64_t key_hash = 0);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_META_EXECUTOR_H_
