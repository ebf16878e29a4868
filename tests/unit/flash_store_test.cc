// FlashStore on real files in a temporary directory: values read back as
// written (from the write buffer and from the file), a full device evicts
// its oldest page into misses, damaged or missing bytes are a miss or a bad
// checksum, never a wrong value; released pages free up; compaction picks
// memcached's page.
#include "storage/flash_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace herdless {
namespace {

std::string ValueOf(int i, size_t len = 100) {
  std::string v(len, static_cast<char>('a' + i % 26));
  v += std::to_string(i);
  return v;
}

class FlashStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/herdless-flash-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }

  // Small pages and buffers (the store checks nothing about sizes: the
  // options do), `pages` pages per file.
  std::unique_ptr<FlashStore> Make(uint32_t pages, uint32_t nfiles = 1, uint32_t page_size = 4096,
                                   uint32_t wbuf_size = 1024) {
    settings_ = ExtstoreSettings();
    settings_.page_size = page_size;
    settings_.wbuf_size = wbuf_size;
    settings_.compact_under = pages * nfiles;
    for (uint32_t i = 0; i < nfiles; ++i) {
      FlashFile f;
      f.path = dir_ + "/file" + std::to_string(i);
      f.page_count = pages;
      settings_.files.push_back(f);
      files_.push_back(f.path);
    }
    std::string error;
    std::unique_ptr<FlashStore> store = FlashStore::Open(settings_, &error);
    EXPECT_NE(store, nullptr) << error;
    return store;
  }

  // One file of `pages` pages per bucket given (ext_path=FILE:SIZE:BUCKET),
  // with 1.6.45's rules (the only ones that take such files).
  std::unique_ptr<FlashStore> MakeTiered(const std::vector<FlashBucket>& buckets, uint32_t pages,
                                         uint32_t compact_under = 1) {
    Make(pages, static_cast<uint32_t>(buckets.size()));
    for (size_t i = 0; i < buckets.size(); ++i) settings_.files[i].free_bucket = buckets[i];
    settings_.as_1645 = true;
    settings_.compact_under = settings_.drop_under = compact_under;
    std::string error;
    std::unique_ptr<FlashStore> store = FlashStore::Open(settings_, &error);   // empties Make's files
    EXPECT_NE(store, nullptr) << error;
    return store;
  }
  // Writes values to `bucket` until they went to `pages` pages (the last one
  // just opened, the others full); the locators in order.
  static std::vector<FlashLocator> WritePages(FlashStore* store, FlashBucket bucket, size_t pages,
                                              const std::string& prefix) {
    std::vector<FlashLocator> where;
    size_t seen = 0;
    for (int i = 0; seen < pages; ++i) {
      FlashLocator at;
      EXPECT_TRUE(store->Write(prefix + std::to_string(i), i, ValueOf(i), &at, bucket));
      if (where.empty() || at.page != where.back().page) ++seen;
      where.push_back(at);
    }
    return where;
  }

  // What an orderly stop keeps of the flash tier for the -e restart (the
  // snapshot's identity and next generation); the store is closed.
  struct Stopped {
    std::string identity;
    uint32_t next_generation = 0;
  };
  static Stopped SyncAndStop(std::unique_ptr<FlashStore> store) {
    EXPECT_TRUE(store->Sync());
    return {store->Identity(), store->next_generation()};
  }
  std::unique_ptr<FlashStore> OpenKept() {
    std::string error;
    std::unique_ptr<FlashStore> store = FlashStore::OpenKept(settings_, &error);
    EXPECT_NE(store, nullptr) << error;
    return store;
  }

  std::string dir_;
  std::vector<std::string> files_;
  ExtstoreSettings settings_;
};

TEST_F(FlashStoreTest, ValuesReadBackFromTheBufferAndTheFile) {
  auto store = Make(8, 2);
  std::vector<FlashLocator> where(60);
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(store->Write("key" + std::to_string(i), i, ValueOf(i), &where[i])) << i;
  }
  // Some are in the file by now (the buffer is 1 KiB), the last in the buffer.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 60; ++i) {
      std::string value;
      ASSERT_EQ(store->Read(where[i], "key" + std::to_string(i), ValueOf(i).size(), &value),
                FlashReadResult::kOk) << i;
      EXPECT_EQ(value, ValueOf(i));
    }
    ASSERT_TRUE(store->Flush());
  }
  const FlashStats s = store->Stats();
  EXPECT_EQ(s.objects_written, 60u);
  EXPECT_EQ(s.objects_used, 60u);
  EXPECT_EQ(s.objects_read, 120u);
  EXPECT_EQ(s.limit_maxbytes, 16u * 4096);
  EXPECT_EQ(s.pages_free + s.pages_used, 16u);
  EXPECT_GT(s.pages_used, 1u);   // 60 records of ~130 bytes fill two 4 KiB pages
}

TEST_F(FlashStoreTest, AReadForAnotherKeyOrLengthIsAMiss) {
  auto store = Make(4);
  FlashLocator at;
  ASSERT_TRUE(store->Write("foo", 1, "bar", &at));
  ASSERT_TRUE(store->Flush());
  std::string value;
  EXPECT_EQ(store->Read(at, "fo0", 3, &value), FlashReadResult::kMiss);
  EXPECT_EQ(store->Read(at, "foo", 2, &value), FlashReadResult::kMiss);
  FlashLocator wrong = at;
  wrong.generation += 1;
  EXPECT_EQ(store->Read(wrong, "foo", 3, &value), FlashReadResult::kMiss);
  wrong = at;
  wrong.page = 99;
  EXPECT_EQ(store->Read(wrong, "foo", 3, &value), FlashReadResult::kMiss);
  EXPECT_TRUE(value.empty());
}

TEST_F(FlashStoreTest, DamagedOrMissingBytesAreNeverAValue) {
  auto store = Make(4);
  FlashLocator at;
  ASSERT_TRUE(store->Write("foo", 1, std::string(200, 'x'), &at));
  ASSERT_TRUE(store->Flush());
  const int fd = ::open(files_[0].c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const char bad = 'y';
  ASSERT_EQ(::pwrite(fd, &bad, 1, at.offset + kFlashRecordHeaderSize + 3 + 50), 1);
  std::string value;
  EXPECT_EQ(store->Read(at, "foo", 200, &value), FlashReadResult::kBadChecksum);
  ASSERT_EQ(::ftruncate(fd, at.offset + 10), 0);   // the device lost the rest
  EXPECT_EQ(store->Read(at, "foo", 200, &value), FlashReadResult::kIoError);
  ::close(fd);
  EXPECT_TRUE(value.empty());
}

TEST_F(FlashStoreTest, AFullDeviceEvictsItsOldestPageIntoMisses) {
  auto store = Make(3);
  std::vector<FlashLocator> where;
  for (int i = 0; i < 200; ++i) {
    FlashLocator at;
    ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i), &at)) << i;
    where.push_back(at);
  }
  int hits = 0, misses = 0;
  for (int i = 0; i < 200; ++i) {
    std::string value;
    const FlashReadResult r = store->Read(where[i], "k" + std::to_string(i), ValueOf(i).size(), &value);
    ASSERT_TRUE(r == FlashReadResult::kOk || r == FlashReadResult::kMiss) << i;
    if (r == FlashReadResult::kOk) {
      EXPECT_EQ(value, ValueOf(i));
      ++hits;
    } else {
      ++misses;
    }
  }
  EXPECT_GT(misses, 0);
  EXPECT_GT(hits, 0);
  std::string value;
  EXPECT_EQ(store->Read(where.back(), "k199", ValueOf(199).size(), &value), FlashReadResult::kOk);
  const FlashStats s = store->Stats();
  EXPECT_GT(s.page_evictions, 0u);
  EXPECT_EQ(s.objects_used + s.objects_evicted, 200u);
  // An evicted page is freed, and memcached counts every freed page a reclaim.
  EXPECT_EQ(s.page_reclaims, s.page_evictions);
}

TEST_F(FlashStoreTest, ReleasedPagesFreeUpAndFragmentedOnesAreOfferedForCompaction) {
  auto store = Make(4);
  std::vector<FlashLocator> where;
  for (int i = 0; i < 60; ++i) {   // two full pages and part of a third
    FlashLocator at;
    ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i), &at));
    where.push_back(at);
  }
  const uint32_t first = where[0].page;
  ASSERT_NE(where[59].page, first);
  // Release all but one record of the first page: it is a candidate.
  std::vector<int> on_first;
  for (int i = 0; i < 60; ++i) {
    if (where[i].page == first) on_first.push_back(i);
  }
  for (size_t j = 1; j < on_first.size(); ++j) {
    const int i = on_first[j];
    store->Release(where[i], ("k" + std::to_string(i)).size(), ValueOf(i).size());
  }
  FlashStore::Compaction compaction;
  ASSERT_TRUE(store->PickCompaction(FlashTunables(settings_), &compaction));
  EXPECT_EQ(compaction.page, first);
  EXPECT_EQ(compaction.generation, where[0].generation);
  EXPECT_FALSE(compaction.drop_unread);
  // Its walk finds the live record among the released ones.
  std::string page;
  ASSERT_TRUE(store->ReadPage(first, &page));
  FlashPageReader reader(page);
  FlashRecord r;
  uint32_t offset;
  int seen = 0;
  bool found = false;
  while (reader.Next(&r, &offset)) {
    ++seen;
    found = found || (offset == where[on_first[0]].offset && r.key == "k" + std::to_string(on_first[0]));
  }
  EXPECT_EQ(seen, static_cast<int>(on_first.size()));
  EXPECT_TRUE(found);
  // The last release frees the page.
  const uint32_t free_before = store->free_pages();
  store->Release(where[on_first[0]], ("k" + std::to_string(on_first[0])).size(),
                 ValueOf(on_first[0]).size());
  EXPECT_EQ(store->free_pages(), free_before + 1);
  EXPECT_EQ(store->Stats().page_reclaims, 1u);
  std::string value;
  EXPECT_EQ(store->Read(where[on_first[0]], "k" + std::to_string(on_first[0]),
                        ValueOf(on_first[0]).size(), &value), FlashReadResult::kMiss);
}

TEST_F(FlashStoreTest, TooLargeForABufferStaysInRam) {
  auto store = Make(2);
  FlashLocator at;
  EXPECT_FALSE(store->Write("big", 1, std::string(1024, 'b'), &at));
  EXPECT_EQ(store->Stats().objects_written, 0u);
}

TEST_F(FlashStoreTest, AFileThatCannotOpenGetsMemcachedsMessage) {
  ExtstoreSettings s;
  s.files.push_back({"/nonexistent-dir/flash", 64u << 20, 1});
  std::string error;
  EXPECT_EQ(FlashStore::Open(s, &error), nullptr);
  EXPECT_EQ(error, "Failed to initialize external storage: failed to open file\n"
                   "extstore open: No such file or directory");
}

TEST_F(FlashStoreTest, AFreshStoreShowsMemcachedsStartingStats) {
  auto store = Make(1, 1, 64u << 20, 4u << 20);
  const FlashStats s = store->Stats();
  EXPECT_EQ(s.pages_used, 1u);   // memcached opens a page at start
  EXPECT_EQ(s.pages_free, 0u);
  EXPECT_EQ(s.page_allocs, 0u);
  EXPECT_EQ(s.bytes_fragmented, 64u << 20);
  EXPECT_EQ(s.limit_maxbytes, 64u << 20);
}

// One writer fills a small device round and round (pages are evicted and
// rewritten) while readers read what it has written: each read is the value
// written or a miss, never another value or a bad checksum.
TEST_F(FlashStoreTest, ReadsRacingEvictionsAreTheValueOrAMiss) {
  auto store = Make(3);
  constexpr int kWrites = 3000;
  std::vector<FlashLocator> where(kWrites);
  std::atomic<int> written{0};
  std::atomic<int> wrong{0}, hits{0}, reads{0};
  std::thread writer([&] {
    for (int i = 0; i < kWrites; ++i) {
      ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i, 60 + i % 50), &where[i]));
      written.store(i + 1, std::memory_order_release);
      if (i % 7 == 0) store->Flush();
      // Every 100 writes, let the readers read a little (whatever the scheduler does).
      const int target = (i / 100) * 6;
      while (i % 100 == 99 && reads.load() < target) std::this_thread::yield();
    }
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      uint32_t x = 12345 + r;
      while (written.load(std::memory_order_acquire) < kWrites) {
        const int n = written.load(std::memory_order_acquire);
        if (n == 0) continue;
        x = x * 1103515245 + 12345;
        const int i = n - 1 - static_cast<int>((x >> 8) % std::min(n, 40));
        std::string value;
        const std::string expected = ValueOf(i, 60 + i % 50);
        const FlashReadResult res = store->Read(where[i], "k" + std::to_string(i), expected.size(), &value);
        reads.fetch_add(1);
        if (res == FlashReadResult::kOk) {
          hits.fetch_add(1);
          if (value != expected) wrong.fetch_add(1);
        } else if (res != FlashReadResult::kMiss) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  writer.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
  EXPECT_GT(store->Stats().page_evictions, 0u);
}

// memcached's storage_compact_check on two full pages (of 4: one open, one
// free), each with a share of its values released.
TEST_F(FlashStoreTest, CompactionPicksMemcachedsPage) {
  struct Case {
    const char* what;
    uint32_t compact_under, drop_under;
    bool drop_unread;
    double live_first, live_second;   // fraction of each page's values kept
    int picked;                       // 0, 1: that page; -1: none
    bool drop;
  };
  const Case cases[] = {
      {"enough free pages", 0, 0, false, 0.1, 0.1, -1, false},
      {"the one under the limit", 4, 0, false, 0.9, 0.1, 1, false},
      {"the oldest under the limit", 4, 0, false, 0.2, 0.1, 0, false},
      {"none under: no compaction", 4, 4, false, 0.9, 0.9, -1, false},
      {"none under: drop the oldest's unread", 4, 4, true, 0.9, 0.9, 0, true},
      {"none under, drop_under not reached", 4, 0, true, 0.9, 0.9, -1, false},
  };
  for (const Case& c : cases) {
    auto store = Make(4);
    settings_.compact_under = c.compact_under;
    std::string error;
    ExtstoreSettings s = settings_;
    s.compact_under = c.compact_under;
    s.drop_under = c.drop_under;
    s.drop_unread = c.drop_unread;
    store.reset();
    store = FlashStore::Open(s, &error);
    ASSERT_NE(store, nullptr) << error;
    std::vector<FlashLocator> where;
    for (int i = 0; where.empty() || where.back().page < 2; ++i) {   // pages 0 and 1 full
      FlashLocator at;
      ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i), &at));
      where.push_back(at);
    }
    for (int page = 0; page < 2; ++page) {
      std::vector<int> on;
      for (int i = 0; i < static_cast<int>(where.size()); ++i) {
        if (where[i].page == static_cast<uint32_t>(page)) on.push_back(i);
      }
      const size_t keep = static_cast<size_t>((page == 0 ? c.live_first : c.live_second) * on.size());
      for (size_t j = keep; j < on.size(); ++j) {
        store->Release(where[on[j]], ("k" + std::to_string(on[j])).size(), ValueOf(on[j]).size());
      }
    }
    FlashStore::Compaction got;
    const bool any = store->PickCompaction(FlashTunables(s), &got);
    EXPECT_EQ(any, c.picked >= 0) << c.what;
    if (any && c.picked >= 0) {
      EXPECT_EQ(got.page, static_cast<uint32_t>(c.picked)) << c.what;
      EXPECT_EQ(got.drop_unread, c.drop) << c.what;
    }
  }
}

// -o compat=1.6.45: 1.6.45's storage_compact_check compacts under
// ext_compact_under (not at it) and takes the emptiest page under a fixed
// limit (page size x ext_max_frag) where 1.6.18 takes the oldest. The check
// (what memcached logs as compact_fraginfo) gets as far as the limit with
// any page in use in 1.6.45, at most ext_compact_under pages free in 1.6.18,
// where the limit shrinks with the free pages (here 1 of 4).
TEST_F(FlashStoreTest, Compat1645CompactsTheEmptiestPage) {
  struct Case {
    bool as_1645;
    uint32_t compact_under;
    int picked;   // -1: none
    bool checked;
    double ratio;
  };
  const double frag = settings_.max_frag;
  const Case cases[] = {{false, 2, 0, true, 0.75 * frag}, {true, 2, 1, true, frag},
                        {false, 1, 0, true, 0.75 * frag}, {true, 1, -1, true, frag},
                        {false, 0, -1, false, 0},         {true, 0, -1, true, frag}};
  for (const Case& c : cases) {
    Make(4);
    ExtstoreSettings s = settings_;
    s.as_1645 = c.as_1645;
    s.compact_under = c.compact_under;
    std::string error;
    auto store = FlashStore::Open(s, &error);   // empties the file Make made
    ASSERT_NE(store, nullptr) << error;
    std::vector<FlashLocator> where;
    for (int i = 0; where.empty() || where.back().page < 2; ++i) {   // pages 0 and 1 full, 2 open, 3 free
      FlashLocator at;
      ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i), &at));
      where.push_back(at);
    }
    for (int page = 0; page < 2; ++page) {   // page 0 keeps half its values, page 1 a fifth
      std::vector<int> on;
      for (int i = 0; i < static_cast<int>(where.size()); ++i) {
        if (where[i].page == static_cast<uint32_t>(page)) on.push_back(i);
      }
      const size_t keep = on.size() * (page == 0 ? 5 : 2) / 10;
      for (size_t j = keep; j < on.size(); ++j) {
        store->Release(where[on[j]], ("k" + std::to_string(on[j])).size(), ValueOf(on[j]).size());
      }
    }
    FlashStore::Compaction got;
    FlashStore::CompactionCheck check;
    const bool any = store->PickCompaction(FlashTunables(s), &got, &check);
    EXPECT_EQ(any, c.picked >= 0) << c.as_1645 << " " << c.compact_under;
    if (any && c.picked >= 0) {
      EXPECT_EQ(got.page, static_cast<uint32_t>(c.picked)) << c.as_1645;
      EXPECT_EQ(got.read_size, s.wbuf_size);
    }
    EXPECT_EQ(check.ran, c.checked) << c.as_1645 << " " << c.compact_under;
    EXPECT_DOUBLE_EQ(check.ratio, c.ratio) << c.as_1645 << " " << c.compact_under;
    EXPECT_EQ(check.limit_bytes, static_cast<uint64_t>(s.page_size * c.ratio));
  }
}

// ext_low_ttl: short-lived values fill pages of their own (stats extstore's
// bucket 3), which compaction leaves alone and which free themselves once
// every value on them is released (extstore_page_reclaims).
TEST_F(FlashStoreTest, LowTtlValuesFillPagesOfTheirOwn) {
  auto store = Make(8);
  std::vector<FlashLocator> plain(10), short_lived;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->Write("p" + std::to_string(i), i, ValueOf(i), &plain[i]));
  for (int i = 0; short_lived.size() < 2 || short_lived.back().page == short_lived.front().page; ++i) {
    FlashLocator at;
    ASSERT_TRUE(store->Write("s" + std::to_string(i), i, ValueOf(i), &at, FlashBucket::kLowTtl));
    short_lived.push_back(at);
  }
  const uint32_t first = short_lived.front().page;
  for (const FlashLocator& at : plain) EXPECT_NE(at.page, first);
  EXPECT_TRUE(store->PageData()[first].bucket == FlashBucket::kLowTtl);
  EXPECT_FALSE(store->PageData()[plain[0].page].bucket == FlashBucket::kLowTtl);
  // Both streams read back, from their buffers and the file.
  std::string value;
  ASSERT_EQ(store->Read(plain[3], "p3", ValueOf(3).size(), &value), FlashReadResult::kOk);
  EXPECT_EQ(value, ValueOf(3));
  ASSERT_EQ(store->Read(short_lived[1], "s1", ValueOf(1).size(), &value), FlashReadResult::kOk);
  EXPECT_EQ(value, ValueOf(1));
  // A full low-TTL page with hardly anything live is no compaction candidate.
  for (size_t i = 1; i < short_lived.size(); ++i) {
    if (short_lived[i].page == first) store->Release(short_lived[i], ("s" + std::to_string(i)).size(), ValueOf(i).size());
  }
  FlashStore::Compaction compaction;
  EXPECT_FALSE(store->PickCompaction(FlashTunables(settings_), &compaction));
  // Its last value released, it is free again.
  store->Release(short_lived[0], 2, ValueOf(0).size());
  EXPECT_EQ(store->PageData()[first].version, 0u);
  EXPECT_EQ(store->Stats().page_reclaims, 1u);
}

// -e restart: a kept low-TTL page is a low-TTL page again once adopted (its
// header says so), so `stats extstore` shows its bucket and compaction still
// leaves it alone; a plain page stays plain.
TEST_F(FlashStoreTest, AKeptLowTtlPageIsLowTtlAgainAfterTheRestart) {
  std::vector<FlashLocator> plain(10), short_lived(3);
  Stopped stopped;
  {
    auto store = Make(8);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->Write("p" + std::to_string(i), i, ValueOf(i), &plain[i]));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(store->Write("s" + std::to_string(i), i, ValueOf(i), &short_lived[i], FlashBucket::kLowTtl));
    }
    ASSERT_TRUE(store->PageData()[short_lived[0].page].bucket == FlashBucket::kLowTtl);
    stopped = SyncAndStop(std::move(store));
  }
  auto store = OpenKept();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AcceptRestart(stopped.identity, stopped.next_generation));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->Adopt(plain[i], 2, ValueOf(i).size()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Adopt(short_lived[i], 2, ValueOf(i).size()));
  store->FinishRestart();
  EXPECT_TRUE(store->PageData()[short_lived[0].page].bucket == FlashBucket::kLowTtl);
  EXPECT_FALSE(store->PageData()[plain[0].page].bucket == FlashBucket::kLowTtl);
  // The low-TTL page mostly dead (the plain one full of live values): still
  // no compaction candidate. (Taken for a plain page, it would be one.)
  store->Release(short_lived[1], 2, ValueOf(1).size());
  store->Release(short_lived[2], 2, ValueOf(2).size());
  FlashStore::Compaction compaction;
  EXPECT_FALSE(store->PickCompaction(FlashTunables(settings_), &compaction));
  std::string value;
  EXPECT_EQ(store->Read(short_lived[0], "s0", ValueOf(0).size(), &value), FlashReadResult::kOk);
  EXPECT_EQ(value, ValueOf(0));
}

// -e restart: with the stop's identity, the kept file's records are adopted
// again and read back; a page whose header was damaged, or a record damaged
// since, never reads as a value; writing resumes above every generation on
// the file; nothing adopted empties the file.
TEST_F(FlashStoreTest, KeptFileAdoptsTheRestoredRecords) {
  std::vector<FlashLocator> where;
  Stopped stopped;
  {
    auto store = Make(6);
    for (int i = 0; i < 100; ++i) {   // pages 0..3, the last one open
      FlashLocator at;
      ASSERT_TRUE(store->Write("k" + std::to_string(i), i, ValueOf(i), &at));
      where.push_back(at);
    }
    stopped = SyncAndStop(std::move(store));
  }
  const std::string& identity = stopped.identity;
  const uint32_t next_generation = stopped.next_generation;
  auto store = OpenKept();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->AcceptRestart(identity + "x", next_generation));
  ASSERT_TRUE(store->AcceptRestart(identity, next_generation));
  std::string value;
  EXPECT_EQ(store->Read(where[0], "k0", ValueOf(0).size(), &value), FlashReadResult::kMiss);   // not adopted
  // The records of one page are not adopted (their items were not restored): it is free.
  const uint32_t unadopted = where[50].page;
  uint64_t adopted = 0;
  for (int i = 0; i < 100; ++i) {
    if (where[i].page == unadopted) continue;
    EXPECT_TRUE(store->Adopt(where[i], 1 + std::to_string(i).size(), ValueOf(i).size()));
    ++adopted;
  }
  FlashLocator wrong = where[1];
  wrong.generation += 7;
  EXPECT_FALSE(store->Adopt(wrong, 2, ValueOf(1).size()));
  store->FinishRestart();
  EXPECT_EQ(store->Stats().objects_used, adopted);
  for (int i = 0; i < 100; ++i) {
    const std::string key = "k" + std::to_string(i);
    const FlashReadResult want = where[i].page != unadopted ? FlashReadResult::kOk : FlashReadResult::kMiss;
    ASSERT_EQ(store->Read(where[i], key, ValueOf(i).size(), &value), want) << i;
    if (want == FlashReadResult::kOk) {
      EXPECT_EQ(value, ValueOf(i));
    }
  }
  FlashLocator next;
  ASSERT_TRUE(store->Write("new", 1, "value", &next));
  EXPECT_GE(next.generation, next_generation);
  store.reset();

  // A record damaged between runs (the identity made to match again) is a
  // bad checksum when read; a page whose header is damaged is not adopted.
  const int fd = ::open(files_[0].c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "XXXX", 4, uint64_t{where[0].page} * 4096 + where[0].offset + 30), 4);
  ASSERT_EQ(::pwrite(fd, "XXXX", 4, uint64_t{where[98].page} * 4096), 4);
  ::close(fd);
  store = OpenKept();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->AcceptRestart(identity, next_generation));   // the file changed since
  ASSERT_TRUE(store->AcceptRestart(store->Identity(), next_generation + 1));
  EXPECT_TRUE(store->Adopt(where[0], 2, ValueOf(0).size()));
  EXPECT_FALSE(store->Adopt(where[98], 3, ValueOf(98).size()));
  store->FinishRestart();
  EXPECT_EQ(store->Read(where[0], "k0", ValueOf(0).size(), &value), FlashReadResult::kBadChecksum);
  EXPECT_EQ(store->Read(where[98], "k98", ValueOf(98).size(), &value), FlashReadResult::kMiss);
  store.reset();

  // Nothing accepted: the file is emptied, as Open's.
  store = OpenKept();
  ASSERT_NE(store, nullptr);
  store->FinishRestart();
  EXPECT_EQ(store->Stats().objects_used, 0u);
  EXPECT_EQ(store->Read(where[2], "k2", ValueOf(2).size(), &value), FlashReadResult::kMiss);
  struct stat st {};
  ASSERT_EQ(::stat(files_[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
}

// A full page at the end of its file, whose last record did not reach the
// page's end, reads back whole for compaction (the file ends early there).
TEST_F(FlashStoreTest, TheLastPageOfAFileReadsBackForCompaction) {
  auto store = Make(2);
  const std::vector<FlashLocator> where = WritePages(store.get(), FlashBucket::kDefault, 3, "k");
  ASSERT_EQ(where.back().page, 0u);   // page 1 full, page 0 evicted for the third
  ASSERT_TRUE(store->Flush());
  struct stat st {};
  ASSERT_EQ(::stat(files_[0].c_str(), &st), 0);
  ASSERT_LT(st.st_size, 2 * 4096);
  std::string bytes;
  ASSERT_TRUE(store->ReadPage(1, &bytes));
  FlashPageReader reader(bytes);
  FlashRecord record;
  uint32_t offset;
  size_t records = 0;
  while (reader.Next(&record, &offset)) records++;
  EXPECT_EQ(records, static_cast<size_t>(std::count_if(where.begin(), where.end(),
                                                       [](const FlashLocator& w) { return w.page == 1; })));
  EXPECT_EQ(reader.status(), FlashRecordStatus::kEnd);
}

// memcached 1.6.45's tiered files: a file's pages serve its own bucket's
// stream (and a default file's any stream), stats extstore shows each page's
// free bucket, and a default stream that needs a page evicts one of the
// default file's, never another bucket's.
TEST_F(FlashStoreTest, TieredFilesServeTheirOwnBucketFirst) {
  // memcached's page 0 is the last file's: pages d c d c.
  auto store = MakeTiered({FlashBucket::kCompact, FlashBucket::kDefault}, 2);
  std::vector<FlashPageData> pages = store->PageData();
  ASSERT_EQ(pages.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(pages[i].free_bucket, i % 2 ? FlashBucket::kCompact : FlashBucket::kDefault);
  const std::vector<FlashLocator> plain = WritePages(store.get(), FlashBucket::kDefault, 2, "p");
  EXPECT_EQ(plain.front().page, 0u);
  EXPECT_EQ(plain.back().page, 2u);
  FlashLocator rescued;
  ASSERT_TRUE(store->Write("r", 1, ValueOf(1), &rescued, FlashBucket::kCompact));
  EXPECT_EQ(rescued.page, 1u);
  pages = store->PageData();
  EXPECT_EQ(pages[1].bucket, FlashBucket::kCompact);
  EXPECT_EQ(pages[0].bucket, FlashBucket::kDefault);
  // The default file full: its oldest page goes, the compact file's stay.
  const std::vector<FlashLocator> more = WritePages(store.get(), FlashBucket::kDefault, 2, "q");
  EXPECT_EQ(more.front().page, 2u);
  EXPECT_EQ(more.back().page, 0u);
  EXPECT_EQ(store->Stats().page_evictions, 1u);
  std::string value;
  EXPECT_EQ(store->Read(plain.front(), "p0", ValueOf(0).size(), &value), FlashReadResult::kMiss);
  ASSERT_EQ(store->Read(rescued, "r", ValueOf(1).size(), &value), FlashReadResult::kOk);
  EXPECT_EQ(value, ValueOf(1));
  EXPECT_EQ(store->PageData()[3].version, 0u);   // the compact file's second page, still free
}

// 1.6.45's compaction with coldcompact and old files: nothing to defragment in
// the full default file, so its oldest page is compacted, values never read
// going to the coldcompact file's pages and the others to the old file's;
// a full coldcompact (or old) file evicts its own oldest page instead.
TEST_F(FlashStoreTest, ColdCompactAndOldFilesTakeWhatNothingElseFrees) {
  auto store = MakeTiered({FlashBucket::kOld, FlashBucket::kColdCompact, FlashBucket::kDefault}, 2);   // d c o d c o
  const std::vector<FlashLocator> plain = WritePages(store.get(), FlashBucket::kDefault, 2, "p");
  ASSERT_EQ(plain.front().page, 0u);   // full and every value live; page 3 just opened
  ASSERT_EQ(plain.back().page, 3u);
  FlashStore::Compaction c;
  ASSERT_TRUE(store->PickCompaction(FlashTunables(settings_), &c));
  EXPECT_EQ(c.page, 0u);
  EXPECT_FALSE(c.drop_unread);
  EXPECT_TRUE(c.has_coldcompact);
  EXPECT_TRUE(c.use_old);
  FlashBucket to;
  ASSERT_TRUE(c.RescueBucket(/*never_read=*/true, &to));
  EXPECT_EQ(to, FlashBucket::kColdCompact);
  ASSERT_TRUE(c.RescueBucket(/*never_read=*/false, &to));
  EXPECT_EQ(to, FlashBucket::kOld);
  // The coldcompact file's two pages in use (one full): its oldest goes.
  const std::vector<FlashLocator> cold = WritePages(store.get(), FlashBucket::kColdCompact, 2, "c");
  EXPECT_EQ(cold.front().page, 1u);
  EXPECT_EQ(cold.back().page, 4u);
  EXPECT_FALSE(store->PickCompaction(FlashTunables(settings_), &c));
  EXPECT_EQ(store->Stats().page_evictions, 1u);
  EXPECT_EQ(store->PageData()[1].version, 0u);
  EXPECT_EQ(store->PageData()[0].version, plain.front().generation);   // the default file's page stays
}

// Where compaction writes a value again (memcached's storage_compact_readback).
TEST_F(FlashStoreTest, RescuesGoWhereMemcachedsGo) {
  struct Case {
    bool drop_unread, has_coldcompact, use_old, never_read;
    bool kept;
    FlashBucket to;
  };
  const Case cases[] = {
      {false, false, false, false, true, FlashBucket::kCompact},
      {false, false, false, true, true, FlashBucket::kCompact},
      {true, false, false, false, true, FlashBucket::kCompact},
      {true, false, false, true, false, FlashBucket::kDefault},   // dropped
      {true, true, false, true, true, FlashBucket::kColdCompact},
      {false, true, true, true, true, FlashBucket::kColdCompact},
      {false, true, true, false, true, FlashBucket::kOld},
      {false, false, true, true, true, FlashBucket::kOld},
  };
  for (const Case& k : cases) {
    FlashStore::Compaction c;
    c.drop_unread = k.drop_unread;
    c.has_coldcompact = k.has_coldcompact;
    c.use_old = k.use_old;
    FlashBucket to = FlashBucket::kDefault;
    EXPECT_EQ(c.RescueBucket(k.never_read, &to), k.kept);
    EXPECT_EQ(to, k.to) << k.drop_unread << k.has_coldcompact << k.use_old << k.never_read;
  }
}

}  // namespace
}  // namespace herdless
