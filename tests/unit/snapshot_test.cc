#include "storage/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "storage/item_store.h"
#include "storage/read_rate.h"

namespace herdless {
namespace {

using snapshot_format::kBlockHeaderSize;
using snapshot_format::kHeaderSize;
using snapshot_format::kRecordHeaderSize;

constexpr int64_t kUnixStart = 1700000000;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A store with its own clock, as a process would have.
struct TestStore {
  explicit TestStore(StoreConfig config, int64_t unix_start = kUnixStart, int shard_bits = 2)
      : clock(unix_start), random(7) {
    clock.AdvanceSeconds(100);   // store time 100: far from the "0 = never" edge
    config.clock = &clock;
    config.random = &random;
    config.shard_bits = shard_bits;
    store = std::make_unique<ItemStore>(config);
  }
  ManualClock clock;
  DefaultRandom random;
  std::unique_ptr<ItemStore> store;

  StoreResult Put(std::string_view key, std::string_view value, int64_t exptime = 0,
                  uint32_t flags = 0, bool binary_key = false) {
    StoreRequest req;
    req.key = key;
    req.value = value;
    req.exptime = exptime;
    req.client_flags = flags;
    req.binary_key = binary_key;
    return store->Store(req);
  }
  // A meta read that changes nothing (no bump), to look at an item.
  ReadResult Peek(std::string_view key) {
    ReadOptions opts;
    opts.kind = ReadKind::kMeta;
    opts.bump = false;
    return store->Read(key, opts);
  }
  void Bump(std::string_view key, int times) {
    for (int i = 0; i < times; i++) store->Read(key, ReadOptions());
  }
};

// Loads a snapshot file held in `file` into `store`.
SnapshotLoadResult LoadBytes(ItemStore* store, const std::string& file) {
  MemorySource source(file);
  return LoadSnapshotFrom(store, source, SnapshotLoadOptions());
}

class SnapshotTest : public ::testing::Test {
 protected:
  SnapshotTest() {
    char dir[] = "/tmp/herdless-snapshot-test-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/snapshot";
  }
  ~SnapshotTest() override {
    for (const char* suffix : {"", ".tmp"}) unlink((path_ + suffix).c_str());
    rmdir(dir_.c_str());
  }

  SnapshotWriteResult Write(ItemStore* store, SnapshotWriteOptions options = {}) {
    options.sync = false;   // tests need no durability
    return WriteSnapshot(store, path_, options);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SnapshotTest, EveryItemComesBackWithItsMetadata) {
  StoreConfig config;
  config.memory_limit = 16 << 20;
  TestStore a(config);
  std::map<std::string, std::string> values;
  for (int i = 0; i < 2000; i++) {
    const std::string key = "key" + std::to_string(i);
    std::string value(static_cast<size_t>(i % 300), static_cast<char>(i));
    if (i % 100 == 7) value.assign(3000 + i, 'b');    // pinned, copied after the lock
    if (i % 500 == 9) value.assign(100000, 'j');      // a block of its own
    ASSERT_EQ(a.Put(key, value, i % 3 == 0 ? 0 : 1000 + i, static_cast<uint32_t>(i * 7919)).status,
              StoreStatus::kStored);
    values[key] = value;
  }
  a.Put("b64key", "binary", 0, 0, /*binary_key=*/true);
  values["b64key"] = "binary";
  a.Bump("key5", 3);
  a.Bump("key6", 1);
  DeleteRequest invalidate;
  invalidate.key = "key8";
  invalidate.mark_stale = true;
  ASSERT_EQ(a.store->Delete(invalidate), DeleteStatus::kDeleted);
  RestoreRequest measured;   // an item whose recompute time was measured
  measured.key = "measured";
  measured.value = "m";
  measured.delta_ms = 250;
  ASSERT_EQ(a.store->Restore(measured), StoreStatus::kStored);
  values["measured"] = "m";

  a.clock.AdvanceSeconds(30);
  SnapshotWriteOptions options;
  options.block_bytes = 16 << 10;
  const SnapshotWriteResult w = Write(a.store.get(), options);
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_EQ(w.items, values.size());
  EXPECT_EQ(static_cast<uint64_t>(ReadFile(path_).size()), w.bytes);
  EXPECT_FALSE(Exists(path_ + ".tmp"));

  // Restarted 10 s later.
  TestStore b(config, kUnixStart + 40);
  const SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.loaded, values.size());
  EXPECT_EQ(l.skipped_expired + l.skipped_no_memory + l.skipped_too_large, 0u);
  EXPECT_EQ(l.stale, 1u);
  EXPECT_EQ(l.header.memory_limit, config.memory_limit);
  uint64_t max_cas = 0;
  for (const auto& [key, value] : values) {
    const ReadResult before = a.Peek(key);
    const ReadResult after = b.Peek(key);
    ASSERT_EQ(after.status, ReadStatus::kHit) << key;
    ASSERT_EQ(after.value, value) << key;
    EXPECT_EQ(after.client_flags, before.client_flags) << key;
    EXPECT_EQ(after.cas, before.cas) << key;
    // Both read 10 s apart in Unix time: the same absolute expiry.
    EXPECT_EQ(after.ttl_before, before.ttl_before == -1 ? -1 : before.ttl_before - 10) << key;
    EXPECT_EQ(after.seconds_since_access, before.seconds_since_access + 10) << key;
    EXPECT_EQ(after.frequency, before.frequency) << key;
    EXPECT_EQ(after.fetched_before, before.fetched_before) << key;
    EXPECT_EQ(after.stale, before.stale) << key;
    EXPECT_EQ(after.binary_key, before.binary_key) << key;
    EXPECT_EQ(after.recompute_ms, before.recompute_ms) << key;
    max_cas = std::max(max_cas, after.cas);
  }
  EXPECT_EQ(b.Peek("key5").frequency, 3);
  EXPECT_TRUE(b.Peek("key8").stale);
  EXPECT_TRUE(b.Peek("b64key").binary_key);
  EXPECT_EQ(b.Peek("measured").recompute_ms, 250);
  // New CAS values are above every CAS handed out before the restart.
  const uint64_t a_next = a.Put("later", "x").cas;
  EXPECT_GT(b.Put("new", "x").cas, std::max(max_cas, a_next - 1));
}

// A file written with another -m is loaded (it used to be refused whole):
// the smaller cache keeps the hottest items.
TEST_F(SnapshotTest, ASmallerCacheKeepsTheHottestItems) {
  StoreConfig big;
  big.memory_limit = 16 << 20;
  TestStore a(big);
  const std::string value(1000, 'v');
  for (int i = 0; i < 8000; i++) a.Put("cold" + std::to_string(i), value);
  a.clock.AdvanceSeconds(4000);   // the cold ones were last read over an hour ago
  for (int i = 0; i < 300; i++) {
    a.Put("hot" + std::to_string(i), value);
    a.Bump("hot" + std::to_string(i), 3);
  }
  ASSERT_TRUE(Write(a.store.get()).ok);

  StoreConfig small;
  small.memory_limit = 2 << 20;
  TestStore b(small, kUnixStart + 4000);
  const SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  for (int i = 0; i < 300; i++) EXPECT_EQ(b.Peek("hot" + std::to_string(i)).status, ReadStatus::kHit) << i;
  EXPECT_GT(l.skipped_no_memory, 4000u);
  EXPECT_EQ(l.loaded + l.skipped_no_memory, 8300u);
  EXPECT_EQ(b.store->Stats().evictions, 0u);
}

TEST_F(SnapshotTest, ExpiredItemsAreSkippedUnlessTheStaleGraceKeepsThem) {
  StoreConfig config;
  TestStore a(config);
  a.Put("short", "s", 10);
  a.Put("long", "l", 1000);
  ASSERT_TRUE(Write(a.store.get()).ok);

  TestStore b(config, kUnixStart + 20);   // 20 s later: "short" expired 10 s ago
  SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  EXPECT_EQ(l.loaded, 1u);
  EXPECT_EQ(l.skipped_expired, 1u);
  EXPECT_EQ(b.Peek("short").status, ReadStatus::kMiss);

  config.stale_grace_s = 60;
  TestStore c(config, kUnixStart + 20);
  l = LoadSnapshot(c.store.get(), path_, SnapshotLoadOptions());
  EXPECT_EQ(l.loaded, 2u);
  EXPECT_EQ(l.stale, 1u);
  const ReadResult first = c.Peek("short");
  EXPECT_EQ(first.status, ReadStatus::kHit);
  EXPECT_TRUE(first.stale);
  EXPECT_EQ(first.lease, LeaseVerdict::kWin);    // one reader recomputes
  EXPECT_EQ(c.Peek("short").lease, LeaseVerdict::kHeld);   // the next gets the stale value
  // Beyond the grace it is gone.
  c.clock.AdvanceSeconds(60);
  EXPECT_EQ(c.Peek("short").status, ReadStatus::kMiss);
}

TEST_F(SnapshotTest, ItemsOverTheCurrentItemSizeLimitAreSkippedAndCounted) {
  StoreConfig config;
  config.memory_limit = 16 << 20;
  TestStore a(config);
  a.Put("big", std::string(200000, 'x'));
  a.Put("small", "s");
  ASSERT_TRUE(Write(a.store.get()).ok);
  config.item_size_max = 64 << 10;
  TestStore b(config);
  const SnapshotLoadResult refused = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  EXPECT_EQ(refused.status, SnapshotLoadResult::Status::kInvalid);
  EXPECT_NE(refused.error.find("-I 1048576, this herdless runs"), std::string::npos) << refused.error;
  SnapshotLoadOptions any_size;
  any_size.require_same_item_size_max = false;
  const SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, any_size);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.loaded, 1u);
  EXPECT_EQ(l.skipped_too_large, 1u);
  EXPECT_EQ(b.Peek("small").value, "s");
}

// Every damaged variant of a good file is refused whole: nothing is restored.
TEST_F(SnapshotTest, ADamagedFileRestoresNothing) {
  StoreConfig config;
  TestStore a(config);
  for (int i = 0; i < 3000; i++) a.Put("k" + std::to_string(i), "value" + std::to_string(i), 0, 5);
  a.Bump("k1", 2);   // two hotness classes: blocks of both
  SnapshotWriteOptions options;
  options.block_bytes = 4096;
  ASSERT_TRUE(Write(a.store.get(), options).ok);
  const std::string good = ReadFile(path_);
  ASSERT_GT(good.size(), 20000u);

  std::vector<std::pair<std::string, std::string>> damaged;
  for (int tenth = 0; tenth < 10; tenth++) {
    damaged.emplace_back("cut at " + std::to_string(tenth) + "/10", good.substr(0, good.size() * tenth / 10));
  }
  damaged.emplace_back("last byte missing", good.substr(0, good.size() - 1));
  damaged.emplace_back("a byte too many", good + "x");
  auto flipped = [&](size_t at) {
    std::string s = good;
    s[at] = static_cast<char>(s[at] ^ 0x40);
    return s;
  };
  damaged.emplace_back("flip in the header magic", flipped(2));
  damaged.emplace_back("flip in the header's -m", flipped(17));
  damaged.emplace_back("flip in the version", flipped(8));
  damaged.emplace_back("flip in a block header", flipped(kHeaderSize + 13));
  damaged.emplace_back("flip in a checksum", flipped(kHeaderSize + 25));
  damaged.emplace_back("flip in a record's key", flipped(kHeaderSize + kBlockHeaderSize + kRecordHeaderSize));
  damaged.emplace_back("flip in the last block", flipped(good.size() - 3));
  std::mt19937 rng(42);
  std::string random_bytes(good.size(), '\0');
  for (char& c : random_bytes) c = static_cast<char>(rng());
  damaged.emplace_back("random bytes", random_bytes);
  damaged.emplace_back("random bytes after a good header", good.substr(0, kHeaderSize) + random_bytes);
  damaged.emplace_back("empty", "");
  damaged.emplace_back("text", "this is not a snapshot\n");
  // Two blocks swapped (each with a right checksum).
  const size_t first_block_len = kBlockHeaderSize + [&] {
    uint32_t len;
    std::memcpy(&len, good.data() + kHeaderSize + 12, 4);
    return len;
  }();
  {
    std::string s = good;
    std::string dup = good.substr(kHeaderSize, first_block_len);
    s.insert(kHeaderSize + first_block_len, dup);
    damaged.emplace_back("a block repeated", s);
  }

  for (const auto& [what, bytes] : damaged) {
    TestStore b(config);
    const SnapshotLoadResult l = LoadBytes(b.store.get(), bytes);
    EXPECT_EQ(l.status, SnapshotLoadResult::Status::kInvalid) << what;
    EXPECT_FALSE(l.error.empty()) << what;
    EXPECT_EQ(l.loaded, 0u) << what;
    EXPECT_EQ(b.store->Stats().curr_items, 0u) << what << ": " << l.error;
  }
  // The good one loads.
  TestStore b(config);
  EXPECT_EQ(LoadBytes(b.store.get(), good).loaded, 3000u);
}

TEST_F(SnapshotTest, AFailedOrCancelledWriteLeavesThePreviousFile) {
  StoreConfig config;
  TestStore a(config);
  for (int i = 0; i < 1000; i++) a.Put("k" + std::to_string(i), "v");
  ASSERT_TRUE(Write(a.store.get()).ok);
  const std::string before = ReadFile(path_);

  a.Put("extra", "e");
  std::atomic<bool> cancel{true};
  SnapshotWriteOptions options;
  options.cancel = &cancel;
  SnapshotWriteResult w = Write(a.store.get(), options);
  EXPECT_FALSE(w.ok);
  EXPECT_TRUE(w.cancelled);
  EXPECT_EQ(ReadFile(path_), before);
  EXPECT_FALSE(Exists(path_ + ".tmp"));

  w = WriteSnapshot(a.store.get(), dir_ + "/no/such/dir/snapshot", SnapshotWriteOptions());
  EXPECT_FALSE(w.ok);
  EXPECT_FALSE(w.cancelled);
  EXPECT_NE(w.error.find("No such file or directory"), std::string::npos) << w.error;
}

TEST_F(SnapshotTest, MissingAndNonRegularFiles) {
  StoreConfig config;
  TestStore b(config);
  SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  EXPECT_EQ(l.status, SnapshotLoadResult::Status::kMissing);
  l = LoadSnapshot(b.store.get(), dir_, SnapshotLoadOptions());
  EXPECT_EQ(l.status, SnapshotLoadResult::Status::kUnreadable);
  EXPECT_NE(l.error.find("not a regular file"), std::string::npos) << l.error;
}

// A FIFO at the path is refused at once: opening it to read used to wait for
// a writer, and the start with it.
TEST_F(SnapshotTest, AFifoIsRefusedWithoutWaiting) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  StoreConfig config;
  TestStore b(config);
  std::atomic<bool> done{false};
  SnapshotLoadResult l;
  std::thread load([&] {
    l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
    done = true;
  });
  for (int i = 0; i < 500 && !done; i++) usleep(10000);
  const bool returned = done;
  if (!returned) close(open(path_.c_str(), O_WRONLY | O_NONBLOCK));   // lets a blocked open return
  load.join();
  EXPECT_TRUE(returned) << "LoadSnapshot waited for a writer of the FIFO";
  EXPECT_EQ(l.status, SnapshotLoadResult::Status::kUnreadable);
  EXPECT_NE(l.error.find("not a regular file"), std::string::npos) << l.error;
}

// A periodic snapshot walks while clients store and delete: every item that
// was there the whole time is in it.
TEST_F(SnapshotTest, WritingWhileClientsStoreAndDelete) {
  StoreConfig config;
  config.memory_limit = 32 << 20;
  TestStore a(config);
  for (int i = 0; i < 20000; i++) a.Put("k" + std::to_string(i), "value" + std::to_string(i));
  std::atomic<bool> stop{false};
  std::thread clients([&] {
    for (int n = 0; !stop.load(); n++) {
      a.Put("n" + std::to_string(n), std::string(static_cast<size_t>(n % 2000), 'n'));
      if (n % 3 == 0) {
        DeleteRequest del;
        const std::string key = "n" + std::to_string(n / 2);
        del.key = key;
        a.store->Delete(del);
      }
      a.Bump("k" + std::to_string(n % 20000), 1);
    }
  });
  SnapshotWriteOptions options;
  options.buckets_per_step = 2;
  const SnapshotWriteResult w = Write(a.store.get(), options);
  stop = true;
  clients.join();
  ASSERT_TRUE(w.ok) << w.error;

  TestStore b(config);
  const SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  for (int i = 0; i < 20000; i++) {
    ASSERT_EQ(b.Peek("k" + std::to_string(i)).value, "value" + std::to_string(i)) << i;
  }
}

// A file of one item block holding `records`, with a header of `version`
// and an end block of `end_payload` (its counts, as EncodeEndPayload
// writes them, are not checked here).
std::string FileWithEnd(const ItemStore& store, uint32_t version, const std::vector<snapshot_format::Record>& records,
                        int64_t written_unix, const std::string& end_payload) {
  using namespace snapshot_format;
  FileHeader h;
  h.version = version;
  h.memory_limit = store.memory_limit();
  h.item_size_max = store.item_size_max();
  h.written_unix = written_unix;
  h.block_target = 4096;
  std::string file = EncodeHeader(h);
  std::string payload;
  for (const Record& r : records) AppendRecord(&payload, r);
  char head[kBlockHeaderSize];
  EncodeBlockHeader(head, 0, kBlockItems, 0, static_cast<uint32_t>(payload.size()),
                    static_cast<uint32_t>(records.size()), {payload});
  file.append(head, kBlockHeaderSize);
  file.append(payload);
  EncodeBlockHeader(head, 1, kBlockEnd, 0, static_cast<uint32_t>(end_payload.size()), 0, {end_payload});
  file.append(head, kBlockHeaderSize);
  file.append(end_payload);
  return file;
}

// The same with the end block a writer of `version` would write (from
// version 4 with `spreads`).
std::string FileOf(const ItemStore& store, uint32_t version, const std::vector<snapshot_format::Record>& records,
                   int64_t written_unix, const std::vector<double>& spreads = {}) {
  snapshot_format::EndBlock e;
  e.items = records.size();
  e.item_blocks = 1;
  e.cas_counter = 100;
  e.finished_unix = written_unix;
  e.recompute_spreads = spreads;
  return FileWithEnd(store, version, records, written_unix, snapshot_format::EncodeEndPayload(e, version));
}

TEST_F(SnapshotTest, AHotKeysReadRateComesBack) {
  StoreConfig config;
  TestStore a(config);
  a.Put("hot", "v", 1000);
  a.Put("cold", "v", 1000);
  for (int s = 0; s < 40; s++) {   // 8 reads a second for 40 s
    a.Bump("hot", 8);
    a.clock.AdvanceSeconds(1);
    // Its next value has room for the estimate (the first had none).
    if (s == 2) a.Put("hot", "v2", 1000);
  }
  a.Bump("cold", 1);
  ASSERT_GT(a.Peek("hot").reads_per_s, 4.0);
  ASSERT_TRUE(Write(a.store.get()).ok);
  a.clock.AdvanceSeconds(10);
  TestStore b(config, kUnixStart + 50);   // restarted 10 s later
  const SnapshotLoadResult l = LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions());
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.header.version, snapshot_format::kVersion);
  // The same estimate, decayed over the same 10 s since the last read.
  EXPECT_DOUBLE_EQ(b.Peek("hot").reads_per_s, a.Peek("hot").reads_per_s);
  EXPECT_EQ(b.Peek("cold").reads_per_s, 0);
  EXPECT_EQ(b.store->Stats().rated_keys, 1u);
}

TEST_F(SnapshotTest, AKeyThatBecameHotInItsFirstValueKeepsItsCountedRate) {
  StoreConfig config;
  TestStore a(config);
  a.Put("new", "v", 1000);   // its first value: no room for an estimate
  for (int s = 0; s < 30; s++) {   // 8 reads a second for 30 s, never stored again
    a.Bump("new", 8);
    a.clock.AdvanceSeconds(1);
  }
  ASSERT_TRUE(Write(a.store.get()).ok);
  TestStore b(config, kUnixStart + 30);
  ASSERT_EQ(LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions()).status, SnapshotLoadResult::Status::kLoaded);
  // Every read counted (the shard's remembered rates), not only the two that
  // made it hot: 8 reads/s over 30 s of a 16 s time constant, about 6.
  EXPECT_GT(b.Peek("new").reads_per_s, 5.0);
  EXPECT_LT(b.Peek("new").reads_per_s, 8.5);
}

TEST_F(SnapshotTest, ARestoredHotKeyIsJudgedByTheTtlItWasStoredWith) {
  StoreConfig config;
  TestStore a(config);
  a.Put("hot", "v", 1000);
  for (int s = 0; s < 40; s++) {   // 8 reads a second for 40 s
    a.Bump("hot", 8);
    a.clock.AdvanceSeconds(1);
    if (s == 2) a.Put("hot", "v2", 40);   // expires at 43 s: 2 s left at the snapshot
  }
  ASSERT_TRUE(Write(a.store.get()).ok);
  TestStore b(config, kUnixStart + 41);
  ASSERT_EQ(LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions()).status, SnapshotLoadResult::Status::kLoaded);
  // 0.6 s before its expiry: inside the window of a 40 s TTL (Δ 100 ms,
  // about 7 reads/s: 0.3 + 0.67 s), outside the one of a 2 s TTL (its
  // budget allows 0.28 s), which the TTL left at the restore would give.
  b.clock.AdvanceMicros(1400000);
  ReadOptions refresh;
  refresh.kind = ReadKind::kMeta;
  refresh.lease.refresh_ahead = true;
  const ReadResult r = b.store->Read("hot", refresh);
  ASSERT_EQ(r.status, ReadStatus::kHit);
  EXPECT_FALSE(r.stale);
  EXPECT_EQ(r.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(r.lease_by_refresh);
}

TEST_F(SnapshotTest, AHotKeysExpiryComesBackToTheEighthOfASecond) {
  StoreConfig config;
  config.stale_grace_s = 60;   // an expired key reads as stale: its expiry is seen
  TestStore a(config);
  a.Put("hot", "v", 1000);
  a.Put("cold", "v", 1000);
  for (int s = 0; s < 20; s++) {
    a.Bump("hot", 8);
    a.clock.AdvanceSeconds(1);
    if (s == 2) {
      a.clock.AdvanceMicros(625000);   // 5/8 into a second: the expiry is too
      a.Put("hot", "v2", 40);
      a.Put("cold", "v2", 40);
    }
  }
  ASSERT_TRUE(Write(a.store.get()).ok);
  // Restarted at the same moment (store and Unix seconds keep their phase,
  // storage/clock.h): the hot key expires on its tick, 5/8 s into store second
  // 100 + 3 + 40; a key without a rate keeps whole seconds (it may expire
  // up to 7/8 s early, never late).
  TestStore b(config, kUnixStart + 20);
  b.clock.AdvanceMicros(625000);
  ASSERT_EQ(LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions()).status, SnapshotLoadResult::Status::kLoaded);
  b.clock.AdvanceSeconds(23);   // store time 123 5/8 (its expiry) less a tick
  b.clock.AdvanceMicros(-125000);
  EXPECT_FALSE(b.Peek("hot").stale);
  EXPECT_TRUE(b.Peek("cold").stale);
  b.clock.AdvanceMicros(125000);
  EXPECT_TRUE(b.Peek("hot").stale);
}

TEST_F(SnapshotTest, AVersion1FileStillLoadsAndHoldsNoReadRates) {
  using namespace snapshot_format;
  StoreConfig config;
  TestStore b(config);
  Record plain;
  plain.key = "old";
  plain.value = "value";
  plain.delta_ms = 120;
  const std::string v1_file = FileOf(*b.store, 1, {plain}, b.clock.UnixSeconds() - 5);
  const SnapshotLoadResult l = LoadBytes(b.store.get(), v1_file);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.header.version, 1u);
  EXPECT_EQ(b.Peek("old").value, "value");
  EXPECT_EQ(b.Peek("old").recompute_ms, 120);

  Record rated = plain;   // the read-rate bit is version 2's: a version 1 file with it is damaged
  rated.rate_count = ReadRate::Encode(80);
  TestStore c(config);
  const std::string bad_file = FileOf(*c.store, 1, {rated}, c.clock.UnixSeconds() - 5);
  EXPECT_EQ(LoadBytes(c.store.get(), bad_file).status,
            SnapshotLoadResult::Status::kInvalid);
  const std::string good_file = FileOf(*c.store, 2, {rated}, c.clock.UnixSeconds() - 5);
  ASSERT_EQ(LoadBytes(c.store.get(), good_file).status,
            SnapshotLoadResult::Status::kLoaded);
  EXPECT_GT(c.Peek("old").reads_per_s, 0);
}

// A hot key's refresh window after a restart is the one it had before: its
// shard's recompute spread comes back with it (format 4), not the 1/2 a new
// store starts from, which would open it twice as wide.
TEST_F(SnapshotTest, ARestartedNodeJudgesRefreshWindowsWithTheSpreadItHad) {
  StoreConfig config;
  TestStore a(config);
  a.Put("hot", "v", 1000);
  ReadOptions lease;   // wins the key's lease whenever none is out
  lease.kind = ReadKind::kMeta;
  lease.lease.has_recache = true;
  lease.lease.recache_below_s = 1 << 30;
  for (int s = 0; s < 40; s++) {   // 100 reads a second for 40 s
    a.Bump("hot", 100);
    if (s == 38) a.Put("hot", "v", 4);   // expires at store second 142
    if (s < 16) {   // 16 recomputes of exactly 100 ms: Δ 100 ms, the spread 1/2 x (3/4)^15
      ASSERT_EQ(a.store->Read("hot", lease).lease, LeaseVerdict::kWin);
      a.clock.AdvanceMicros(100000);
      a.Put("hot", "v", 1000);
      a.clock.AdvanceMicros(900000);
    } else {
      a.clock.AdvanceSeconds(1);
    }
  }
  ASSERT_EQ(a.Peek("hot").recompute_ms, 100);
  const std::vector<double> spreads = a.store->RecomputeSpreads();
  ASSERT_TRUE(Write(a.store.get()).ok);
  TestStore b(config, kUnixStart + 40);   // restarted at once: b's second 102 is a's 142
  ASSERT_EQ(LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions()).status, SnapshotLoadResult::Status::kLoaded);
  const std::vector<double> restored = b.store->RecomputeSpreads();
  ASSERT_EQ(restored.size(), spreads.size());
  for (size_t i = 0; i < spreads.size(); i++) {
    EXPECT_NEAR(restored[i], spreads[i], snapshot_format::kSpreadUnit) << i;
  }
  // About 80 reads/s: the window is Δ (1 + 4 s) + ln(100)/λ_low, 0.1 + 0.06 s
  // with the spread the shard measured, 0.3 + 0.06 s with a spread of 1/2.
  ReadOptions refresh;
  refresh.kind = ReadKind::kMeta;
  refresh.lease.refresh_ahead = true;
  TestStore fresh(config, kUnixStart + 40);   // the same file, the spreads of a new store
  ASSERT_EQ(LoadSnapshot(fresh.store.get(), path_, SnapshotLoadOptions()).status,
            SnapshotLoadResult::Status::kLoaded);
  fresh.store->RestoreRecomputeSpreads({kInitialSpread});
  for (TestStore* s : {&b, &fresh}) s->clock.AdvanceMicros(1750000);   // 0.25 s before expiry
  EXPECT_EQ(b.store->Read("hot", refresh).lease, LeaseVerdict::kNone);
  EXPECT_EQ(fresh.store->Read("hot", refresh).lease, LeaseVerdict::kWin);
  b.clock.AdvanceMicros(150000);   // 0.1 s before
  const ReadResult r = b.store->Read("hot", refresh);
  EXPECT_EQ(r.lease, LeaseVerdict::kWin);
  EXPECT_TRUE(r.lease_by_refresh);
}

// A store with another shard count takes, per shard, the mean of the saved
// shards that held its keys (a key's shard is its hash's top bits).
TEST_F(SnapshotTest, SpreadsMapOntoAnotherShardCount) {
  StoreConfig config;
  TestStore a(config);   // 4 shards
  a.store->RestoreRecomputeSpreads({0.25, 0.75, 2.0, 4.0});
  ASSERT_EQ(a.store->RecomputeSpreads(), (std::vector<double>{0.25, 0.75, 2.0, 4.0}));
  a.Put("k", "v");
  ASSERT_TRUE(Write(a.store.get()).ok);
  const struct {
    int shard_bits;
    std::vector<double> want;
  } cases[] = {
      {0, {1.75}},
      {1, {0.5, 3.0}},
      {2, {0.25, 0.75, 2.0, 4.0}},
      {3, {0.25, 0.25, 0.75, 0.75, 2.0, 2.0, 4.0, 4.0}},
  };
  for (const auto& c : cases) {
    TestStore b(config, kUnixStart, c.shard_bits);
    ASSERT_EQ(LoadSnapshot(b.store.get(), path_, SnapshotLoadOptions()).status,
              SnapshotLoadResult::Status::kLoaded);
    EXPECT_EQ(b.store->RecomputeSpreads(), c.want) << c.shard_bits;
  }
}

// The end block of each version: version 4 adds a power-of-two count of
// spreads (or none), each at most kMaxSpread; older versions have none and
// keep the spreads of a new store.
TEST_F(SnapshotTest, TheEndBlocksSpreadsAreCheckedAndOldVersionsHaveNone) {
  using namespace snapshot_format;
  EndBlock e;
  e.items = 7;
  e.cas_counter = 99;
  e.recompute_spreads = {0.5, 16.0, 0.0, 1.0 / 3};
  const std::string v4 = EncodeEndPayload(e, 4);
  ASSERT_EQ(v4.size(), kEndPayloadSize + 4 + 2 * 4);
  ASSERT_EQ(EncodeEndPayload(e, 3).size(), kEndPayloadSize);
  EndBlock back;
  std::string error;
  ASSERT_TRUE(DecodeEndPayload(v4, 4, &back, &error)) << error;
  EXPECT_EQ(back.items, 7u);
  EXPECT_EQ(back.cas_counter, 99u);
  ASSERT_EQ(back.recompute_spreads.size(), 4u);
  EXPECT_EQ(back.recompute_spreads[1], 16.0);
  EXPECT_NEAR(back.recompute_spreads[3], 1.0 / 3, kSpreadUnit / 2);

  // Version 5: the flash tier's identity and next generation after the spreads.
  EndBlock f = e;
  f.flash_identity = "page_size 2097152\npath /x";
  f.flash_next_generation = 12;
  const std::string v5 = EncodeEndPayload(f, 5);
  ASSERT_EQ(v5.size(), v4.size() + 8 + f.flash_identity.size());
  ASSERT_TRUE(DecodeEndPayload(v5, 5, &back, &error)) << error;
  EXPECT_EQ(back.flash_identity, f.flash_identity);
  EXPECT_EQ(back.flash_next_generation, 12u);
  EXPECT_EQ(back.recompute_spreads.size(), 4u);

  auto with_count = [&](uint32_t n) {
    std::string s = v4;
    s[kEndPayloadSize] = static_cast<char>(n);
    return s;
  };
  std::string over = v4;
  over[kEndPayloadSize + 4] = 1;   // 0x4001 units: just over 16
  over[kEndPayloadSize + 5] = 0x40;
  const struct {
    const char* what;
    std::string payload;
    uint32_t version;
    bool ok;
  } cases[] = {
      {"version 4 with 4 spreads", v4, 4, true},
      {"version 4 with none", EncodeEndPayload(EndBlock(), 4), 4, true},
      {"version 3", EncodeEndPayload(e, 3), 3, true},
      {"version 3, a version 4 block", v4, 3, false},
      {"version 4, a version 3 block", EncodeEndPayload(e, 3), 4, false},
      {"3 spreads", with_count(3).substr(0, kEndPayloadSize + 4 + 6), 4, false},
      {"a count past the end", with_count(8), 4, false},
      {"a spread over 16", over, 4, false},
      {"a byte too many", v4 + "x", 4, false},
      {"version 5 without flash", EncodeEndPayload(e, 5), 5, true},
      {"version 5, a version 4 block", v4, 5, false},
      {"version 5, an identity cut short", v5.substr(0, v5.size() - 1), 5, false},
      {"version 5, a byte too many", v5 + "x", 5, false},
  };
  for (const auto& c : cases) {
    EndBlock out;
    error.clear();
    EXPECT_EQ(DecodeEndPayload(c.payload, c.version, &out, &error), c.ok) << c.what;
    EXPECT_EQ(error.empty(), c.ok) << c.what << ": " << error;
  }

  // Whole files: a version 3 file loads and leaves a new store's spreads; a
  // version 4 one with a bad end block restores nothing.
  StoreConfig config;
  Record plain;
  plain.key = "k";
  plain.value = "v";
  TestStore b(config);
  const std::string v3_file = FileOf(*b.store, 3, {plain}, b.clock.UnixSeconds() - 5);
  ASSERT_EQ(LoadBytes(b.store.get(), v3_file).status, SnapshotLoadResult::Status::kLoaded);
  EXPECT_EQ(b.store->RecomputeSpreads(), std::vector<double>(4, kInitialSpread));
  TestStore c(config);
  EndBlock one_item;
  one_item.items = 1;
  one_item.item_blocks = 1;
  std::string bad_end = EncodeEndPayload(one_item, 4) + "\x01\x40";
  bad_end[kEndPayloadSize] = 1;   // one spread, of 0x4001 units
  const std::string bad_file = FileWithEnd(*c.store, 4, {plain}, c.clock.UnixSeconds() - 5, bad_end);
  const SnapshotLoadResult l = LoadBytes(c.store.get(), bad_file);
  EXPECT_EQ(l.status, SnapshotLoadResult::Status::kInvalid);
  EXPECT_EQ(c.store->Stats().curr_items, 0u);
}

// Version 5: a value on flash (bit 6, a 16-byte locator) is restored only
// onto a flash tier whose files match the file's identity; without one it is
// skipped and counted, the RAM items load. A locator of another length, or
// bit 6 in an older version, makes the file invalid.
TEST_F(SnapshotTest, ValuesOnFlashNeedTheirFlashTier) {
  using namespace snapshot_format;
  StoreConfig config;
  TestStore a(config);
  Record plain;
  plain.key = "k";
  plain.value = "v";
  Record on_flash;
  on_flash.key = "f";
  const std::string locator(kRecordFlashStubValueSize, '\1');
  on_flash.value = locator;
  on_flash.flash_stub = true;
  const std::string file = FileOf(*a.store, 5, {plain, on_flash}, a.clock.UnixSeconds() - 5);
  const SnapshotLoadResult l = LoadBytes(a.store.get(), file);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.loaded, 1u);
  EXPECT_EQ(l.skipped_flash, 1u);
  EXPECT_EQ(l.flash_values, 0u);
  EXPECT_EQ(a.store->Stats().curr_items, 1u);

  Record short_locator = on_flash;
  short_locator.value = "abc";
  for (const auto& [version, record] : {std::pair<uint32_t, Record>{5, short_locator}, {4, on_flash}}) {
    TestStore b(config);
    const std::string bad = FileOf(*b.store, version, {plain, record}, b.clock.UnixSeconds() - 5);
    EXPECT_EQ(LoadBytes(b.store.get(), bad).status,
              SnapshotLoadResult::Status::kInvalid) << version;
  }
}

// Version 6: a delayed flush_all's deadline at the end of the end block,
// after the flash identity; older versions have none and decode it as 0.
TEST_F(SnapshotTest, TheEndBlockKeepsAPendingFlushDeadlineFromVersion6) {
  using namespace snapshot_format;
  EndBlock e;
  e.items = 3;
  e.recompute_spreads = {0.5, 0.25};
  e.flash_identity = "page_size 2097152";
  e.flash_next_generation = 4;
  e.flush_deadline_unix = 1700000123;
  const std::string v5 = EncodeEndPayload(e, 5);
  const std::string v6 = EncodeEndPayload(e, 6);
  ASSERT_EQ(v6.size(), v5.size() + 8);
  EXPECT_EQ(v6.substr(0, v5.size()), v5);
  EndBlock back;
  std::string error;
  ASSERT_TRUE(DecodeEndPayload(v6, 6, &back, &error)) << error;
  EXPECT_EQ(back.flush_deadline_unix, 1700000123);
  EXPECT_EQ(back.flash_identity, e.flash_identity);
  EXPECT_EQ(back.flash_next_generation, 4u);
  EXPECT_EQ(back.recompute_spreads.size(), 2u);
  back.flush_deadline_unix = 99;
  ASSERT_TRUE(DecodeEndPayload(v5, 5, &back, &error)) << error;
  EXPECT_EQ(back.flush_deadline_unix, 0);   // a version 5 block has none
  EndBlock none = e;
  none.flush_deadline_unix = 0;
  ASSERT_TRUE(DecodeEndPayload(EncodeEndPayload(none, 6), 6, &back, &error)) << error;
  EXPECT_EQ(back.flush_deadline_unix, 0);
  std::string negative = v6;
  negative[negative.size() - 1] = '\x80';
  const struct {
    const char* what;
    std::string payload;
    uint32_t version;
  } bad[] = {
      {"version 6, a version 5 block", v5, 6},
      {"version 5, a version 6 block", v6, 5},
      {"version 6, cut short", v6.substr(0, v6.size() - 1), 6},
      {"version 6, a byte too many", v6 + "x", 6},
      {"version 6, a negative deadline", negative, 6},
  };
  for (const auto& c : bad) {
    EndBlock out;
    error.clear();
    EXPECT_FALSE(DecodeEndPayload(c.payload, c.version, &out, &error)) << c.what;
    EXPECT_FALSE(error.empty()) << c.what;
  }
}

// The end block of a written file: the store's delayed flush_all deadline in
// Unix time, ahead or passed; none without one, or after an immediate flush.
TEST_F(SnapshotTest, TheWriterRecordsTheStoresFlushDeadline) {
  StoreConfig config;
  TestStore a(config);
  a.Put("k", "v");
  auto written_deadline = [&] {
    EXPECT_TRUE(Write(a.store.get()).ok);
    const std::string file = ReadFile(path_);
    MemorySource source(file);
    SnapshotReader reader(&source);
    std::string error;
    EXPECT_TRUE(reader.Check(&error)) << error;
    EXPECT_EQ(reader.header().version, snapshot_format::kVersion);
    return reader.end().flush_deadline_unix;
  };
  EXPECT_EQ(written_deadline(), 0);
  const int64_t deadline = a.clock.UnixSeconds() + 10;
  a.store->FlushAll(10);
  EXPECT_EQ(a.store->ToUnixTime(a.store->FlushDeadline()), deadline);
  EXPECT_EQ(written_deadline(), deadline);
  a.clock.AdvanceSeconds(20);   // passed: still recorded
  EXPECT_EQ(written_deadline(), deadline);
  a.store->FlushAll(0);
  EXPECT_EQ(written_deadline(), 0);
}

// A delayed flush_all survives a restart (format 6): one still ahead hides
// the restored items when its deadline comes; one that passed while the
// node was down leaves them out. Its rule is the store's: an item last
// stored or touched before the deadline is flushed, one at it is not.
TEST_F(SnapshotTest, APendingFlushAllSurvivesARestart) {
  StoreConfig config;
  TestStore a(config);
  ASSERT_EQ(a.Put("old", "v1").status, StoreStatus::kStored);
  a.store->FlushAll(10);
  const int64_t deadline = a.clock.UnixSeconds() + 10;
  a.clock.AdvanceSeconds(3);
  ASSERT_EQ(a.Put("later", "v2").status, StoreStatus::kStored);   // before the deadline too
  ASSERT_TRUE(Write(a.store.get()).ok);
  const std::string before = ReadFile(path_);

  {   // Restarted 2 s later: the deadline is 5 s ahead.
    TestStore b(config, deadline - 5 - 100);
    ASSERT_EQ(b.clock.UnixSeconds(), deadline - 5);
    const SnapshotLoadResult l = LoadBytes(b.store.get(), before);
    ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
    EXPECT_EQ(l.loaded, 2u);
    EXPECT_EQ(l.skipped_flushed, 0u);
    EXPECT_EQ(l.flush_pending_unix, deadline);
    EXPECT_EQ(b.store->ToUnixTime(b.store->FlushDeadline()), deadline);
    b.clock.AdvanceSeconds(4);
    EXPECT_EQ(b.Peek("old").value, "v1");
    EXPECT_EQ(b.Peek("later").value, "v2");
    b.clock.AdvanceSeconds(1);   // the deadline
    EXPECT_EQ(b.Peek("old").status, ReadStatus::kMiss);
    EXPECT_EQ(b.Peek("later").status, ReadStatus::kMiss);
    EXPECT_EQ(b.store->Stats().curr_items, 0u);
  }
  {   // Restarted after the deadline: nothing of it comes back.
    TestStore b(config, deadline + 30 - 100);
    const SnapshotLoadResult l = LoadBytes(b.store.get(), before);
    ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
    EXPECT_EQ(l.loaded, 0u);
    EXPECT_EQ(l.skipped_flushed, 2u);
    EXPECT_EQ(l.flush_pending_unix, 0);
    EXPECT_EQ(b.store->Stats().curr_items, 0u);
  }
  {   // Exactly at the deadline: due.
    TestStore b(config, deadline - 100);
    const SnapshotLoadResult l = LoadBytes(b.store.get(), before);
    EXPECT_EQ(l.skipped_flushed, 2u);
    EXPECT_EQ(b.Peek("old").status, ReadStatus::kMiss);
  }

  // A file written after the deadline holds what was stored from it on
  // (an item stored at the deadline second is not flushed), and still the
  // deadline: an item walked before it came would be left out.
  a.clock.AdvanceSeconds(7);
  ASSERT_EQ(a.clock.UnixSeconds(), deadline);
  ASSERT_EQ(a.Put("at", "v3").status, StoreStatus::kStored);
  ASSERT_EQ(a.Peek("old").status, ReadStatus::kMiss);
  ASSERT_TRUE(Write(a.store.get()).ok);
  const std::string after = ReadFile(path_);
  TestStore c(config, deadline + 60 - 100);
  const SnapshotLoadResult l = LoadBytes(c.store.get(), after);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.loaded, 1u);
  EXPECT_EQ(l.skipped_flushed, 0u);
  EXPECT_EQ(c.Peek("at").value, "v3");
  EXPECT_EQ(c.Peek("later").status, ReadStatus::kMiss);
}

// The loader's rule on records of a version 6 file, to the second: last
// access before the deadline is flushed, at it is not; and a record restored
// under a pending deadline is hidden when it comes even if its last access
// is the second before it.
TEST_F(SnapshotTest, AFlushDeadlineInTheFileHidesItemsAccessedBeforeIt) {
  using namespace snapshot_format;
  StoreConfig config;
  TestStore b(config);
  const int64_t now = b.clock.UnixSeconds();
  Record before;
  before.key = "before";
  before.value = "b";
  Record at = before;
  at.key = "at";
  at.value = "a";
  auto file_with_deadline = [&](int64_t deadline) {
    before.last_access_unix = static_cast<uint32_t>(deadline - 1);
    at.last_access_unix = static_cast<uint32_t>(deadline);
    EndBlock e;
    e.items = 2;
    e.item_blocks = 1;
    e.cas_counter = 100;
    e.finished_unix = now - 5;
    e.flush_deadline_unix = deadline;
    return FileWithEnd(*b.store, 6, {before, at}, now - 5, EncodeEndPayload(e, 6));
  };
  const std::string passed = file_with_deadline(now - 10);
  SnapshotLoadResult l = LoadBytes(b.store.get(), passed);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.skipped_flushed, 1u);
  EXPECT_EQ(b.Peek("before").status, ReadStatus::kMiss);
  EXPECT_EQ(b.Peek("at").value, "a");
  EXPECT_EQ(b.store->FlushDeadline(), 0);   // nothing left for it to do

  TestStore c(config);
  const std::string ahead = file_with_deadline(now + 1);
  l = LoadBytes(c.store.get(), ahead);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.loaded, 2u);
  EXPECT_EQ(l.flush_pending_unix, now + 1);
  EXPECT_EQ(c.Peek("before").value, "b");
  c.clock.AdvanceSeconds(1);
  EXPECT_EQ(c.Peek("before").status, ReadStatus::kMiss);
  // Its last access, in the future of this store, was clamped to now: before the deadline.
  EXPECT_EQ(c.Peek("at").status, ReadStatus::kMiss);
}

// Files of versions 1 to 5 hold no deadline: they load as before, and the
// store has no pending flush_all.
TEST_F(SnapshotTest, AVersion5FileLoadsWithNoFlushDeadline) {
  using namespace snapshot_format;
  StoreConfig config;
  TestStore b(config);
  Record plain;
  plain.key = "k";
  plain.value = "v";
  plain.last_access_unix = static_cast<uint32_t>(b.clock.UnixSeconds() - 50);
  const std::string v5_file = FileOf(*b.store, 5, {plain}, b.clock.UnixSeconds() - 5);
  const SnapshotLoadResult l = LoadBytes(b.store.get(), v5_file);
  ASSERT_EQ(l.status, SnapshotLoadResult::Status::kLoaded) << l.error;
  EXPECT_EQ(l.header.version, 5u);
  EXPECT_EQ(l.loaded, 1u);
  EXPECT_EQ(l.skipped_flushed, 0u);
  EXPECT_EQ(l.flush_pending_unix, 0);
  EXPECT_EQ(b.store->FlushDeadline(), 0);
  b.clock.AdvanceSeconds(3600);
  EXPECT_EQ(b.Peek("k").value, "v");
}

}  // namespace
}  // namespace herdless
