// The limits storage puts on what it stores, which the protocols check
// before they ask it to store anything: memcached's.
#ifndef HERDLESS_STORAGE_LIMITS_H_
#define HERDLESS_STORAGE_LIMITS_H_

#include <cstddef>

namespace herdless {

// The longest key (memcached's KEY_MAX_LENGTH); an item keeps its length in
// one byte (storage/item.h), a snapshot record too (storage/snapshot.h).
inline constexpr size_t kMaxKeyLength = 250;

}  // namespace herdless

#endif  // HERDLESS_STORAGE_LIMITS_H_
