#include "storage/item.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "config.h"

#ifdef HERDLESS_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

namespace herdless {

size_t AllocatedSize(size_t n) {
#ifdef HERDLESS_JEMALLOC
  return nallocx(n, 0);
#else
  // glibc: chunks are 16-byte aligned with an 8-byte header.
  return (n + 8 + 15) & ~size_t{15};
#endif
}

Item* AllocateItem(std::string_view key, uint32_t value_len, size_t* charged) {
  const size_t n = ItemAllocSize(key.size(), value_len);
  void* mem = std::malloc(n);
  if (mem == nullptr) return nullptr;
  *charged = AllocatedSize(n);
  Item* item = new (mem) Item;
  item->hash_next = nullptr;
  item->lru_prev = nullptr;
  item->lru_next = nullptr;
  item->cas = 0;
  item->refcount.store(1, std::memory_order_relaxed);
  item->client_flags = 0;
  item->exptime = 0;
  item->last_access = 0;
  item->value_len = value_len;
  item->lease_granted_ms = 0;
  item->delta_ms = 0;
  item->key_len = static_cast<uint8_t>(key.size());
  item->state = 0;
  std::memcpy(item->data, key.data(), key.size());
  item->data[key.size() + value_len] = '\r';
  item->data[key.size() + value_len + 1] = '\n';
  return item;
}

void FreeItem(Item* item) {
  item->~Item();
  std::free(item);
}

void ReleaseItem(Item* item) {
  if (item->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeItem(item);
}

}  // namespace herdless
