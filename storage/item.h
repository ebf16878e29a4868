// Item: one cached key/value in its compact form, byte-packed (no alignment,
// no padding) where it lives: in a segment, after the item before it, or
// alone in a jumbo segment when its value is big (storage/segments.h).
//
//   key_len   1 byte
//   format    1 byte: which optional fields follow (ItemFormat), and bits 9..8
//             of a short value length
//   value_len 1 byte: bits 7..0 of a short value length (< 1024), or
//             4 bytes (little-endian) with kFmtLongValue
//   cas       6 bytes (8 with kFmtWideCas)
//   time      4 bytes: last access, store seconds
//   exptime   4 bytes with kFmtExptime (without: 0, never expires): expiry
//             in ticks of 1/8 s of store time (storage/store_time.h), so an
//             item lives its TTL within 1/8 s; an int32 of ticks reaches
//             about 8.5 years after process start (later exptimes clamp)
//   flags     4 bytes with kFmtClientFlags (without: 0)
//   delta     2 bytes with kFmtDelta: smoothed recompute time, ms (XFetch's Δ)
//   rate      3 bytes with kFmtReadRate: the key's read-rate estimate, its TTL
//             and hot mark (storage/read_rate.h); only keys read more than
//             once in a second get it
//   key, value (no trailing "\r\n": the reply writer adds it)
//
// A flash stub (-o ext_path: the value moved to the flash tier) is an item
// whose format has kFmtLongValue and short length bits 01, an encoding no
// other item has; its 16-byte "value" is where the value is (FlashStubValue).
//
// 13 bytes of header for a value under 1 KiB with no TTL and no client flags,
// 17 with a TTL (memcached: 56). What is not here lives in the index slot
// (state bits, access frequency: storage/index.h) or in a side table for the
// rare states (a live lease's grant time, parked readers).
//
// The key, the value and the format of an item never change once written.
// cas, time, exptime, delta and rate may change in place, under the owning shard's
// lock, when their field is present and wide enough (CanHold*); otherwise the
// store writes a new copy of the item. Readers see item bytes only through an
// ItemRef, which pins the segment the item lives in.
#ifndef HERDLESS_STORAGE_ITEM_H_
#define HERDLESS_STORAGE_ITEM_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "storage/read_rate.h"

namespace herdless {

enum ItemFormat : uint8_t {
  kFmtShortLenMask = 0x03,  // bits 9..8 of a short value length
  kFmtDelta = 1 << 2,
  kFmtReadRate = 1 << 3,
  kFmtWideCas = 1 << 4,
  kFmtExptime = 1 << 5,
  kFmtClientFlags = 1 << 6,
  kFmtLongValue = 1 << 7,
};

// A CAS below this is stored in 6 bytes. The store's CAS counter stays below
// it (it wraps there: 2^48 stores, 9 years at a million a second); CAS values
// given by clients (StoreRequest::new_cas and its kin) or by a snapshot are
// stored whole.
constexpr uint64_t kNarrowCasLimit = uint64_t{1} << 48;
constexpr uint32_t kShortValueLimit = 1024;

// What an item is built from.
struct ItemFields {
  std::string_view key;
  uint32_t value_len = 0;
  uint64_t cas = 0;
  int32_t last_access = 0;    // store seconds
  int32_t exptime = 0;        // expiry tick (storage/store_time.h), 0 = never
  uint32_t client_flags = 0;
  uint16_t delta_ms = 0;      // 0 = unmeasured (no field)
  ReadRateState read_rate;    // count 0 = no estimate (no field)
  // Every field that can change in place is present (wide CAS, exptime,
  // delta, rate): for jumbo items, so that no change ever needs a copy.
  bool full_header = false;
  bool flash_stub = false;    // the value is a FlashStubValue (see above)
};

// A flash stub's value: the record's locator and the real value's length.
constexpr uint32_t kFlashStubValueBytes = 16;
constexpr uint8_t kFmtFlashStub = kFmtLongValue | 0x01;

namespace item_detail {
inline uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void Store32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Where each field starts, for every format byte (a table: no arithmetic on
// the read path).
struct Layout {
  uint8_t cas, time, exptime, flags, delta, rate, key;
};
constexpr Layout LayoutOf(unsigned fmt) {
  Layout l{};
  l.cas = (fmt & kFmtLongValue) ? 6 : 3;
  l.time = static_cast<uint8_t>(l.cas + ((fmt & kFmtWideCas) ? 8 : 6));
  l.exptime = static_cast<uint8_t>(l.time + 4);
  l.flags = static_cast<uint8_t>(l.exptime + ((fmt & kFmtExptime) ? 4 : 0));
  l.delta = static_cast<uint8_t>(l.flags + ((fmt & kFmtClientFlags) ? 4 : 0));
  l.rate = static_cast<uint8_t>(l.delta + ((fmt & kFmtDelta) ? 2 : 0));
  l.key = static_cast<uint8_t>(l.rate + ((fmt & kFmtReadRate) ? 3 : 0));
  return l;
}
struct LayoutTable {
  Layout by_format[256];
  constexpr LayoutTable() : by_format() {
    for (unsigned f = 0; f < 256; f++) by_format[f] = LayoutOf(f);
  }
};
inline constexpr LayoutTable kLayouts;
}  // namespace item_detail

// A view of an encoded item. Cheap to copy; does not own or pin the bytes.
class ItemView {
 public:
  explicit ItemView(const char* p) : p_(const_cast<char*>(p)) {}
  char* data() const { return p_; }

  uint8_t format() const { return static_cast<uint8_t>(p_[1]); }
  bool is_flash_stub() const {
    return (format() & (kFmtLongValue | kFmtShortLenMask)) == kFmtFlashStub;
  }
  size_t key_len() const { return static_cast<uint8_t>(p_[0]); }
  uint32_t value_len() const {
    if (format() & kFmtLongValue) return item_detail::Load32(p_ + 2);
    return (static_cast<uint32_t>(format() & kFmtShortLenMask) << 8) | static_cast<uint8_t>(p_[2]);
  }
  // The client's value length, also of a flash stub (its last 4 value bytes).
  uint32_t client_value_len() const {
    return is_flash_stub() ? item_detail::Load32(value_data() + kFlashStubValueBytes - 4) : value_len();
  }
  // Bytes before the key, and of the whole item.
  size_t header_size() const { return layout().key; }
  size_t size() const { return header_size() + key_len() + value_len(); }

  std::string_view key() const { return {p_ + header_size(), key_len()}; }
  std::string_view value() const { return {p_ + header_size() + key_len(), value_len()}; }
  char* value_data() const { return p_ + header_size() + key_len(); }

  uint32_t client_flags() const {
    return (format() & kFmtClientFlags) ? item_detail::Load32(p_ + layout().flags) : 0;
  }

  uint64_t cas() const {
    uint64_t v = 0;
    if (format() & kFmtWideCas) std::memcpy(&v, p_ + layout().cas, 8);
    else std::memcpy(&v, p_ + layout().cas, 6);
    return v;
  }
  bool CanHoldCas(uint64_t cas) const { return (format() & kFmtWideCas) || cas < kNarrowCasLimit; }
  void set_cas(uint64_t cas) {
    if (format() & kFmtWideCas) std::memcpy(p_ + layout().cas, &cas, 8);
    else std::memcpy(p_ + layout().cas, &cas, 6);
  }

  int32_t last_access() const {
    return static_cast<int32_t>(item_detail::Load32(p_ + layout().time));
  }
  void set_last_access(int32_t t) { item_detail::Store32(p_ + layout().time, static_cast<uint32_t>(t)); }

  int32_t exptime() const {
    return (format() & kFmtExptime)
               ? static_cast<int32_t>(item_detail::Load32(p_ + layout().exptime))
               : 0;
  }
  bool CanHoldExptime(int32_t exptime) const { return exptime == 0 || (format() & kFmtExptime); }
  // Sets the TTL; the field must be there unless `exptime` is 0 (CanHoldExptime).
  void set_exptime(int32_t exptime) {
    if (format() & kFmtExptime) {
      item_detail::Store32(p_ + layout().exptime, static_cast<uint32_t>(exptime));
    }
  }

  uint16_t delta_ms() const {
    if (!(format() & kFmtDelta)) return 0;
    uint16_t v;
    std::memcpy(&v, p_ + layout().delta, 2);
    return v;
  }
  bool CanHoldDelta(uint16_t delta) const { return delta == 0 || (format() & kFmtDelta); }
  void set_delta_ms(uint16_t delta) {
    if (format() & kFmtDelta) std::memcpy(p_ + layout().delta, &delta, 2);
  }

  // The read-rate estimate: {0, 0} without the field.
  bool CanHoldReadRate() const { return format() & kFmtReadRate; }
  ReadRateState read_rate() const {
    ReadRateState r;
    if (!(format() & kFmtReadRate)) return r;
    const char* p = p_ + layout().rate;
    std::memcpy(&r.count, p, 2);
    r.aux = static_cast<uint8_t>(p[2]);
    return r;
  }
  // Sets the estimate; the field must be there (CanHoldReadRate).
  void set_read_rate(ReadRateState r) {
    if (!(format() & kFmtReadRate)) return;
    char* p = p_ + layout().rate;
    std::memcpy(p, &r.count, 2);
    p[2] = static_cast<char>(r.aux);
  }

  // Everything but the value, to build a copy with some fields changed.
  ItemFields Fields() const;

  // Where the fields start for a format byte.
  static const item_detail::Layout& LayoutOf(uint8_t fmt) { return item_detail::kLayouts.by_format[fmt]; }

 private:
  const item_detail::Layout& layout() const { return LayoutOf(format()); }
  char* p_;
};

// The format byte (without the short length bits) an item with these fields gets.
uint8_t FormatFor(const ItemFields& f);

// Bytes of the encoded item.
size_t ItemSize(const ItemFields& f);

// Writes the item's header and key at `dst` (ItemSize(f) bytes long); the
// value bytes, at view.value_data(), are left to the caller.
ItemView WriteItem(char* dst, const ItemFields& f);

// The size memcached 1.6.18 gives the same item (ITEM_ntotal with a CAS:
// 48-byte header, key and its NUL, value and CRLF, client flags when not 0),
// and the slab class it would use with its default settings (-n 48, -f 1.25).
// Per-class statistics are kept in these classes, so `stats items` and
// `stats slabs` read as memcached's do.
uint64_t MemcachedItemSize(size_t key_len, size_t value_len, uint32_t client_flags);
// The size of memcached's header item for a value it moved to extstore: the
// key and its 12-byte item_hdr in place of the value (its slab class is the
// one memcached logs for the item).
uint64_t MemcachedFlashHeaderSize(size_t key_len, uint32_t client_flags);
// What memcached counts and logs for a live item: its size, or for a value on
// flash its header item's.
uint64_t MemcachedLiveSize(size_t key_len, size_t value_len, uint32_t client_flags, bool on_flash);
int MemcachedSlabClass(uint64_t item_size);   // 1..kMemcachedClasses
uint64_t MemcachedChunkSize(int slab_class);
constexpr int kMemcachedClasses = 39;

class Segment;

// Shared ownership of the memory an item lives in, for readers (replies in
// flight): while an ItemRef is held, the item's bytes stay where they are and
// its key and value stay unchanged, whatever happens to the key. Move-only.
class ItemRef {
 public:
  ItemRef() = default;
  // Adopts one pin that the caller already took.
  explicit ItemRef(Segment* pinned) : segment_(pinned) {}
  ItemRef(ItemRef&& o) noexcept : segment_(o.segment_) { o.segment_ = nullptr; }
  ItemRef& operator=(ItemRef&& o) noexcept {
    if (this != &o) {
      Reset();
      segment_ = o.segment_;
      o.segment_ = nullptr;
    }
    return *this;
  }
  ItemRef(const ItemRef&) = delete;
  ItemRef& operator=(const ItemRef&) = delete;
  ~ItemRef() { Reset(); }

  explicit operator bool() const { return segment_ != nullptr; }
  // Gives up ownership without releasing: for holders that keep the raw pin
  // (ReplyBuffer), which later call ReleasePin().
  Segment* Release() {
    Segment* s = segment_;
    segment_ = nullptr;
    return s;
  }
  void Reset();

 private:
  Segment* segment_ = nullptr;
};

// Drops one pin taken by the store (see ItemRef::Release).
void ReleasePin(Segment* segment);

inline void ItemRef::Reset() {
  if (segment_ != nullptr) {
    ReleasePin(segment_);
    segment_ = nullptr;
  }
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_ITEM_H_
