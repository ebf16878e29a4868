// Ketama and the nutcracker YAML reader (protocol/ketama.h, ring_config.h, ring.h).
// The hash figures are twemproxy 0.5's hashkit's on the same keys; ownership
// against a live nutcracker is tests/integration/test_cluster.py's.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "protocol/ketama.h"
#include "protocol/cluster_ring.h"
#include "protocol/foreign_log.h"
#include "protocol/ring_config.h"
#include "storage/clock.h"
#include "storage/foreign.h"
#include "storage/item_store.h"
#include "storage/random.h"
#include "tests/unit/test_support.h"

namespace herdless {
namespace {

const std::string kKeys[] = {"", "a", "foo", "key:1", "hello world", "\xc3\xa9t\xe9",
                             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"};

struct HashCase {
  const char* name;
  uint32_t want[7];
};
const HashCase kHashCases[] = {
    {"one_at_a_time", {0x00000000u, 0xca2e9442u, 0x238678ddu, 0xa2b61284u, 0x3e4a5a57u, 0x42994dc0u, 0x249d4bf9u}},
    {"md5", {0xd98c1dd4u, 0xb975c10cu, 0xdb18bdacu, 0x3cb0c47au, 0xbb3bb65eu, 0xc8d74bedu, 0x8916b55bu}},
    {"crc32", {0x00000000u, 0x000068b7u, 0x00000c73u, 0x00000b6fu, 0x00000d4au, 0x00000190u, 0x000020c7u}},
    {"crc32a", {0x00000000u, 0xe8b7be43u, 0x8c736521u, 0x0b6f3becu, 0x0d4a1185u, 0x01901e35u, 0x20c7936fu}},
    {"fnv1_64", {0x84222325u, 0x8601b7beu, 0x6ba13533u, 0xfdc93305u, 0xb1910e6fu, 0x4a315c60u, 0xdb254e0fu}},
    {"fnv1a_64", {0x84222325u, 0x8601ec8cu, 0xfed9d577u, 0x962f5ac9u, 0x023cd2e7u, 0x9b6a6b92u, 0xfa3aa3cfu}},
    {"fnv1_32", {0x811c9dc5u, 0x050c5d7eu, 0x408f5e13u, 0x8964f7a5u, 0x548da96fu, 0x871feea0u, 0x1047abcfu}},
    {"fnv1a_32", {0x811c9dc5u, 0xe40c292cu, 0xa9f37ed7u, 0x58140fa9u, 0xd58b3fa7u, 0xecfaba72u, 0x93580dcfu}},
    {"murmur", {0x00000000u, 0x4b41757cu, 0xc4e0338fu, 0xdc094157u, 0x5e19153bu, 0x9563ba60u, 0xc7f17f0eu}},
};

TEST(KetamaTest, HashesAreNutcrackers) {
  for (const HashCase& c : kHashCases) {
    RingHash h;
    ASSERT_TRUE(ParseRingHash(c.name, &h)) << c.name;
    EXPECT_STREQ(RingHashName(h), c.name);
    for (size_t k = 0; k < 7; k++) EXPECT_EQ(HashKey(h, kKeys[k]), c.want[k]) << c.name << " of key " << k;
  }
  RingHash h;
  EXPECT_FALSE(ParseRingHash("hsieh", &h));
  EXPECT_FALSE(ParseRingHash("", &h));
}

std::string Hex(std::string_view data) {
  uint8_t d[16];
  Md5(data, d);
  std::string out;
  for (uint8_t b : d) {
    out += "0123456789abcdef"[b >> 4];
    out += "0123456789abcdef"[b & 15];
  }
  return out;
}

TEST(KetamaTest, Md5IsRfc1321s) {
  struct {
    std::string in;
    const char* want;
  } cases[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
      {std::string(55, 'x'), "04364420e25c512fd958a70738aa8f72"},   // one block exactly
      {"127.0.0.1:11212-0", "19d09d262da7decb5089ba052761e2f8"},    // a ketama point
  };
  for (const auto& c : cases) EXPECT_EQ(Hex(c.in), c.want) << c.in;
}

RingPool Pool(std::vector<uint32_t> weights) {
  RingPool pool;
  pool.name = "p";
  for (size_t i = 0; i < weights.size(); i++) {
    RingServer s;
    s.listed = "10.0.0." + std::to_string(i + 1) + ":11212";
    s.name = s.listed;
    s.weight = weights[i];
    pool.servers.push_back(s);
  }
  return pool;
}

TEST(KetamaTest, WeightsShareTheKeys) {
  std::string error;
  auto ring = ClusterRing::Make(Pool({1, 1, 2}), "10.0.0.1:11212", &error);
  ASSERT_NE(ring, nullptr) << error;
  int owned[3] = {0, 0, 0};
  for (int i = 0; i < 40000; i++) owned[ring->Owner("key:" + std::to_string(i))]++;
  // Shares near 1/4, 1/4, 1/2: ketama's points are 160 per server scaled by weight.
  EXPECT_GT(owned[2], owned[0] + owned[1] - 8000);
  EXPECT_GT(owned[0], 6000);
  EXPECT_GT(owned[1], 6000);
}

TEST(KetamaTest, AJoiningNodeTakesKeysOnlyFromTheOthers) {
  std::string error;
  auto ring = ClusterRing::Make(Pool({1, 1, 1, 1}), "10.0.0.4:11212", &error);
  ASSERT_NE(ring, nullptr) << error;
  // The ring without node 3 is the pool nutcracker had before it joined.
  auto before = ClusterRing::Make(Pool({1, 1, 1}), "10.0.0.1:11212", &error);
  ASSERT_NE(before, nullptr) << error;
  int moved = 0;
  for (int i = 0; i < 20000; i++) {
    const std::string key = "user:" + std::to_string(i);
    EXPECT_NE(ring->PreviousOwner(key), 3);
    EXPECT_EQ(ring->PreviousOwner(key), before->Owner(key)) << key;
    if (ring->Mine(key)) {
      moved++;
    } else {
      EXPECT_EQ(ring->Owner(key), ring->PreviousOwner(key)) << key;   // only keys of the new node move
    }
  }
  EXPECT_GT(moved, 20000 / 4 - 2000);
  EXPECT_LT(moved, 20000 / 4 + 2000);
}

TEST(KetamaTest, OneServerOwnsEverything) {
  std::string error;
  auto ring = ClusterRing::Make(Pool({3}), "10.0.0.1:11212", &error);
  ASSERT_NE(ring, nullptr) << error;
  EXPECT_TRUE(ring->Mine("anything"));
  EXPECT_EQ(ring->PreviousOwner("anything"), -1);
}

TEST(RingConfigTest, ReadsNutcrackerPools) {
  const char* yaml =
      "# two pools\n"
      "alpha:\n"
      "  listen: 127.0.0.1:22121\n"
      "  hash: murmur   # a comment\n"
      "  hash_tag: \"{}\"\n"
      "  distribution: ketama\n"
      "  auto_eject_hosts: true\n"
      "  servers:\n"
      "   - 127.0.0.1:11212:1\n"
      "   - 127.0.0.1:11211:2\n"
      "   - 10.0.0.9:11213:1 cache-c\n"
      "   - /run/mc.sock:1\n"
      "beta:\n"
      "  listen: 127.0.0.1:22122\n"
      "  servers:\n"
      "  - 'h:1:1'\n";
  std::vector<RingPool> pools;
  std::string error;
  ASSERT_TRUE(ParseRingConfig(yaml, &pools, &error)) << error;
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].name, "alpha");
  EXPECT_EQ(pools[0].hash, RingHash::kMurmur);
  EXPECT_EQ(pools[0].hash_tag, "{}");
  ASSERT_EQ(pools[0].servers.size(), 4u);
  struct {
    const char* listed;
    const char* name;
    uint32_t weight;
    int port;
  } want[] = {{"127.0.0.1:11212", "127.0.0.1:11212", 1, 11212},
              {"127.0.0.1:11211", "127.0.0.1", 2, 11211},   // libmemcached drops port 11211
              {"10.0.0.9:11213", "cache-c", 1, 11213},
              {"/run/mc.sock", "/run/mc.sock", 1, 0}};
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(pools[0].servers[i].listed, want[i].listed);
    EXPECT_EQ(pools[0].servers[i].name, want[i].name);
    EXPECT_EQ(pools[0].servers[i].weight, want[i].weight);
    EXPECT_EQ(pools[0].servers[i].port, want[i].port);
  }
  EXPECT_EQ(pools[1].hash, RingHash::kFnv1a_64);   // nutcracker's default
  ASSERT_EQ(pools[1].servers.size(), 1u);
  EXPECT_EQ(pools[1].servers[0].host, "h");
}

TEST(RingConfigTest, RefusesWhatNutcrackerRefuses) {
  const char* bad[] = {
      "",                                               // no pool
      "  hash: md5\n",                                  // a key before a pool
      "a:\n  hash: hsieh\n",                            // a hash herdless lacks
      "a:\n  servers:\n   - 127.0.0.1:11211\n",         // no weight
      "a:\n  servers:\n   - 127.0.0.1:11211:0\n",       // weight 0
      "a:\n  servers:\n   - 127.0.0.1:99999:1\n",       // bad port
      "a:\n  servers:\n   - :1\n",                      // no host
      "a:\n  servers:\n\t- h:1:1\n",                    // a tab
      "a:\n  hash_tag: \"{\"\n",                        // one character
      "a:\n  hash: \"md5\n",                            // unbalanced quote
      "- h:1:1\n",                                      // a list outside servers
      "a: b\n",                                         // a pool is a mapping
  };
  for (const char* yaml : bad) {
    std::vector<RingPool> pools;
    std::string error;
    EXPECT_FALSE(ParseRingConfig(yaml, &pools, &error)) << yaml;
    EXPECT_NE(error, "") << yaml;
  }
}

TEST(RingConfigTest, HashTagPicksThePartHashed) {
  struct {
    const char* key;
    const char* tag;
    const char* want;
  } cases[] = {{"user:{42}:name", "{}", "42"}, {"user:{}:name", "{}", "user:{}:name"},
               {"no-tag", "{}", "no-tag"},     {"a{b", "{}", "a{b"},
               {"x$y$z", "$$", "y"},            {"user:{42}", "", "user:{42}"}};
  for (const auto& c : cases) EXPECT_EQ(HashedPart(c.key, c.tag), c.want) << c.key;
}

TEST(RingTest, SelfIsFoundByAddressOrName) {
  std::vector<RingPool> pools;
  std::string error;
  ASSERT_TRUE(ParseRingConfig("a:\n  servers:\n   - 127.0.0.1:5000:1 one\n   - 127.0.0.1:5001:1\n", &pools, &error));
  EXPECT_NE(ClusterRing::Make(pools[0], "127.0.0.1:5000", &error), nullptr);
  EXPECT_NE(ClusterRing::Make(pools[0], "one", &error), nullptr);
  EXPECT_EQ(ClusterRing::Make(pools[0], "127.0.0.1:5002", &error), nullptr);
  pools[0].distribution = "modula";
  EXPECT_EQ(ClusterRing::Make(pools[0], "one", &error), nullptr);
}

TEST(ForeignTest, CapExptime) {
  constexpr int64_t kNow = 1700000000;
  struct {
    int64_t exptime, want;
  } cases[] = {
      {0, 60},                  // never: capped
      {30, 30},                 // shorter: kept
      {60, 60},   {61, 60},     // relative
      {-1, -1},                 // already gone
      {kNow + 30, kNow + 30},   // a Unix time within the cap: kept
      {kNow + 3600, 60},        // beyond: the cap, relative
      {kNow - 5, kNow - 5},     // a past Unix time: still gone
  };
  for (const auto& c : cases) EXPECT_EQ(CapExptime(c.exptime, 60, kNow), c.want) << c.exptime;
}

// node1 of three; keys owned by node2 are foreign here.
std::unique_ptr<ClusterRing> ThreeNodes() {
  std::string error;
  return ClusterRing::Make(Pool({1, 1, 1}), "10.0.0.1:11212", &error);
}

std::string KeyOf(const ClusterRing& ring, int owner, int n) {
  for (int i = 0;; i++) {
    std::string key = "k" + std::to_string(i);
    if (ring.Owner(key) == owner && n-- == 0) return key;
  }
}

TEST(ForeignTest, TheLogHandsEachOwnerItsKeysOnce) {
  auto ring = ThreeNodes();
  ForeignLog log(ring.get(), 60);
  const std::string a = KeyOf(*ring, 1, 0), b = KeyOf(*ring, 1, 1), c = KeyOf(*ring, 2, 0);
  EXPECT_FALSE(log.Foreign(KeyOf(*ring, 0, 0)));
  EXPECT_TRUE(log.Foreign(a));
  log.Changed(a);
  log.Changed(a);   // once in the list
  log.Changed(b);
  log.Changed(c);
  EXPECT_EQ(log.Stats().foreign_sets, 4u);
  EXPECT_EQ(log.Stats().foreign_logged, 3u);
  bool overflowed = true;
  std::vector<std::string> got = log.Take(1, &overflowed);
  std::sort(got.begin(), got.end());
  std::vector<std::string> want = {a, b};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_FALSE(overflowed);
  EXPECT_TRUE(log.Take(1, &overflowed).empty());   // handed over: cleared
  EXPECT_EQ(log.Take(2, &overflowed), std::vector<std::string>{c});
  EXPECT_EQ(log.Stats().foreign_logged, 0u);
  EXPECT_EQ(log.Stats().foreign_handed, 3u);
}

TEST(ForeignTest, TheStoreCapsForeignTtlsAndReportsChanges) {
  auto ring = ThreeNodes();
  ForeignLog log(ring.get(), 60);
  ManualClock clock;
  DefaultRandom random;
  StoreConfig config;
  config.clock = &clock;
  config.random = &random;
  config.foreign = &log;
  ItemStore store(config);
  const std::string mine = KeyOf(*ring, 0, 0), theirs = KeyOf(*ring, 1, 0);
  for (const std::string& key : {mine, theirs}) {
    StoreRequest req;
    req.key = key;
    req.value = "v";
    req.exptime = 3600;
    ASSERT_EQ(store.Store(req).status, StoreStatus::kStored);
  }
  ReadOptions opts;
  EXPECT_EQ(store.Read(mine, opts).ttl_before, 3600);
  EXPECT_EQ(store.Read(theirs, opts).ttl_before, 60);
  EXPECT_TRUE(store.Touch(theirs, 0));
  EXPECT_EQ(store.Read(theirs, opts).ttl_before, 60);   // touch: capped too
  DeleteRequest del;
  del.key = theirs;
  EXPECT_EQ(store.Delete(del), DeleteStatus::kDeleted);
  EXPECT_EQ(log.Stats().foreign_sets, 3u);   // the store, the touch, the delete
  EXPECT_EQ(log.Stats().foreign_hits, 2u);
  bool overflowed;
  EXPECT_EQ(log.Take(1, &overflowed), std::vector<std::string>{theirs});
}

// curr_foreign_items follows every way an item comes and goes, as curr_items does.
TEST(ForeignTest, CurrForeignItemsCountsEveryWayAnItemComesAndGoes) {
  auto ring = ThreeNodes();
  ForeignLog log(ring.get(), 60);
  ManualClock clock(1700000000);
  clock.AdvanceSeconds(100);
  DefaultRandom random;
  StoreConfig config = DrivenStoreConfig(&clock, &random);
  config.foreign = &log;
  ItemStore store(config);
  const std::string a = KeyOf(*ring, 1, 0), b = KeyOf(*ring, 2, 0), mine = KeyOf(*ring, 0, 0);
  enum Op { kSet, kDelete, kAdvance70, kRead, kFlushNow, kFlushIn1, kReclaim };
  struct Step {
    Op op;
    std::string key;
    int64_t exptime;
    uint64_t want_foreign, want_items;
  };
  const Step steps[] = {
      {kSet, a, 0, 1, 1},     {kSet, a, 0, 1, 1},      // overwrite: still one
      {kSet, mine, 0, 1, 2},  {kSet, b, 10, 2, 3},     {kDelete, a, 0, 1, 2},
      {kDelete, a, 0, 1, 2},  // a miss
      {kAdvance70, "", 0, 1, 2}, {kRead, b, 0, 0, 1},  // expired (capped or not), gone on access
      {kSet, a, 0, 1, 2},     {kAdvance70, "", 0, 1, 2}, {kReclaim, "", 0, 0, 1},  // capped at 60: the crawl takes it
      {kSet, a, 0, 1, 2},     {kSet, b, 0, 2, 3},      {kFlushNow, "", 0, 0, 0},
      {kSet, a, 0, 1, 1},     {kSet, b, 0, 2, 2},      {kFlushIn1, "", 0, 2, 2},   // a delayed flush is lazy ...
      {kRead, a, 0, 1, 1},    {kReclaim, "", 0, 0, 0},  // ... and counted as its items go
  };
  for (size_t i = 0; i < std::size(steps); i++) {
    const Step& st = steps[i];
    switch (st.op) {
      case kSet: {
        StoreRequest req;
        req.key = st.key;
        req.value = "v";
        req.exptime = st.exptime;
        ASSERT_EQ(store.Store(req).status, StoreStatus::kStored) << i;
        break;
      }
      case kDelete: {
        DeleteRequest del;
        del.key = st.key;
        store.Delete(del);
        break;
      }
      case kAdvance70: clock.AdvanceSeconds(70); break;
      case kRead: store.Read(st.key, ReadOptions{}); break;
      case kFlushNow: store.FlushAll(0); break;
      case kFlushIn1:
        store.FlushAll(1);
        clock.AdvanceSeconds(1);
        break;
      case kReclaim: store.ReclaimExpired(1000); break;
    }
    EXPECT_EQ(store.Stats().curr_foreign_items, st.want_foreign) << "step " << i;
    EXPECT_EQ(store.Stats().curr_items, st.want_items) << "step " << i;
  }
}

// Eviction keeps a read item of ours (it moves to the main queue) but never
// a foreign one, read or not.
TEST(ForeignTest, EvictionTakesForeignItemsFirst) {
  auto ring = ThreeNodes();
  ForeignLog log(ring.get(), 60);
  ManualClock clock(1700000000);
  clock.AdvanceSeconds(100);
  DefaultRandom random;
  StoreConfig config = DrivenStoreConfig(&clock, &random, 0);
  config.memory_limit = 64 * 1024;   // four 16 KiB segments
  config.foreign = &log;
  ItemStore store(config);
  const std::string value(100, 'v');
  std::vector<std::string> mine, theirs;
  for (int i = 0; i < 20; i++) {
    mine.push_back(KeyOf(*ring, 0, i));
    theirs.push_back(KeyOf(*ring, 1 + i % 2, i / 2));
  }
  for (int i = 0; i < 20; i++) {
    for (const std::string& key : {mine[i], theirs[i]}) {
      StoreRequest req;
      req.key = key;
      req.value = value;
      ASSERT_EQ(store.Store(req).status, StoreStatus::kStored);
      ASSERT_EQ(store.Read(key, ReadOptions{}).status, ReadStatus::kHit);   // read once: worth keeping
    }
  }
  ASSERT_EQ(store.Stats().curr_foreign_items, 20u);
  // Fill with keys of ours, never read, until the foreign ones are gone: one
  // pass over the four segments is enough.
  int filled = 0;
  for (int i = 0; store.Stats().curr_foreign_items != 0; i++) {
    const std::string key = "fill" + std::to_string(i);
    if (!ring->Mine(key)) continue;
    ASSERT_LT(filled++, 1000);
    StoreRequest req;
    req.key = key;
    req.value = value;
    ASSERT_EQ(store.Store(req).status, StoreStatus::kStored);
  }
  for (const std::string& key : mine) {
    EXPECT_EQ(store.Read(key, ReadOptions{}).status, ReadStatus::kHit) << key;
  }
  for (const std::string& key : theirs) {
    EXPECT_EQ(store.Read(key, ReadOptions{}).status, ReadStatus::kMiss) << key;
  }
}

}  // namespace
}  // namespace herdless
