// The flash file's page format. A page (ext_page_size bytes at its place in
// the file) starts with a header naming its generation, then records packed
// end to end: each one value with its key, length, CAS and a checksum, so a
// value read back is verified against what its RAM item expects before it is
// served. A page reused later gets a new generation: its old records beyond
// the new write point no longer belong to it. Little-endian, written with memcpy.
//
//   page header (16): magic "HLXP" 4, generation 4, flags 4 (bits 8-15: the bucket that
//                     wrote the page, 0-5; bit 0: a low-TTL page (bucket 3), alone in
//                     pages written before buckets; the others 0), XXH32 of the first 12 bytes 4
//   record header (22): XXH32 of everything after this field 4, generation 4,
//                       value length 4, CAS 8, key length 1 (1..250), reserved 0 1
//   then the key, then the value
#ifndef HERDLESS_STORAGE_FLASH_PAGE_H_
#define HERDLESS_STORAGE_FLASH_PAGE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace herdless {

inline constexpr size_t kFlashPageHeaderSize = 16;
inline constexpr size_t kFlashRecordHeaderSize = 22;

// Where a value is on flash: what its RAM item keeps instead of the value.
struct FlashLocator {
  uint32_t page = 0;         // page number, across every ext_path
  uint32_t generation = 0;   // the page's generation when the value was written
  uint32_t offset = 0;       // the record's first byte, from the page's start
};

// One record as decoded: views into the bytes given.
struct FlashRecord {
  uint32_t generation = 0;
  uint64_t cas = 0;
  std::string_view key;
  std::string_view value;
};

// What a decode found.
enum class FlashRecordStatus : uint8_t {
  kOk,
  kEnd,            // no record here: zero bytes, or no room for a header
  kBadHeader,      // a key length of 0 or over 250, or reserved bits set
  kTruncated,      // the lengths run past the bytes given
  kBadChecksum,    // the bytes are not what was written
};

// What a page header holds.
struct FlashPageHeader {
  uint32_t generation = 0;
  uint8_t bucket = 0;   // the bucket whose stream wrote it (FlashBucket's number)
};
void EncodeFlashPageHeader(const FlashPageHeader& header, char* out);   // kFlashPageHeaderSize bytes
// False for anything but a page header (then *header is untouched).
bool DecodeFlashPageHeader(std::string_view bytes, FlashPageHeader* header);

size_t FlashRecordSize(size_t key_len, size_t value_len);
// Writes FlashRecordSize(key.size(), value.size()) bytes at out.
void EncodeFlashRecord(uint32_t generation, uint64_t cas, std::string_view key,
                       std::string_view value, char* out);
// The record at the start of `bytes`; *size is its length when kOk.
FlashRecordStatus DecodeFlashRecord(std::string_view bytes, FlashRecord* out, size_t* size);

// A read back: the record must decode, and be the generation, key and value
// length the RAM item expects; anything else is a miss, never a wrong value.
enum class FlashReadCheck : uint8_t { kOk, kBadChecksum, kMismatch };
FlashReadCheck CheckFlashRead(std::string_view bytes, uint32_t generation, std::string_view key,
                              uint32_t value_len, FlashRecord* out);

// Walks one page's records in order: for compaction and for the scan that
// finds a page's live records. Stops at the first record that is not this
// generation's or does not decode (status() says which).
class FlashPageReader {
 public:
  explicit FlashPageReader(std::string_view page);
  bool valid() const { return valid_; }          // the page header decoded
  uint32_t generation() const { return generation_; }
  // The next record and its offset in the page; false at the end.
  bool Next(FlashRecord* record, uint32_t* offset);
  FlashRecordStatus status() const { return status_; }

 private:
  std::string_view page_;
  size_t at_ = kFlashPageHeaderSize;
  uint32_t generation_ = 0;
  bool valid_ = false;
  FlashRecordStatus status_ = FlashRecordStatus::kOk;
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_FLASH_PAGE_H_
