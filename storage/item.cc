#include "storage/item.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "config.h"
#include "storage/slab_allocator.h"

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

namespace {

// Item is an aggregate with a trivial destructor (an implicit-lifetime type),
// so the block is used as one directly: no placement new, whose atomic
// initialisation would be a plain write to a refcount a page drain may be
// reading (see AllocateItemIn).
static_assert(std::is_trivially_destructible_v<Item> && std::is_aggregate_v<Item>);

Item* BuildItem(void* mem, int slab_class, std::string_view key, uint32_t value_len) {
  Item* item = static_cast<Item*>(mem);
  item->hash_next = nullptr;
  item->lru_prev = nullptr;
  item->lru_next = nullptr;
  item->cas = 0;
  item->client_flags = 0;
  item->exptime = 0;
  item->last_access = 0;
  item->value_len = value_len;
  item->lease_granted_ms = 0;
  item->delta_ms = 0;
  item->key_len = static_cast<uint8_t>(key.size());
  item->state = 0;
  item->slab_class = static_cast<uint8_t>(slab_class);
  std::memcpy(item->data, key.data(), key.size());
  item->data[key.size() + value_len] = '\r';
  item->data[key.size() + value_len + 1] = '\n';
  item->refcount.store(1, std::memory_order_release);
  return item;
}

}  // namespace

Item* AllocateItem(std::string_view key, uint32_t value_len, size_t* charged) {
  const size_t n = ItemAllocSize(key.size(), value_len);
  void* mem = std::malloc(n);
  if (mem == nullptr) return nullptr;
  *charged = AllocatedSize(n);
  return BuildItem(mem, SlabAllocator::kNoClass, key, value_len);
}

Item* AllocateItemIn(void* chunk, int slab_class, std::string_view key, uint32_t value_len) {
  return BuildItem(chunk, slab_class, key, value_len);
}

void FreeItem(Item* item) {
  const int slab_class = item->slab_class;
  if (slab_class != SlabAllocator::kNoClass) SlabAllocator::Free(item);
  else std::free(item);
}

void ReleaseItem(Item* item) {
  if (item->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) FreeItem(item);
}

}  // namespace herdless
