// The requests ItemStore serves (storage/item_store.h) and what it answers:
// a read and its options, a store, a delete, an incr/decr, a restore from a
// snapshot. Plain values; every string_view is the caller's and needs to
// live only for the call, except ReadResult::value, which `item` keeps.
// Fields say what storage does; which protocol flag asks for it is the
// protocol's business (protocol/meta_executor.cc).
#ifndef HERDLESS_STORAGE_STORE_REQUESTS_H_
#define HERDLESS_STORAGE_STORE_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "storage/item.h"
#include "storage/lease.h"

namespace herdless {

struct WaitTicket;

// How a read treats stale items and misses.
enum class ReadKind : uint8_t {
  kClassic,     // get/gets/gat/gats: stale = miss, placeholders = miss, no leases
  kClassicLease,// get/gets/gat/gats in classic_stampede stale|wait mode
  kMeta,        // meta get: stale values served, leases won and held, as memcached's
  kLeaseGet,    // mcrouter lease-get
};

struct ReadOptions {
  ReadKind kind = ReadKind::kClassic;
  bool bump = true;               // false: no LRU bump, not marked fetched
  bool has_touch = false;         // a new exptime on a hit (kClassicLease: only on
                                  // a fresh value this reader is given)
  int64_t touch_exptime = 0;
  bool create_on_miss = false;    // kMeta: a miss creates a 0-byte item that wins the lease
  int64_t create_exptime = 0;     // its exptime (touch_exptime with has_touch)
  uint64_t create_cas = 0;        // the created item's CAS (mg N with E), 0 = the counter's
  LeaseAsk lease;                 // what the lease decision may grant (storage/lease.h)
  // The lease decision judges the TTL after this read's touch; false
  // (default): the TTL the item had before it.
  bool judge_touched_ttl = false;
  // Classic wait mode: when the key has no value and another client holds its
  // lease, register this ticket under the shard lock (no wake-up can be lost
  // between the read and the park) and report parked. nullptr = never park.
  const WaitTicket* park = nullptr;
  // -o ext_path: when the key's value is on flash, register this ticket and
  // fetch the value (report parked; the re-run after the wake finds it in
  // RAM). nullptr: such a key reads as a miss.
  const WaitTicket* flash_park = nullptr;
  // false: the reader needs the metadata only (mg without v, a binary
  // touch): a value on flash is not fetched, ReadResult::value stays empty.
  bool value_wanted = true;
  // The lease (token) this reader already holds: a reader that went to a
  // warm peer and came back empty. While that lease is live the read wins it
  // again instead of finding it held. 0 = none.
  uint64_t held_lease = 0;
  // The key's hash as ItemStore::Prefetch returned it (the executor prefetched
  // this key while the request before it ran): not computed again. 0 = not known.
  uint64_t key_hash = 0;
  // false: a hit on an item already there leaves ReadResult's ttl_before,
  // ttl_after, fetched_before, seconds_since_access, frequency and
  // recompute_ms at their defaults (a classic get answers none of them; meta
  // flags and `me` do). A stub this read creates fills its TTLs either way.
  bool details = true;
};

enum class ReadStatus : uint8_t { kMiss, kHit };

struct ReadResult {
  ReadStatus status = ReadStatus::kMiss;
  ItemRef item;                   // set on kHit: keeps `value` readable (its bytes never change)
  std::string_view value;         // the value bytes (without "\r\n"), valid while `item` is held
  // Snapshot of the metadata taken under the lock (the header may change later).
  uint32_t client_flags = 0;
  uint64_t cas = 0;
  int64_t ttl_before = -1;        // remaining TTL in seconds before any touch, -1 = none
  int64_t ttl_after = -1;         // remaining TTL after the touch (== before without one)
  bool fetched_before = false;    // read since it was stored, before this read
  int64_t seconds_since_access = 0;  // before this read
  bool stale = false;             // invalidated, or expired within the stale grace
  LeaseVerdict lease = LeaseVerdict::kNone;
  bool lease_by_xfetch = false;
  bool lease_by_refresh = false;  // the win came from the refresh-ahead window
  bool created = false;           // this read created the item (create_on_miss)
  bool placeholder = false;       // the hit is a lease-only stub with no value
  bool binary_key = false;        // stored with StoreRequest::binary_key
  bool no_value = false;          // a stub still waiting for its value (placeholder or created)
  bool parked = false;            // opts.park was registered: the sink will be told
  bool miss_expired = false;      // a miss because this read found the item expired
  bool miss_flushed = false;      // a miss because this read found the item flushed
  uint8_t frequency = 0;          // the eviction's access count before this read (0..3)
  uint16_t recompute_ms = 0;      // smoothed recompute time (XFetch's delta), 0 = unmeasured
  double reads_per_s = 0;         // the key's estimated read rate before this read, 0 = untracked
  uint32_t value_len_on_flash = 0;   // !ReadOptions::value_wanted, a hit on a value left on flash: its length
  bool on_flash = false;          // a hit on a value kept on flash (fetched for this read or not)

  size_t value_size() const { return value.size() + value_len_on_flash; }
};

enum class StoreMode : uint8_t { kSet, kAdd, kReplace, kAppend, kPrepend, kCas };

enum class StoreStatus : uint8_t {
  kStored,
  kNotStored,
  kExists,      // CAS mismatch
  kNotFound,    // CAS / replace / append on a missing item
  kTooLarge,    // item over item_size_max: the old item of a set is removed
  kNoMemory,
};

struct StoreRequest {
  StoreMode mode = StoreMode::kSet;
  std::string_view key;
  std::string_view value;         // copied into the new item
  uint32_t client_flags = 0;
  int64_t exptime = 0;
  // The CAS the item must have: kCas, and kSet / kReplace become a
  // compare-and-swap with it. 0 = none (kCas with 0 never matches, as memcached).
  uint64_t compare_cas = 0;
  // A compare_cas older than the item's stores the value as a stale item.
  bool stale_on_older_cas = false;
  uint64_t lease_token = 0;       // store only if this lease is the live one
  bool create_on_miss = false;    // kAppend / kPrepend: a miss creates the item
  int64_t create_exptime = 0;
  uint64_t new_cas = 0;           // the new item's CAS instead of the counter's (0 = counter)
  bool binary_key = false;        // remember that the key is binary (for the protocol)
  // On kTooLarge / kNoMemory memcached removes the existing item "to avoid stale
  // data": done for kSet always; for the other modes when this is set.
  bool unlink_on_failure = false;
  // A copy from a warm peer (daemon/warm_request.h), not a client's change:
  // not reported to StoreConfig::peer_copies.
  bool warm_fill = false;
  // With lease_token: a peer's stale value, stored as one that expired
  // stale_for_s seconds ago (stale_grace serves it) instead of fulfilling the
  // lease: the lease and its token (the CAS) stay, so the holder still
  // recomputes and the key's other readers are served this value. exptime is
  // not used.
  bool stale_copy = false;
  int64_t stale_for_s = 0;
  // kAdd from a classic client under classic_stampede: an item its get was
  // answered as a miss for (a stale one, or one under a live lease: an XFetch
  // draw, a refresh-ahead window) counts as absent, so the add stores and
  // ends the lease instead of leaving the stale value to the others.
  bool classic_lease_add = false;
  // The key's hash as ItemStore::Prefetch returned it (ReadOptions::key_hash). 0 = not known.
  uint64_t key_hash = 0;
};

// Why a lookup found no live item: nothing there, or an expired or flushed
// copy that the lookup removed (memcached's do_item_get: not_found, expired,
// flushed).
enum class LookupMiss : uint8_t { kAbsent, kExpired, kFlushed };

// What a lookup found under the key, for the watcher's item_get line: a live
// item's sizes, or why there was none.
struct FoundItem {
  bool live = false;
  uint32_t value_len = 0;
  uint32_t client_flags = 0;
  bool on_flash = false;   // live, its value kept on flash
  LookupMiss miss = LookupMiss::kAbsent;   // when !live
};

struct StoreResult {
  StoreStatus status = StoreStatus::kNotStored;
  uint64_t cas = 0;               // CAS of the stored item (0 when not stored)
  size_t stored_size = 0;
  // What the store's lookup found under the key: memcached logs it as the
  // item_get line of its store. An expired or flushed copy counts as absent
  // (memcached's allocator reclaims it before the store looks).
  FoundItem found{};
};

struct DeleteRequest {
  std::string_view key;
  uint64_t compare_cas = 0;       // the CAS the item must have, 0 = any
  bool compare_zero_cas = false;  // 0 too is compared (md's C0, as memcached's; an item's CAS is 0 only under -C)
  bool mark_stale = false;        // keep the value as stale, new CAS, clear the lease
  // false: not a client's change but the ring's own drop (the ring return,
  // `ring forget`): no warm hold-off, not reported to StoreConfig::peer_copies,
  // not logged as a foreign change.
  bool client = true;
  bool has_ttl = false;           // with mark_stale: a new exptime for the stale value
  int64_t exptime = 0;
  uint64_t new_cas = 0;           // the stale value's CAS instead of the counter's (0 = counter)
  // md x (memcached 1.6.19+): instead of removing the item, replace it with an
  // empty value holding `client_flags` and `exptime` (has_ttl; else none) and
  // the old CAS (or new_cas); with mark_stale the empty value is stale.
  bool empty_value = false;
  uint32_t client_flags = 0;
  // When not null, filled in with what the delete's lookup found (the
  // watcher's item_get and `watch deletions` lines).
  using Removed = FoundItem;
  Removed* removed = nullptr;
  uint64_t key_hash = 0;          // as StoreRequest::key_hash
};

// kNoMemory: only an empty_value delete, when its empty item found no room.
enum class DeleteStatus : uint8_t { kDeleted, kNotFound, kExists, kNoMemory };

struct ArithRequest {
  std::string_view key;
  bool incr = true;
  uint64_t delta = 1;
  uint64_t compare_cas = 0;       // the CAS the item must have, 0 = any
  bool create_on_miss = false;    // a miss creates the item, holding `initial`
  int64_t create_exptime = 0;
  uint64_t initial = 0;           // (no delta applied to it)
  bool has_ttl = false;           // a new exptime on success
  int64_t exptime = 0;
  uint64_t new_cas = 0;           // the new value's CAS instead of the counter's (0 = counter)
  uint64_t key_hash = 0;          // as StoreRequest::key_hash
  // CASes of items the caller's unsent replies still show: memcached rewrites
  // a shorter number in place only in an item nobody else references, and
  // writes a new item of the number's length otherwise.
  std::span<const uint64_t> referenced;
};

enum class ArithStatus : uint8_t { kOk, kNotFound, kNonNumeric, kExists, kNoMemory };

struct ArithResult {
  ArithStatus status = ArithStatus::kNotFound;
  uint64_t value = 0;
  uint64_t cas = 0;
  int64_t ttl = -1;
  int64_t ttl_before = -1;       // before this request's new exptime
  bool created = false;
  FoundItem found{};   // what the lookup found (memcached's watcher logs its item_get)
};

// An item with all its metadata given (a snapshot being loaded). An exptime
// in the past that stale_grace still covers restores a stale item.
struct RestoreRequest {
  std::string_view key;
  std::string_view value;
  uint32_t client_flags = 0;
  int64_t exptime_unix = 0;      // 0 = never
  uint8_t exptime_eighths = 0;   // and this many eighths of a second past it (0..7)
  int64_t last_access_unix = 0;  // 0 = now
  uint64_t cas = 0;              // 0 = a new one
  uint16_t delta_ms = 0;         // measured recompute time, 0 = unmeasured
  ReadRateState read_rate;       // the read-rate estimate as of last_access, count 0 = none
  uint8_t frequency = 0;         // 0..3
  bool fetched = false;
  bool stale = false;            // invalidated (not by its expiry)
  bool binary_key = false;
  // The value is on flash: `value` is the item's 16-byte locator, adopted
  // from the kept flash tier (-e restart with -o ext_path).
  bool flash_stub = false;
  // Last stored or touched before the snapshot's pending flush_all deadline,
  // already set in this store (FlushAll): its last access is kept below the
  // store's deadline, so that the flush hides it, whatever the rounding of
  // the Unix/store clock offset (which can differ by a second between reads).
  bool before_flush = false;
  // false: kNoMemory when the budget is spent, instead of evicting (a
  // snapshot loaded hottest first then keeps its hottest items).
  bool evict = true;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_STORE_REQUESTS_H_
