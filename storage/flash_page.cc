#include "storage/flash_page.h"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "storage/le_bytes.h"
#include "storage/limits.h"

namespace herdless {

namespace {

using le_bytes::Get32;
using le_bytes::Get64;
using le_bytes::Put32;
using le_bytes::Put64;

constexpr uint32_t kPageMagic = 0x50584c48;   // "HLXP" in the file
// The header's flags: the bucket that wrote the page in bits 8-15; bit 0
// also marks a low-TTL page (the only bucket named before the others were).
constexpr uint32_t kPageLowTtl = 1;
constexpr uint32_t kPageBucketShift = 8;
constexpr uint32_t kPageBucketMask = 0xff00;
constexpr uint32_t kPageLowTtlBucket = 3;   // FlashBucket::kLowTtl
constexpr uint32_t kPageBuckets = 6;

uint32_t Checksum(const char* p, size_t n) { return XXH32(p, n, 0); }

bool AllZero(std::string_view bytes) {
  for (char c : bytes) {
    if (c != 0) return false;
  }
  return true;
}

}  // namespace

void EncodeFlashPageHeader(const FlashPageHeader& header, char* out) {
  Put32(out, kPageMagic);
  Put32(out + 4, header.generation);
  const uint32_t bucket = header.bucket;
  Put32(out + 8, bucket << kPageBucketShift | (bucket == kPageLowTtlBucket ? kPageLowTtl : 0));
  Put32(out + 12, Checksum(out, 12));
}

bool DecodeFlashPageHeader(std::string_view bytes, FlashPageHeader* header) {
  if (bytes.size() < kFlashPageHeaderSize) return false;
  const char* p = bytes.data();
  const uint32_t flags = Get32(p + 8);
  if (Get32(p) != kPageMagic || (flags & ~(kPageLowTtl | kPageBucketMask)) != 0 || Get32(p + 12) != Checksum(p, 12)) {
    return false;
  }
  uint32_t bucket = (flags & kPageBucketMask) >> kPageBucketShift;
  // Bit 0 alone: a low-TTL page written before the bucket was.
  if ((flags & kPageLowTtl) != 0 && bucket == 0) bucket = kPageLowTtlBucket;
  if (bucket >= kPageBuckets || ((flags & kPageLowTtl) != 0) != (bucket == kPageLowTtlBucket)) return false;
  header->generation = Get32(p + 4);
  header->bucket = static_cast<uint8_t>(bucket);
  return true;
}

size_t FlashRecordSize(size_t key_len, size_t value_len) {
  return kFlashRecordHeaderSize + key_len + value_len;
}

void EncodeFlashRecord(uint32_t generation, uint64_t cas, std::string_view key,
                       std::string_view value, char* out) {
  Put32(out + 4, generation);
  Put32(out + 8, static_cast<uint32_t>(value.size()));
  Put64(out + 12, cas);
  out[20] = static_cast<char>(key.size());
  out[21] = 0;
  std::memcpy(out + kFlashRecordHeaderSize, key.data(), key.size());
  std::memcpy(out + kFlashRecordHeaderSize + key.size(), value.data(), value.size());
  const size_t size = FlashRecordSize(key.size(), value.size());
  Put32(out, Checksum(out + 4, size - 4));
}

FlashRecordStatus DecodeFlashRecord(std::string_view bytes, FlashRecord* out, size_t* size) {
  if (bytes.size() < kFlashRecordHeaderSize) return FlashRecordStatus::kEnd;
  const char* p = bytes.data();
  const size_t key_len = static_cast<unsigned char>(p[20]);
  if (key_len == 0) {
    return AllZero(bytes.substr(0, kFlashRecordHeaderSize)) ? FlashRecordStatus::kEnd
                                                            : FlashRecordStatus::kBadHeader;
  }
  if (key_len > kMaxKeyLength || p[21] != 0) return FlashRecordStatus::kBadHeader;
  const uint64_t value_len = Get32(p + 8);
  const uint64_t total = kFlashRecordHeaderSize + key_len + value_len;
  if (total > bytes.size()) return FlashRecordStatus::kTruncated;
  if (Get32(p) != Checksum(p + 4, total - 4)) return FlashRecordStatus::kBadChecksum;
  out->generation = Get32(p + 4);
  out->cas = Get64(p + 12);
  out->key = bytes.substr(kFlashRecordHeaderSize, key_len);
  out->value = bytes.substr(kFlashRecordHeaderSize + key_len, value_len);
  *size = total;
  return FlashRecordStatus::kOk;
}

FlashReadCheck CheckFlashRead(std::string_view bytes, uint32_t generation, std::string_view key,
                              uint32_t value_len, FlashRecord* out) {
  size_t size;
  const FlashRecordStatus status = DecodeFlashRecord(bytes, out, &size);
  if (status == FlashRecordStatus::kBadChecksum) return FlashReadCheck::kBadChecksum;
  if (status != FlashRecordStatus::kOk) return FlashReadCheck::kMismatch;
  if (out->generation != generation || out->key != key || out->value.size() != value_len) {
    return FlashReadCheck::kMismatch;
  }
  return FlashReadCheck::kOk;
}

FlashPageReader::FlashPageReader(std::string_view page) : page_(page) {
  FlashPageHeader header;
  valid_ = DecodeFlashPageHeader(page, &header);
  generation_ = header.generation;
  if (!valid_) status_ = FlashRecordStatus::kBadHeader;
}

bool FlashPageReader::Next(FlashRecord* record, uint32_t* offset) {
  if (!valid_ || status_ != FlashRecordStatus::kOk) return false;
  size_t size;
  const FlashRecordStatus status = DecodeFlashRecord(page_.substr(at_), record, &size);
  if (status != FlashRecordStatus::kOk) {
    status_ = status;
    return false;
  }
  if (record->generation != generation_) {   // an older use of the page: its end
    status_ = FlashRecordStatus::kEnd;
    return false;
  }
  *offset = static_cast<uint32_t>(at_);
  at_ += size;
  return true;
}

}  // namespace herdless
