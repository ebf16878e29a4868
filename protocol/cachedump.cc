#include "protocol/cachedump.h"

#include "protocol/numbers.h"

namespace herdless {

namespace {

// Index buckets per locked walk step.
constexpr size_t kBucketsPerStep = 64;
// What "END\r\n" plus memcached's terminating NUL take at the end.
constexpr size_t kEndRoom = 6;

}  // namespace

void AppendCachedumpLine(int64_t unix_offset, const WalkedItem& item, std::string* out) {
  char num[kMaxUint64Digits];
  std::string_view key = item.key;
  const size_t nul = key.find('\0');
  if (nul != std::string_view::npos) key = key.substr(0, nul);
  out->append("ITEM ");
  out->append(key);
  out->append(" [");
  out->append(num, FormatUint64(item.value.size(), num) - num);
  out->append(" b; ");
  const int64_t exp = item.exptime == 0 ? 0 : item.exptime + unix_offset;
  out->append(num, FormatUint64(exp < 0 ? 0 : static_cast<uint64_t>(exp), num) - num);
  out->append(" s]\r\n");
}

void Cachedump(ItemStore* store, int slab_class, uint32_t limit, std::string* out) {
  out->clear();
  const int64_t unix_offset = store->ToUnixTime(0);
  WalkCursor cursor;
  uint32_t shown = 0;
  bool full = false;
  std::string line;
  while (!cursor.done && !full) {
    store->Walk(&cursor, kBucketsPerStep, [&](const WalkedItem& item) {
      if (full || item.slab_class != slab_class || item.binary_key || item.no_value ||
          item.placeholder) {
        return;
      }
      line.clear();
      AppendCachedumpLine(unix_offset, item, &line);
      if (out->size() + line.size() + kEndRoom > kCachedumpMaxBytes) {
        full = true;
        return;
      }
      out->append(line);
      if (++shown == limit) full = true;
    });
  }
  out->append("END\r\n");
}

}  // namespace herdless
