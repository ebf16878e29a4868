#include "storage/item.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace herdless {
namespace {

std::vector<char> Encode(const ItemFields& f, std::string_view value) {
  std::vector<char> mem(ItemSize(f));
  ItemView v = WriteItem(mem.data(), f);
  std::memcpy(v.value_data(), value.data(), value.size());
  return mem;
}

TEST(ItemFormatTest, AnItemWithoutTtlOrFlagsHasAThirteenByteHeader) {
  ItemFields f;
  f.key = "key:0000000001";
  f.value_len = 1000;
  f.cas = 123;
  const std::vector<char> mem = Encode(f, std::string(1000, 'v'));
  EXPECT_EQ(mem.size(), 13u + 14 + 1000);
  ItemView v(mem.data());
  EXPECT_EQ(v.header_size(), 13u);
  EXPECT_EQ(v.size(), mem.size());
  EXPECT_EQ(v.key(), "key:0000000001");
  EXPECT_EQ(v.value(), std::string(1000, 'v'));
  EXPECT_EQ(v.exptime(), 0);
  EXPECT_EQ(v.client_flags(), 0u);
  // A TTL and client flags add four bytes each.
  f.exptime = 500;
  f.client_flags = 7;
  EXPECT_EQ(ItemSize(f), 13u + 8 + 14 + 1000);
}

TEST(ItemFormatTest, EveryFieldRoundTrips) {
  for (uint32_t value_len : {0u, 1u, 255u, 256u, 1023u, 1024u, 70000u}) {
    ItemFields f;
    f.key = "k";
    f.value_len = value_len;
    f.cas = kNarrowCasLimit - 1;
    f.last_access = -5;
    f.exptime = 123456;
    f.client_flags = 0xFFFFFFFFu;
    f.delta_ms = 250;
    f.read_rate.count = 0x8123;
    f.read_rate.aux = 0x9f;
    const std::vector<char> mem = Encode(f, std::string(value_len, 'x'));
    ItemView v(mem.data());
    EXPECT_EQ(v.value_len(), value_len);
    EXPECT_EQ(v.value(), std::string(value_len, 'x'));
    EXPECT_EQ(v.key(), "k");
    EXPECT_EQ(v.cas(), kNarrowCasLimit - 1);
    EXPECT_EQ(v.last_access(), -5);
    EXPECT_EQ(v.exptime(), 123456);
    EXPECT_EQ(v.client_flags(), 0xFFFFFFFFu);
    EXPECT_EQ(v.delta_ms(), 250);
    EXPECT_EQ(v.read_rate().count, 0x8123);
    EXPECT_EQ(v.read_rate().aux, 0x9f);
    const ItemFields back = v.Fields();
    EXPECT_EQ(ItemSize(back), mem.size());
  }
}

TEST(ItemFormatTest, WideCasIsStoredWhole) {
  ItemFields f;
  f.key = "k";
  f.cas = UINT64_MAX - 1;
  const std::vector<char> mem = Encode(f, "");
  ItemView v(mem.data());
  EXPECT_EQ(v.cas(), UINT64_MAX - 1);
  EXPECT_EQ(v.header_size(), 15u);
}

TEST(ItemFormatTest, InPlaceChangesFitOnlyWhereTheFieldIs) {
  ItemFields f;
  f.key = "k";
  f.value_len = 1;
  f.cas = 5;
  std::vector<char> mem = Encode(f, "v");
  ItemView v(mem.data());
  EXPECT_TRUE(v.CanHoldCas(kNarrowCasLimit - 1));
  EXPECT_FALSE(v.CanHoldCas(kNarrowCasLimit));
  EXPECT_TRUE(v.CanHoldExptime(0));
  EXPECT_FALSE(v.CanHoldExptime(100));
  EXPECT_FALSE(v.CanHoldDelta(1));
  v.set_cas(99);
  v.set_last_access(77);
  EXPECT_EQ(v.cas(), 99u);
  EXPECT_EQ(v.last_access(), 77);
  EXPECT_EQ(v.value(), "v");
  // A full header (jumbo items) holds every change.
  f.full_header = true;
  mem = Encode(f, "v");
  ItemView w(mem.data());
  EXPECT_TRUE(w.CanHoldCas(UINT64_MAX));
  EXPECT_TRUE(w.CanHoldExptime(100));
  EXPECT_TRUE(w.CanHoldDelta(1));
  w.set_exptime(100);
  w.set_delta_ms(3);
  w.set_cas(UINT64_MAX);
  EXPECT_EQ(w.exptime(), 100);
  EXPECT_EQ(w.delta_ms(), 3);
  EXPECT_EQ(w.cas(), UINT64_MAX);
  EXPECT_EQ(w.value(), "v");
}

TEST(ItemFormatTest, MemcachedSizesAndClassesAreMemcachedsDefaults) {
  // 14-byte key, 100-byte value: 48 + 8 + 15 + 102 = 173 bytes, class 4 (192).
  EXPECT_EQ(MemcachedItemSize(14, 100, 0), 173u);
  EXPECT_EQ(MemcachedSlabClass(173), 4);
  EXPECT_EQ(MemcachedChunkSize(4), 192u);
  EXPECT_EQ(MemcachedItemSize(14, 1000, 0), 1073u);
  EXPECT_EQ(MemcachedChunkSize(MemcachedSlabClass(1073)), 1184u);
  EXPECT_EQ(MemcachedSlabClass(1), 1);
  EXPECT_EQ(MemcachedChunkSize(1), 96u);
  EXPECT_EQ(MemcachedChunkSize(kMemcachedClasses), 512u * 1024);
  EXPECT_EQ(MemcachedSlabClass(2u << 20), kMemcachedClasses);
  for (int c = 1; c < kMemcachedClasses; c++) EXPECT_LT(MemcachedChunkSize(c), MemcachedChunkSize(c + 1));
}

// A value on flash: memcached keeps the key in a header item with a 12-byte
// item_hdr. Classes memcached 1.6.45 reported for 1000-byte values on
// extstore (watch lines, stats items): 7-byte key with flags 3 and 20-byte key
// with flags 3 in class 1, 40-byte key with flags 0 in class 2.
TEST(ItemFormatTest, AFlashValuesHeaderItemIsInMemcachedsClass) {
  EXPECT_EQ(MemcachedFlashHeaderSize(7, 3), 48u + 8 + 12 + 4 + 8);
  EXPECT_EQ(MemcachedSlabClass(MemcachedFlashHeaderSize(7, 3)), 1);
  EXPECT_EQ(MemcachedSlabClass(MemcachedFlashHeaderSize(20, 3)), 1);
  EXPECT_EQ(MemcachedSlabClass(MemcachedFlashHeaderSize(40, 0)), 2);
}

// Small sizes are looked up in a table, large ones searched: every size's
// class is the first whose chunk holds it, on both sides of the switch.
TEST(ItemFormatTest, EverySizeGetsTheSmallestClassThatHoldsIt) {
  int expected = 1;
  for (uint64_t size = 1; size <= 600 * 1024; size++) {
    while (expected < kMemcachedClasses && MemcachedChunkSize(expected) < size) expected++;
    ASSERT_EQ(MemcachedSlabClass(size), expected) << "size " << size;
  }
}

}  // namespace
}  // namespace herdless
