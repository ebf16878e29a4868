// StoreStats: the store's counters, summed over its shards on demand
// (ItemStore::Stats) and printed by the protocol's `stats` groups by field
// name. Each family is one list below, in memcached's print order where it
// has one; the fields, the sum over the shards and `stats reset` all derive
// from the lists, so a new counter is one line in one list (and its count
// where it happens). Knows no wire format.
#ifndef HERDLESS_STORAGE_STORE_STATS_H_
#define HERDLESS_STORAGE_STORE_STATS_H_

#include <algorithm>
#include <cstdint>

#include "storage/item.h"

namespace herdless {

// What the store holds now, and the figures of its memory pool, queues and
// crawler (Stats() fills each from where it lives; stats reset leaves them).
#define HERDLESS_STORE_GAUGES(X)                                                          \
  X(bytes)              /* memory charged for items */                                   \
  X(curr_items)                                                                           \
  X(total_malloced)     /* what the -m budget counts: slab pages + malloc'd items */      \
  X(hash_buckets)       /* index slots (8 per bucket) in the newest tables */             \
  X(hash_bytes)         /* the index's memory */                                          \
  X(curr_leases)                                                                          \
  X(hot_keys)           /* items counted hot (read rate >= refresh_hot) now */            \
  X(rated_keys)         /* items carrying a read-rate estimate now */                     \
  X(curr_foreign_items) /* linked items whose key is foreign (StoreConfig::foreign) */    \
  /* Segments and the eviction policy (storage/eviction.h). */                            \
  X(segment_size)                                                                         \
  X(segments_small)     /* in the small queue (open one included) */                      \
  X(segments_main)                                                                        \
  X(jumbo_items)        /* items in a segment of their own */                             \
  X(segments_recycled)  /* fixed segments back in the free pool (evicted or emptied) */   \
  X(segments_free)      /* fixed segments mapped and free: any size class takes them */   \
  X(evicted_segments)   /* segments the evictor walked (stats reset zeroes it) */         \
  X(crawler_passes)     /* times the background crawl started over (reset zeroes it) */

// Events each shard counts as they happen: summed over the shards, zeroed by
// stats reset. memcached's first, in its `stats` order, then herdless's.
#define HERDLESS_STORE_COUNTERS(X)                                                        \
  X(total_items)                                                                          \
  X(expired_unfetched)  /* reclaimed (by eviction or the crawl) never read */             \
  X(evicted_unfetched)                                                                    \
  X(evicted_active)     /* evicted although read since the last eviction decision */      \
  X(evictions)                                                                            \
  /* Expired or flushed items whose memory eviction reused (still linked in the   */      \
  /* segment being evicted), as memcached's reclaimed. Items that expire on       */      \
  /* access count nowhere here (the protocol's get_expired); the expiry crawl's   */      \
  /* count as crawler_reclaimed.                                                  */      \
  X(reclaimed)                                                                            \
  X(crawler_reclaimed)  /* expired items the expiry crawl removed */                      \
  X(crawler_items_checked)  /* items the expiry crawl looked at */                        \
  X(lease_grants)                                                                         \
  X(lease_fulfilled)                                                                      \
  X(lease_timeouts)                                                                       \
  X(lease_sets_refused)                                                                   \
  X(xfetch_grants)                                                                        \
  X(refresh_grants)     /* leases won in a refresh-ahead window (early refreshes) */      \
  X(stale_hits)                                                                           \
  X(moved_to_main)      /* items copied from the small queue to the main one */           \
  X(main_reinserted)    /* items read while in the main queue, copied to its tail */      \
  X(ghost_hits)         /* keys stored again while their ghost was fresh */            \
  HERDLESS_FLASH_COUNTERS(X)

// The flash tier's reads (-o ext_path), memcached's names and order: fetches
// started, reads of a stub that could not wait for one, recaches that found
// no memory, values brought back to RAM, stubs whose value was gone or
// damaged. Printed after get_flushed, only with ext_path.
#define HERDLESS_FLASH_COUNTERS(X)                                                        \
  X(get_extstore) X(get_aborted_extstore) X(get_oom_extstore) X(recache_from_extstore)    \
  X(miss_from_extstore) X(badcrc_from_extstore)

// Per memcached slab class (item size as memcached would count it, see
// MemcachedSlabClass), what is linked now: summed, kept by stats reset.
#define HERDLESS_CLASS_GAUGES(X)                                                          \
  X(items, Sum)                                                                           \
  X(bytes, Sum)          /* herdless's bytes for them */                                  \
  X(mem_requested, Sum)  /* memcached's bytes for them */

// Per class, events: `stats items` order, then `stats slabs` order (memcached's
// per-class command counters: a store of an item of this class, a read or
// touch that found one, and so on). Combined over the shards by Sum, or Max
// for a time; zeroed by stats reset.
#define HERDLESS_CLASS_COUNTERS(X)                                                        \
  X(total_items, Sum)    /* stored */                                                     \
  X(evicted, Sum)                                                                         \
  X(evicted_nonzero, Sum)  /* evicted with a TTL */                                       \
  X(evicted_time, Max)   /* seconds since the last evicted item's last access */          \
  X(outofmemory, Sum)    /* stores refused for want of memory (new item's class) */       \
  X(reclaimed, Sum)                                                                       \
  X(expired_unfetched, Sum)                                                               \
  X(evicted_unfetched, Sum)                                                               \
  X(evicted_active, Sum)                                                                  \
  X(crawler_reclaimed, Sum)                                                               \
  X(crawler_items_checked, Sum)                                                           \
  X(get_hits, Sum)                                                                        \
  X(set_cmds, Sum)                                                                        \
  X(delete_hits, Sum)                                                                     \
  X(incr_hits, Sum)                                                                       \
  X(decr_hits, Sum)                                                                       \
  X(cas_hits, Sum)                                                                        \
  X(cas_badval, Sum)                                                                      \
  X(touch_hits, Sum)

#define HERDLESS_STAT_FIELD(name, ...) uint64_t name = 0;

struct StoreStats {
  HERDLESS_STORE_GAUGES(HERDLESS_STAT_FIELD)
  HERDLESS_STORE_COUNTERS(HERDLESS_STAT_FIELD)

  // Index 1..kMemcachedClasses.
  struct Class {
    HERDLESS_CLASS_GAUGES(HERDLESS_STAT_FIELD)
    HERDLESS_CLASS_COUNTERS(HERDLESS_STAT_FIELD)
  };
  Class classes[kMemcachedClasses + 1];

  // Adds a shard's counts: its counters and its classes (gauges and counters).
  void AddShard(const StoreStats& shard);
  // stats reset: the counters are zeroed; the classes' gauges stay.
  void ResetCounters();
};

#undef HERDLESS_STAT_FIELD

namespace store_stats_detail {
inline uint64_t Sum(uint64_t a, uint64_t b) { return a + b; }
inline uint64_t Max(uint64_t a, uint64_t b) { return std::max(a, b); }
}  // namespace store_stats_detail

inline void StoreStats::AddShard(const StoreStats& shard) {
  using store_stats_detail::Max;
  using store_stats_detail::Sum;
#define HERDLESS_STAT_ADD(name) name += shard.name;
  HERDLESS_STORE_COUNTERS(HERDLESS_STAT_ADD)
#undef HERDLESS_STAT_ADD
  for (int k = 1; k <= kMemcachedClasses; k++) {
    Class& to = classes[k];
    const Class& from = shard.classes[k];
#define HERDLESS_STAT_COMBINE(name, combine) to.name = combine(to.name, from.name);
    HERDLESS_CLASS_GAUGES(HERDLESS_STAT_COMBINE)
    HERDLESS_CLASS_COUNTERS(HERDLESS_STAT_COMBINE)
#undef HERDLESS_STAT_COMBINE
  }
}

inline void StoreStats::ResetCounters() {
#define HERDLESS_STAT_ZERO(name) name = 0;
  HERDLESS_STORE_COUNTERS(HERDLESS_STAT_ZERO)
#undef HERDLESS_STAT_ZERO
  for (Class& c : classes) {
#define HERDLESS_CLASS_STAT_ZERO(name, combine) c.name = 0;
    HERDLESS_CLASS_COUNTERS(HERDLESS_CLASS_STAT_ZERO)
#undef HERDLESS_CLASS_STAT_ZERO
  }
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_STORE_STATS_H_
