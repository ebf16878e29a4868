// The snapshot file's encoding (storage/snapshot.h, docs/operations.md): each
// part's encoder beside its decoder, so the layout of every byte is written
// in one place. The decoders check what the bytes alone can tell.
#include "storage/snapshot.h"

#include <algorithm>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "storage/le_bytes.h"
#include "storage/lease.h"

namespace herdless {

namespace snapshot_format {
namespace {

using le_bytes::Get16;
using le_bytes::Get32;
using le_bytes::Get64;
using le_bytes::Put16;
using le_bytes::Put32;
using le_bytes::Put64;

// A block's checksum: XXH3 of its header's first 24 bytes and its payload.
uint64_t BlockChecksum(const char* header, const std::string_view* pieces, size_t n) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, 24);
  for (size_t i = 0; i < n; i++) XXH3_64bits_update(&state, pieces[i].data(), pieces[i].size());
  return XXH3_64bits_digest(&state);
}

}  // namespace

int HotnessClass(uint8_t frequency, int64_t seconds_since_access) {
  const int age_step = seconds_since_access < 60     ? 0
                       : seconds_since_access < 600  ? 1
                       : seconds_since_access < 3600 ? 2
                                                     : 3;
  return (3 - std::min<int>(frequency, 3)) + age_step;
}

std::string EncodeHeader(const FileHeader& h) {
  std::string out(kHeaderSize, '\0');
  char* p = out.data();
  std::memcpy(p, kMagic, sizeof(kMagic));
  Put32(p + 8, h.version);
  Put32(p + 12, static_cast<uint32_t>(kHeaderSize));
  Put64(p + 16, h.memory_limit);
  Put64(p + 24, h.item_size_max);
  Put64(p + 32, static_cast<uint64_t>(h.written_unix));
  Put32(p + 40, h.block_target);
  Put32(p + 44, h.hotness_classes);
  // bytes 48..55 reserved (zero)
  Put64(p + 56, XXH3_64bits(p, 56));
  return out;
}

bool DecodeHeader(const char* p, FileHeader* h, std::string* error) {
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) {
    *error = "not a herdless snapshot (no HRDLSNAP magic)";
    return false;
  }
  h->version = Get32(p + 8);
  if (h->version < kOldestVersion || h->version > kVersion) {
    *error = "snapshot format version " + std::to_string(h->version) + ", this herdless reads versions " +
             std::to_string(kOldestVersion) + " to " + std::to_string(kVersion);
    return false;
  }
  if (Get32(p + 12) != kHeaderSize || Get64(p + 48) != 0) {
    *error = "bad header (size or reserved bytes)";
    return false;
  }
  if (XXH3_64bits(p, 56) != Get64(p + 56)) {
    *error = "header checksum mismatch";
    return false;
  }
  h->memory_limit = Get64(p + 16);
  h->item_size_max = Get64(p + 24);
  h->written_unix = static_cast<int64_t>(Get64(p + 32));
  h->block_target = Get32(p + 40);
  h->hotness_classes = Get32(p + 44);
  if (h->hotness_classes == 0 || h->hotness_classes > 256) {
    *error = "bad header (" + std::to_string(h->hotness_classes) + " hotness classes)";
    return false;
  }
  return true;
}

size_t RecordHeadSizeOf(uint8_t flags) {
  return kRecordHeaderSize + ((flags & kRecordReadRate) ? kRecordRateSize : 0);
}

size_t RecordHeadSize(const Record& r) { return kRecordHeaderSize + (r.rate_count != 0 ? kRecordRateSize : 0); }

size_t RecordSize(const Record& r) { return RecordHeadSize(r) + r.key.size() + r.value.size(); }

void EncodeRecordHead(char* p, const Record& r) {
  p[0] = static_cast<char>(r.key.size());
  p[1] = static_cast<char>((r.binary_key ? kRecordBinaryKey : 0) | (r.fetched ? kRecordFetched : 0) |
                           (r.invalidated ? kRecordInvalidated : 0) | (r.rate_count != 0 ? kRecordReadRate : 0) |
                           (std::min<uint8_t>(r.frequency, 3) << kRecordFrequencyShift) |
                           (r.flash_stub ? kRecordFlashStub : 0));
  Put16(p + 2, r.delta_ms);
  Put32(p + 4, static_cast<uint32_t>(r.value.size()));
  Put32(p + 8, r.client_flags);
  Put32(p + 12, r.exptime_unix);
  Put32(p + 16, r.last_access_unix);
  Put64(p + 20, r.cas);
  if (r.rate_count != 0) {
    Put16(p + kRecordHeaderSize, r.rate_count);
    p[kRecordHeaderSize + 2] = static_cast<char>(r.rate_aux);
    // The expiry to the store's tick: a hot key's refresh is timed by it.
    p[kRecordHeaderSize + 3] = static_cast<char>(r.exptime_eighths & 7);
  }
  std::memcpy(p + RecordHeadSize(r), r.key.data(), r.key.size());
}

Record DecodeRecordHead(const char* p) {
  const size_t key_len = static_cast<uint8_t>(p[0]);
  const uint8_t flags = static_cast<uint8_t>(p[1]);
  const size_t head = RecordHeadSizeOf(flags);
  Record r;
  r.key = std::string_view(p + head, key_len);
  r.value = std::string_view(p + head + key_len, Get32(p + 4));
  if (flags & kRecordReadRate) {
    r.rate_count = Get16(p + kRecordHeaderSize);
    r.rate_aux = static_cast<uint8_t>(p[kRecordHeaderSize + 2]);
    r.exptime_eighths = static_cast<uint8_t>(p[kRecordHeaderSize + 3]);
  }
  r.delta_ms = Get16(p + 2);
  r.client_flags = Get32(p + 8);
  r.exptime_unix = Get32(p + 12);
  r.last_access_unix = Get32(p + 16);
  r.cas = Get64(p + 20);
  r.binary_key = flags & kRecordBinaryKey;
  r.fetched = flags & kRecordFetched;
  r.invalidated = flags & kRecordInvalidated;
  r.frequency = (flags >> kRecordFrequencyShift) & 3;
  r.flash_stub = flags & kRecordFlashStub;
  return r;
}

void AppendRecord(std::string* out, const Record& r) {
  const size_t at = out->size();
  out->resize(at + RecordSize(r));
  char* p = out->data() + at;
  EncodeRecordHead(p, r);
  if (!r.value.empty()) std::memcpy(p + RecordHeadSize(r) + r.key.size(), r.value.data(), r.value.size());
}

std::string EncodeEndPayload(const EndBlock& e, uint32_t version) {
  const size_t shards = version >= 4 ? std::min(e.recompute_spreads.size(), kMaxSavedShards) : 0;
  const size_t flash = version >= 5 ? 8 + e.flash_identity.size() : 0;
  const size_t flush = version >= 6 ? 8 : 0;
  std::string out(kEndPayloadSize + (version >= 4 ? 4 + 2 * shards : 0) + flash + flush, '\0');
  Put64(out.data(), e.items);
  Put64(out.data() + 8, e.item_blocks);
  Put64(out.data() + 16, e.cas_counter);
  Put64(out.data() + 24, static_cast<uint64_t>(e.finished_unix));
  if (version < 4) return out;
  Put32(out.data() + kEndPayloadSize, static_cast<uint32_t>(shards));
  for (size_t i = 0; i < shards; i++) {
    const double units = std::clamp(e.recompute_spreads[i], 0.0, kMaxSpread) / kSpreadUnit;
    Put16(out.data() + kEndPayloadSize + 4 + 2 * i, static_cast<uint16_t>(units + 0.5));
  }
  if (version < 5) return out;
  char* p = out.data() + kEndPayloadSize + 4 + 2 * shards;
  Put32(p, e.flash_next_generation);
  Put32(p + 4, static_cast<uint32_t>(e.flash_identity.size()));
  if (!e.flash_identity.empty()) std::memcpy(p + 8, e.flash_identity.data(), e.flash_identity.size());
  if (version < 6) return out;
  Put64(p + 8 + e.flash_identity.size(), static_cast<uint64_t>(e.flush_deadline_unix));
  return out;
}

bool DecodeEndPayload(std::string_view payload, uint32_t version, EndBlock* e, std::string* error) {
  const char* p = payload.data();
  const size_t fixed = kEndPayloadSize + (version >= 4 ? 4 : 0);
  const size_t shards = version >= 4 && payload.size() >= fixed ? Get32(p + kEndPayloadSize) : 0;
  const size_t spreads_end = fixed + 2 * shards;
  // Version 5: the flash tier's next generation and identity follow the spreads.
  const bool flash_fits = version < 5 || (shards <= kMaxSavedShards && payload.size() >= spreads_end + 8);
  const size_t flash_len = version >= 5 && flash_fits ? 8 + size_t{Get32(p + spreads_end + 4)} : 0;
  // Version 6: a pending flush_all's deadline after the flash identity.
  const size_t flush_len = version >= 6 ? 8 : 0;
  if (payload.size() < fixed || shards > kMaxSavedShards || (shards & (shards - 1)) != 0 || !flash_fits ||
      payload.size() != spreads_end + flash_len + flush_len) {
    *error = "bad size";
    return false;
  }
  e->items = Get64(p);
  e->item_blocks = Get64(p + 8);
  e->cas_counter = Get64(p + 16);
  e->finished_unix = static_cast<int64_t>(Get64(p + 24));
  e->recompute_spreads.resize(shards);
  for (size_t i = 0; i < shards; i++) {
    const double spread = Get16(p + fixed + 2 * i) * kSpreadUnit;
    if (spread > kMaxSpread) {
      *error = "shard " + std::to_string(i) + "'s recompute spread is over " +
               std::to_string(static_cast<int>(kMaxSpread));
      return false;
    }
    e->recompute_spreads[i] = spread;
  }
  if (version >= 5) {
    e->flash_next_generation = Get32(p + spreads_end);
    e->flash_identity.assign(p + spreads_end + 8, flash_len - 8);
  }
  e->flush_deadline_unix = 0;
  if (version >= 6) {
    const int64_t deadline = static_cast<int64_t>(Get64(p + spreads_end + flash_len));
    if (deadline < 0) {
      *error = "a negative flush_all deadline";
      return false;
    }
    e->flush_deadline_unix = deadline;
  }
  return true;
}

void EncodeBlockHeader(char out[kBlockHeaderSize], uint32_t sequence, uint8_t kind, uint8_t hotness,
                       uint32_t payload_len, uint32_t records,
                       const std::vector<std::string_view>& payload_pieces) {
  std::memset(out, 0, kBlockHeaderSize);
  Put32(out, kBlockMagic);
  Put32(out + 4, sequence);
  out[8] = static_cast<char>(kind);
  out[9] = static_cast<char>(hotness);
  Put32(out + 12, payload_len);
  Put32(out + 16, records);
  Put64(out + 24, BlockChecksum(out, payload_pieces.data(), payload_pieces.size()));
}

bool DecodeBlockHeader(const char* h, BlockHeader* out, std::string* error) {
  if (Get32(h) != kBlockMagic) {
    *error = "not a block header";
    return false;
  }
  out->sequence = Get32(h + 4);
  out->kind = static_cast<uint8_t>(h[8]);
  out->hotness = static_cast<uint8_t>(h[9]);
  out->payload_len = Get32(h + 12);
  out->records = Get32(h + 16);
  if ((out->kind != kBlockItems && out->kind != kBlockEnd) || Get16(h + 10) != 0 || Get32(h + 20) != 0) {
    *error = "unknown block kind or reserved bits set";
    return false;
  }
  return true;
}

bool BlockChecksumMatches(const char* h, std::string_view payload) {
  return BlockChecksum(h, &payload, 1) == Get64(h + 24);
}

}  // namespace snapshot_format
}  // namespace herdless
