// Item: one cached key/value, allocated as a single block (header, key, value,
// "\r\n") so a reply can point an iovec straight at the value and its CRLF.
// The bytes of a linked item never change; metadata (exptime, state bits, CAS,
// LRU links) changes only under the owning shard's lock. Lifetime is a
// reference count: the hash table holds one reference while the item is
// linked, every ItemRef holds one, and the last release frees the block.
#ifndef HERDLESS_STORAGE_ITEM_H_
#define HERDLESS_STORAGE_ITEM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace herdless {

// Bits of Item::state.
enum ItemState : uint8_t {
  kItemLinked = 1 << 0,       // in the hash table
  kItemFetched = 1 << 1,      // read at least once since stored (mg h)
  kItemStale = 1 << 2,        // invalidated (md I / ms I) or expired within stale_grace
  kItemTokenSent = 1 << 3,    // a lease (recache right, memcached's W) is out
  kItemNeedsValue = 1 << 4,   // a stub made by vivify/lease-get: waiting for its value
  kItemPlaceholder = 1 << 5,  // lease-only stub: invisible to get/gets/mg without N
  kItemBinaryKey = 1 << 6,    // stored by a meta command with a base64 key (`b`):
                              // memcached echoes such keys in base64 ever after
};

struct Item {
  // Guarded by the shard lock.
  Item* hash_next;
  Item* lru_prev;
  Item* lru_next;
  uint64_t cas;
  std::atomic<uint32_t> refcount;
  uint32_t client_flags;
  int32_t exptime;           // store seconds; 0 = never
  int32_t last_access;       // store seconds
  uint32_t value_len;        // value bytes, without the trailing "\r\n"
  uint32_t lease_granted_ms; // store milliseconds (mod 2^32) when the lease was granted
  uint16_t delta_ms;         // smoothed recompute time (XFetch's delta), 0 = unmeasured
  uint8_t key_len;
  uint8_t state;
  uint8_t slab_class;        // SlabAllocator class of the block, 0 = malloc'd; set once
  char data[];               // key, value, "\r\n"

  std::string_view key() const { return {data, key_len}; }
  std::string_view value() const { return {data + key_len, value_len}; }
  char* value_data() { return data + key_len; }
  // Value followed by "\r\n": what a VALUE reply sends.
  std::string_view value_with_crlf() const { return {data + key_len, value_len + 2u}; }
};

// Bytes to allocate for an item with this key and value length.
inline size_t ItemAllocSize(size_t key_len, size_t value_len) {
  return sizeof(Item) + key_len + value_len + 2;
}

// Allocates an unlinked item with refcount 1, copies the key, writes the
// trailing "\r\n", and leaves the value bytes for the caller. Returns nullptr
// when the allocator fails. `*charged` receives the bytes the allocator really
// reserved (what memory accounting counts).
Item* AllocateItem(std::string_view key, uint32_t value_len, size_t* charged);

// Builds the same item in `chunk`, a block of SlabAllocator class
// `slab_class` with room for ItemAllocSize bytes. The refcount is written
// last, with release order: whoever sees it non-zero (a page drain pinning
// the chunk) also sees the key.
Item* AllocateItemIn(void* chunk, int slab_class, std::string_view key, uint32_t value_len);

// Size the allocator really reserves for a block of `n` bytes.
size_t AllocatedSize(size_t n);

// Gives the block back to malloc or to its slab page. The refcount is 0.
void FreeItem(Item* item);

// Shared ownership of an item for readers (replies in flight). Move-only.
class ItemRef {
 public:
  ItemRef() = default;
  // Adopts one reference that the caller already took.
  explicit ItemRef(Item* item) : item_(item) {}
  ItemRef(ItemRef&& o) noexcept : item_(o.item_) { o.item_ = nullptr; }
  ItemRef& operator=(ItemRef&& o) noexcept {
    if (this != &o) {
      Reset();
      item_ = o.item_;
      o.item_ = nullptr;
    }
    return *this;
  }
  ItemRef(const ItemRef&) = delete;
  ItemRef& operator=(const ItemRef&) = delete;
  ~ItemRef() { Reset(); }

  // Takes a new reference to `item` (which must be alive).
  static ItemRef Share(Item* item) {
    item->refcount.fetch_add(1, std::memory_order_relaxed);
    return ItemRef(item);
  }

  Item* get() const { return item_; }
  Item* operator->() const { return item_; }
  explicit operator bool() const { return item_ != nullptr; }
  Item* Release() {
    Item* i = item_;
    item_ = nullptr;
    return i;
  }
  void Reset();

 private:
  Item* item_ = nullptr;
};

// Drops one reference; frees the item when it was the last.
void ReleaseItem(Item* item);

inline void ItemRef::Reset() {
  if (item_ != nullptr) {
    ReleaseItem(item_);
    item_ = nullptr;
  }
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_H_
