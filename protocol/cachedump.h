// Cachedump: memcached's `stats cachedump <class> <limit>` (items.c
// item_cachedump): for up to <limit> items of one size class (0 = no limit),
//
//   ITEM <key> [<value bytes> b; <expiry as Unix time, 0 = never> s]\r\n
//
// then "END\r\n", the whole reply at most kCachedumpMaxBytes (memcached's
// 2 MB buffer). Classes are those `stats items` numbers. The store is walked
// a few index buckets per locked step (ItemStore::Walk), so other clients are
// not stopped; the reply is built before it is sent, as memcached's.
#ifndef HERDLESS_PROTOCOL_CACHEDUMP_H_
#define HERDLESS_PROTOCOL_CACHEDUMP_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/item_store.h"

namespace herdless {

inline constexpr size_t kCachedumpMaxBytes = 2 * 1024 * 1024;

// Appends one "ITEM ..." line for `item`; `unix_offset` is
// ItemStore::ToUnixTime(0). A key is shown up to its first NUL byte (memcached
// copies it with strncpy).
void AppendCachedumpLine(int64_t unix_offset, const WalkedItem& item, std::string* out);

// The whole reply for class `slab_class` into *out (cleared first). Items
// with binary keys (meta's b flag) and lease stubs without a value are
// skipped, as memcached skips binary keys.
void Cachedump(ItemStore* store, int slab_class, uint32_t limit, std::string* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_CACHEDUMP_H_
