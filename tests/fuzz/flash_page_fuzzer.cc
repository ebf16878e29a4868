// libFuzzer target for the flash page reader (storage/flash_page.h). The
// first byte picks how the rest is read: even, as a whole page as it is
// (page header, then the record walk); odd, as records behind a valid page
// header of generation 1 (its bucket from the first byte too), so the record
// decoder sees mutated records rather than a refused page. Checked: no crash or undefined behaviour; every record
// the walk yields lies inside the page, in order, has a key of 1..250 bytes,
// re-encodes to the very bytes it came from, and passes CheckFlashRead; a
// record whose checksum or lengths are wrong is never yielded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "storage/flash_page.h"

namespace herdless {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void Walk(std::string_view page) {
  FlashPageHeader header;
  if (DecodeFlashPageHeader(page, &header)) Check(header.bucket < 6);   // one of memcached's buckets
  FlashPageReader reader(page);
  FlashRecord r;
  uint32_t offset = 0;
  size_t end = kFlashPageHeaderSize;
  while (reader.Next(&r, &offset)) {
    Check(offset == end);
    const size_t size = FlashRecordSize(r.key.size(), r.value.size());
    Check(offset + size <= page.size());
    Check(!r.key.empty() && r.key.size() <= 250);
    Check(r.generation == reader.generation());
    std::string again(size, '\0');
    EncodeFlashRecord(r.generation, r.cas, r.key, r.value, again.data());
    Check(std::memcmp(again.data(), page.data() + offset, size) == 0);
    FlashRecord checked;
    Check(CheckFlashRead(page.substr(offset), r.generation, r.key,
                         static_cast<uint32_t>(r.value.size()), &checked) == FlashReadCheck::kOk);
    end = offset + size;
  }
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    Walk(in);
  } else {
    std::string page(kFlashPageHeaderSize, '\0');
    EncodeFlashPageHeader({1, static_cast<uint8_t>((data[0] >> 1) % 6)}, page.data());
    page.append(in);
    Walk(page);
  }
  return 0;
}
