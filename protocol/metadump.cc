#include "protocol/metadump.h"

#include "protocol/key.h"
#include "protocol/numbers.h"
#include "storage/limits.h"

namespace herdless {

namespace {

// Index buckets per walk step: a few dozen items under one shard lock.
constexpr size_t kBucketsPerStep = 16;

void AppendNumber(std::string* out, uint64_t v) {
  char buf[kMaxUint64Digits];
  out->append(buf, FormatUint64(v, buf) - buf);
}

void AppendSigned(std::string* out, int64_t v) {
  if (v < 0) {
    out->push_back('-');
    AppendNumber(out, 0 - static_cast<uint64_t>(v));
  } else {
    AppendNumber(out, static_cast<uint64_t>(v));
  }
}

}  // namespace

bool ParseCrawlerClasses(std::string_view arg, uint64_t* classes) {
  if (arg == "all") {
    *classes = kAllCrawlerClasses;
    return true;
  }
  uint64_t set = 0;
  while (!arg.empty()) {
    const size_t comma = arg.find(',');
    const std::string_view piece = arg.substr(0, comma);
    arg = comma == std::string_view::npos ? std::string_view() : arg.substr(comma + 1);
    if (piece.empty()) continue;   // strtok_r skips empty pieces
    uint32_t id;
    if (!ParseUint32(piece, &id) || id < 1 || id > 63) return false;
    set |= uint64_t{1} << id;
  }
  *classes = set;
  return true;
}

void AppendMetadumpLine(int64_t unix_offset, const WalkedItem& item, std::string* out,
                        bool with_flags) {
  char key[kMaxUriEncodedKey];
  out->append("key=");
  out->append(key, UriEncode(item.key, key));
  out->append(" exp=");
  AppendSigned(out, item.exptime == 0 ? -1 : item.exptime + unix_offset);
  out->append(" la=");
  AppendSigned(out, item.last_access + unix_offset);
  out->append(" cas=");
  AppendNumber(out, item.cas);
  out->append(item.fetched ? " fetch=yes cls=" : " fetch=no cls=");
  AppendNumber(out, static_cast<uint64_t>(item.slab_class));
  out->append(" size=");
  AppendNumber(out, item.size);
  if (with_flags) {   // 1.6.45's field, with the space it writes after it
    out->append(" flags=");
    AppendNumber(out, item.client_flags);
    out->push_back(' ');
  }
  out->append(item.stale ? (with_flags ? "stale=yes" : " stale=yes")
                         : (with_flags ? "stale=no" : " stale=no"));
  out->append(item.lease_out ? " lease=yes" : " lease=no");
  // Only keys with a read-rate estimate (read twice within a second) have
  // one; the same figure as mg's r flag.
  if (item.reads_per_s > 0) {
    char rate[32];
    out->append(" rate=");
    out->append(rate, FormatReadRate(item.reads_per_s, rate) - rate);
  }
  out->push_back('\n');
}

void AppendMgdumpLine(const WalkedItem& item, std::string* out) {
  out->append("mg ");
  if (!item.binary_key) {
    out->append(item.key);
    out->append("\r\n");
    return;
  }
  char encoded[(kMaxKeyLength + 2) / 3 * 4 + 4];
  out->append(encoded, Base64Encode(item.key, encoded, sizeof(encoded)));
  out->append(" b\r\n");
}

MetadumpStream::MetadumpStream(ItemStore* store, uint64_t classes, Format format)
    : store_(store), classes_(classes), format_(format), unix_offset_(store->ToUnixTime(0)) {}

bool MetadumpStream::Fill(ReplyBuffer* out, size_t max_pending, int max_steps) {
  for (int step = 0; !done_ && step < max_steps && out->pending_bytes() < max_pending; step++) {
    if (cursor_.done) {
      out->Append(format_ == Format::kMgdump ? "EN\r\n" : "END\r\n");
      done_ = true;
      break;
    }
    scratch_.clear();
    // Values on flash are listed as memcached lists their header items (the
    // item's class is the header's); the lines never show a value.
    store_->Walk(&cursor_, kBucketsPerStep, [&](const WalkedItem& item) {
      // A lease stub has no value yet: a get would not find it.
      if (item.no_value || (classes_ & (uint64_t{1} << item.slab_class)) == 0) return;
      if (format_ == Format::kMgdump) {
        AppendMgdumpLine(item, &scratch_);
      } else {
        AppendMetadumpLine(unix_offset_, item, &scratch_, format_ == Format::kMetadumpWithFlags);
      }
      items_++;
    }, /*flash_stubs=*/true);
    out->Append(scratch_);
  }
  return done_;
}

}  // namespace herdless
