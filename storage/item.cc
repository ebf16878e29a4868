#include "storage/item.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace herdless {

uint8_t FormatFor(const ItemFields& f) {
  uint8_t fmt = 0;
  if (f.value_len >= kShortValueLimit || f.flash_stub) fmt |= kFmtLongValue;
  if (f.cas >= kNarrowCasLimit) fmt |= kFmtWideCas;
  if (f.exptime != 0) fmt |= kFmtExptime;
  if (f.client_flags != 0) fmt |= kFmtClientFlags;
  if (f.delta_ms != 0) fmt |= kFmtDelta;
  if (f.read_rate.present()) fmt |= kFmtReadRate;
  if (f.full_header) fmt |= kFmtWideCas | kFmtExptime | kFmtDelta | kFmtReadRate;
  return fmt;
}

size_t ItemSize(const ItemFields& f) {
  return ItemView::LayoutOf(FormatFor(f)).key + f.key.size() + f.value_len;
}

ItemView WriteItem(char* dst, const ItemFields& f) {
  assert(f.key.size() <= 255);
  uint8_t fmt = FormatFor(f);
  dst[0] = static_cast<char>(f.key.size());
  if (fmt & kFmtLongValue) {
    item_detail::Store32(dst + 2, f.value_len);
    if (f.flash_stub) fmt |= kFmtFlashStub;
  } else {
    fmt |= static_cast<uint8_t>(f.value_len >> 8);
    dst[2] = static_cast<char>(f.value_len & 0xff);
  }
  dst[1] = static_cast<char>(fmt);
  ItemView view(dst);
  view.set_cas(f.cas);
  view.set_last_access(f.last_access);
  view.set_exptime(f.exptime);
  if (fmt & kFmtClientFlags) item_detail::Store32(dst + ItemView::LayoutOf(fmt).flags, f.client_flags);
  view.set_delta_ms(f.delta_ms);
  view.set_read_rate(f.read_rate);
  std::memcpy(dst + ItemView::LayoutOf(fmt).key, f.key.data(), f.key.size());
  return view;
}

ItemFields ItemView::Fields() const {
  ItemFields f;
  f.key = key();
  f.value_len = value_len();
  f.cas = cas();
  f.last_access = last_access();
  f.exptime = exptime();
  f.client_flags = client_flags();
  f.delta_ms = delta_ms();
  f.read_rate = read_rate();
  f.flash_stub = is_flash_stub();
  return f;
}

// ---------------------------------------------------------------------------
// memcached's sizes and slab classes.

uint64_t MemcachedItemSize(size_t key_len, size_t value_len, uint32_t client_flags) {
  constexpr uint64_t kHeader = 48;
  constexpr uint64_t kCas = 8;
  return kHeader + key_len + 1 + value_len + 2 + (client_flags != 0 ? 4 : 0) + kCas;
}

uint64_t MemcachedFlashHeaderSize(size_t key_len, uint32_t client_flags) {
  constexpr uint64_t kItemHdr = 12;   // sizeof(item_hdr), the header item's nbytes (no CRLF)
  return MemcachedItemSize(key_len, kItemHdr, client_flags) - 2;
}

uint64_t MemcachedLiveSize(size_t key_len, size_t value_len, uint32_t client_flags, bool on_flash) {
  return on_flash ? MemcachedFlashHeaderSize(key_len, client_flags)
                  : MemcachedItemSize(key_len, value_len, client_flags);
}

namespace {

// memcached 1.6.18's slabs_init with its defaults: the first chunk is the
// 48-byte header plus -n 48, each next one 1.25 times bigger (8-byte
// aligned), and the last class is the 512 KiB largest chunk. Index 0 is
// unused (memcached's classes count from 1).
struct ChunkSizeTable {
  uint64_t size[kMemcachedClasses + 1] = {};
  int classes = 0;   // the last class's index
};

constexpr ChunkSizeTable MakeChunkSizes() {
  constexpr double kFactor = 1.25;
  constexpr uint64_t kLargestChunk = 512 * 1024;
  ChunkSizeTable t;
  t.size[1] = 96;
  int last = 1;
  for (;;) {
    const uint64_t next = static_cast<uint64_t>(static_cast<double>(t.size[last]) * kFactor);
    if (next >= kLargestChunk / kFactor) break;
    t.size[++last] = (next + 7) / 8 * 8;
  }
  t.size[++last] = kLargestChunk;
  t.classes = last;
  return t;
}

// Computed at compile time: a hit counts itself in its class, so the lookup
// is on every read.
constexpr ChunkSizeTable kChunkSizes = MakeChunkSizes();
static_assert(kChunkSizes.classes == kMemcachedClasses);

// The class of every size up to kDirectSizes, by size / 8 rounded up: items
// of a few hundred bytes find theirs with one load.
constexpr uint64_t kDirectSizes = 16 * 1024;
struct DirectClassTable {
  uint8_t by_eighths[kDirectSizes / 8 + 1] = {};
};

constexpr DirectClassTable MakeDirectClasses() {
  DirectClassTable t;
  int cls = 1;
  for (uint64_t i = 0; i <= kDirectSizes / 8; i++) {
    while (kChunkSizes.size[cls] < i * 8) cls++;   // chunk sizes are multiples of 8
    t.by_eighths[i] = static_cast<uint8_t>(cls);
  }
  return t;
}
constexpr DirectClassTable kDirectClasses = MakeDirectClasses();

int SearchSlabClass(uint64_t item_size) {
  // The first class whose chunk holds the item; past the classes below the
  // largest, the largest (memcached chains chunks).
  const uint64_t* first = kChunkSizes.size + 1;
  const uint64_t* last = kChunkSizes.size + kMemcachedClasses;
  return static_cast<int>(std::lower_bound(first, last, item_size) - kChunkSizes.size);
}

}  // namespace

int MemcachedSlabClass(uint64_t item_size) {
  if (item_size <= kDirectSizes) return kDirectClasses.by_eighths[(item_size + 7) / 8];
  return SearchSlabClass(item_size);
}

uint64_t MemcachedChunkSize(int slab_class) {
  assert(slab_class >= 1 && slab_class <= kMemcachedClasses);
  return kChunkSizes.size[slab_class];
}

}  // namespace herdless
