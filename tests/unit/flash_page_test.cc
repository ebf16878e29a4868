// The flash page format: records round-trip, and every damaged or foreign
// byte pattern decodes to a refusal, never to a wrong value.
#include "storage/flash_page.h"
#include "storage/le_bytes.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>
#include <vector>

namespace herdless {
namespace {

std::string Record(uint32_t generation, uint64_t cas, std::string_view key, std::string_view value) {
  std::string out(FlashRecordSize(key.size(), value.size()), '\0');
  EncodeFlashRecord(generation, cas, key, value, out.data());
  return out;
}

std::string PageHeader(uint32_t generation, uint8_t bucket = 0) {
  std::string out(kFlashPageHeaderSize, '\0');
  EncodeFlashPageHeader({generation, bucket}, out.data());
  return out;
}

// A header with these flags under a checksum that matches.
std::string PageHeaderWithFlags(uint32_t generation, uint32_t flags) {
  std::string out = PageHeader(generation);
  le_bytes::Put32(out.data() + 8, flags);
  le_bytes::Put32(out.data() + 12, XXH32(out.data(), 12, 0));
  return out;
}

TEST(FlashPageTest, RecordsRoundTrip) {
  struct Case {
    uint32_t generation;
    uint64_t cas;
    std::string key;
    std::string value;
  };
  const Case cases[] = {
      {1, 1, "k", ""},
      {7, 0xffffffffffffull, "foo", "bar"},
      {UINT32_MAX, UINT64_MAX, std::string(250, 'K'), std::string(70000, 'v')},
      {3, 9, "bin", std::string("\0\r\n\xff", 4)},
  };
  for (const Case& c : cases) {
    const std::string bytes = Record(c.generation, c.cas, c.key, c.value) + "trailing";
    FlashRecord r;
    size_t size = 0;
    ASSERT_EQ(DecodeFlashRecord(bytes, &r, &size), FlashRecordStatus::kOk) << c.key;
    EXPECT_EQ(size, FlashRecordSize(c.key.size(), c.value.size()));
    EXPECT_EQ(r.generation, c.generation);
    EXPECT_EQ(r.cas, c.cas);
    EXPECT_EQ(r.key, c.key);
    EXPECT_EQ(r.value, c.value);
    EXPECT_EQ(CheckFlashRead(bytes, c.generation, c.key, c.value.size(), &r), FlashReadCheck::kOk);
  }
}

TEST(FlashPageTest, DamageIsRefused) {
  const std::string good = Record(5, 42, "key", "value");
  struct Case {
    const char* what;
    std::string bytes;
    FlashRecordStatus status;
  };
  std::string flipped_value = good;
  flipped_value.back() ^= 1;
  std::string flipped_cas = good;
  flipped_cas[13] ^= 0x40;
  std::string flipped_sum = good;
  flipped_sum[0] ^= 1;
  std::string long_value = good;
  long_value[8] = 100;   // value length past the bytes
  std::string no_key = good;
  no_key[20] = 0;
  std::string big_key = good;
  big_key[20] = static_cast<char>(251);
  std::string reserved = good;
  reserved[21] = 1;
  const Case cases[] = {
      {"a value bit", flipped_value, FlashRecordStatus::kBadChecksum},
      {"a CAS bit", flipped_cas, FlashRecordStatus::kBadChecksum},
      {"the checksum", flipped_sum, FlashRecordStatus::kBadChecksum},
      {"the value length", long_value, FlashRecordStatus::kTruncated},
      {"cut short", good.substr(0, good.size() - 1), FlashRecordStatus::kTruncated},
      {"a key length of 0", no_key, FlashRecordStatus::kBadHeader},
      {"a key length over 250", big_key, FlashRecordStatus::kBadHeader},
      {"the reserved byte", reserved, FlashRecordStatus::kBadHeader},
      {"zero bytes", std::string(64, '\0'), FlashRecordStatus::kEnd},
      {"less than a header", good.substr(0, kFlashRecordHeaderSize - 1), FlashRecordStatus::kEnd},
  };
  for (const Case& c : cases) {
    FlashRecord r;
    size_t size = 0;
    EXPECT_EQ(DecodeFlashRecord(c.bytes, &r, &size), c.status) << c.what;
  }
}

TEST(FlashPageTest, AReadBackMustBeTheItemItWasFor) {
  const std::string bytes = Record(5, 42, "key", "value");
  struct Case {
    const char* what;
    uint32_t generation;
    std::string key;
    uint32_t value_len;
    FlashReadCheck check;
  };
  const Case cases[] = {
      {"the same", 5, "key", 5, FlashReadCheck::kOk},
      {"a reused page", 6, "key", 5, FlashReadCheck::kMismatch},
      {"another key", 5, "kez", 5, FlashReadCheck::kMismatch},
      {"another length", 5, "key", 4, FlashReadCheck::kMismatch},
  };
  for (const Case& c : cases) {
    FlashRecord r;
    EXPECT_EQ(CheckFlashRead(bytes, c.generation, c.key, c.value_len, &r), c.check) << c.what;
  }
  std::string damaged = bytes;
  damaged[kFlashRecordHeaderSize] ^= 1;
  FlashRecord r;
  EXPECT_EQ(CheckFlashRead(damaged, 5, "key", 5, &r), FlashReadCheck::kBadChecksum);
  EXPECT_EQ(CheckFlashRead(std::string(40, '\0'), 5, "key", 5, &r), FlashReadCheck::kMismatch);
}

TEST(FlashPageTest, PageHeaders) {
  FlashPageHeader header;
  ASSERT_TRUE(DecodeFlashPageHeader(PageHeader(77), &header));
  EXPECT_EQ(header.generation, 77u);
  EXPECT_EQ(header.bucket, 0);
  for (uint8_t bucket = 0; bucket < 6; ++bucket) {
    ASSERT_TRUE(DecodeFlashPageHeader(PageHeader(78, bucket), &header)) << int{bucket};
    EXPECT_EQ(header.generation, 78u);
    EXPECT_EQ(header.bucket, bucket);
  }
  // A low-TTL page written before buckets (bit 0 alone) is bucket 3's.
  ASSERT_TRUE(DecodeFlashPageHeader(PageHeaderWithFlags(79, 1), &header));
  EXPECT_EQ(header.bucket, 3);
  for (uint8_t bucket : {0, 3, 5}) {
    const std::string good = PageHeader(77, bucket);
    for (size_t i = 0; i < good.size(); ++i) {
      for (char bit : {1, 4}) {
        std::string d = good;
        d[i] ^= bit;
        EXPECT_FALSE(DecodeFlashPageHeader(d, &header)) << i << " " << int{bit} << " " << int{bucket};
      }
    }
  }
  // Flags this format does not know, under a checksum that matches, are refused too:
  // another bit, a bucket memcached does not have, bit 0 on a bucket not low-TTL.
  for (uint32_t flags : {2u, 0x10000u, 6u << 8, (1u << 8) | 1u}) {
    EXPECT_FALSE(DecodeFlashPageHeader(PageHeaderWithFlags(77, flags), &header)) << flags;
  }
  EXPECT_FALSE(DecodeFlashPageHeader(std::string(16, '\0'), &header));
  EXPECT_FALSE(DecodeFlashPageHeader(PageHeader(77).substr(0, 15), &header));
}

TEST(FlashPageTest, APageReaderStopsAtTheEndOfItsGeneration) {
  struct Case {
    const char* what;
    std::string page;
    std::vector<std::string> keys;
    FlashRecordStatus end;
  };
  const std::string a = Record(2, 1, "a", "1");
  const std::string b = Record(2, 2, "b", "22");
  const std::string old = Record(1, 3, "old", "333");   // an earlier use of the page
  std::string bad_b = b;
  bad_b.back() ^= 1;
  const Case cases[] = {
      {"two and zeros", PageHeader(2) + a + b + std::string(100, '\0'), {"a", "b"}, FlashRecordStatus::kEnd},
      {"exactly full", PageHeader(2) + a + b, {"a", "b"}, FlashRecordStatus::kEnd},
      {"an older tail", PageHeader(2) + a + old, {"a"}, FlashRecordStatus::kEnd},
      {"a damaged record", PageHeader(2) + a + bad_b + a, {"a"}, FlashRecordStatus::kBadChecksum},
      {"no page header", a + b, {}, FlashRecordStatus::kBadHeader},
      {"empty", PageHeader(2), {}, FlashRecordStatus::kEnd},
  };
  for (const Case& c : cases) {
    FlashPageReader reader(c.page);
    FlashRecord r;
    uint32_t offset = 0;
    std::vector<std::string> keys;
    std::vector<uint32_t> offsets;
    while (reader.Next(&r, &offset)) {
      keys.emplace_back(r.key);
      offsets.push_back(offset);
    }
    EXPECT_EQ(keys, c.keys) << c.what;
    EXPECT_EQ(reader.status(), c.end) << c.what;
    if (!offsets.empty()) {
      EXPECT_EQ(offsets[0], kFlashPageHeaderSize) << c.what;
    }
    if (offsets.size() > 1) {
      EXPECT_EQ(offsets[1], kFlashPageHeaderSize + a.size()) << c.what;
    }
  }
}

}  // namespace
}  // namespace herdless
