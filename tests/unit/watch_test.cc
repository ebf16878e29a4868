#include "protocol/watch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace herdless {
namespace {

TEST(WatchTest, ParsesMemcachedsKindsAndStampede) {
  uint32_t kinds = 0;
  EXPECT_TRUE(ParseWatchKinds("", &kinds));
  EXPECT_EQ(kinds, uint32_t{kWatchFetchers});   // memcached's default
  EXPECT_TRUE(ParseWatchKinds("mutations  evictions connevents stampede", &kinds));
  EXPECT_EQ(kinds, uint32_t{kWatchMutations | kWatchEvictions | kWatchConnEvents | kWatchStampede});
  EXPECT_TRUE(ParseWatchKinds("rawcmds sysevents proxyreqs proxyevents proxyuser", &kinds));
  EXPECT_FALSE(ParseWatchKinds("fetchers bogus", &kinds));
  EXPECT_TRUE(ParseWatchKinds("deletions", &kinds));   // memcached 1.6.21+
  EXPECT_EQ(kinds, uint32_t{kWatchDeletions});
  EXPECT_NE(kWatchDeletions, kWatchStampede);
}

// memcached 1.6.45's _logger_parse_ide.
TEST(WatchTest, FormatsTheDeletionLine) {
  LogLine del;
  FormatItemDeleted(&del, "a b", /*meta=*/false, 1, 2);
  EXPECT_EQ(del.view(), "type=deleted key=a%20b cmd=delete clsid=1 size=2");
  LogLine md;
  FormatItemDeleted(&md, "c", /*meta=*/true, 3, 0);
  EXPECT_EQ(md.view(), "type=deleted key=c cmd=md clsid=3 size=0");
}

// memcached 1.6.18's logger.c formats, after "ts=... gid=... ".
TEST(WatchTest, FormatsMemcachedsLines) {
  LogLine get;
  FormatItemGet(&get, "a b%", FetchStatus::kFound, 7, 23, 300);
  EXPECT_EQ(get.view(), "type=item_get key=a%20b%25 status=found clsid=7 cfd=23 size=300");
  LogLine store;
  FormatItemStore(&store, "k", StoreLogStatus::kNotStored, StoreLogCommand::kAdd, 100, 1, 5, 2);
  EXPECT_EQ(store.view(),
            "type=item_store key=k status=not_stored cmd=add ttl=100 clsid=1 cfd=5 size=2");
  LogLine open;
  FormatConnNew(&open, "127.0.0.1", 40000, ConnTransport::kTcp, 9);
  EXPECT_EQ(open.view(), "type=conn_new rip=127.0.0.1 rport=40000 transport=tcp cfd=9");
  LogLine close;
  FormatConnClose(&close, "unix", 0, ConnTransport::kLocal, CloseReason::kNormal, 9);
  EXPECT_EQ(close.view(),
            "type=conn_close rip=unix rport=0 transport=local reason=normal cfd=9");
  StoreEvent e;
  e.kind = StoreEventKind::kEviction;
  e.key = "old";
  e.slab_class = 3;
  e.value_len = 50;
  e.ttl_s = -1;
  e.idle_s = 12;
  LogLine evicted;
  EXPECT_EQ(FormatStoreEvent(&evicted, e), uint32_t{kWatchEvictions});
  EXPECT_EQ(evicted.view(), "type=eviction key=old fetch=no ttl=-1 la=12 clsid=3 size=50");
}

TEST(WatchTest, FormatsTheStampedeStream) {
  StoreEvent e;
  e.kind = StoreEventKind::kLeaseGranted;
  e.key = "hot";
  e.token = 42;
  e.reason = LeaseReason::kXFetch;
  e.ttl_s = 30;
  e.slab_class = 1;
  LogLine granted;
  EXPECT_EQ(FormatStoreEvent(&granted, e), uint32_t{kWatchStampede});
  EXPECT_EQ(granted.view(), "type=lease_granted key=hot token=42 reason=xfetch ttl=30 clsid=1");
  e.kind = StoreEventKind::kLeaseTimedOut;
  e.previous_token = 42;
  e.token = 43;
  e.held_ms = 5001;
  LogLine timed_out;
  FormatStoreEvent(&timed_out, e);
  EXPECT_EQ(timed_out.view(), "type=lease_timeout key=hot token=42 new_token=43 held_ms=5001");
  LogLine woken;
  FormatWait(&woken, WaitEvent::kWoken, "hot", 43, 17, 8);
  EXPECT_EQ(woken.view(), "type=reader_woken key=hot token=43 waited_ms=17 cfd=8");
}

// memcached's extstore lines (logger.c: LOGGER_EXTSTORE_WRITE, LOGGER_COMPACT_*),
// 1.6.18's and 1.6.45's compact_read_end.
TEST(WatchTest, FormatsTheFlashTierLines) {
  struct Case {
    StoreEventKind kind;
    bool long_form;
    uint32_t want_kind;
    std::string want;
  };
  const Case cases[] = {
      {StoreEventKind::kFlashWrite, false, kWatchEvictions,
       "type=extwrite key=a%20b fetch=yes ttl=-1 la=7 clsid=12 bucket=3"},
      {StoreEventKind::kCompactFragInfo, false, kWatchSysEvents, "type=compact_fraginfo ratio=0.67 bytes=5629499"},
      {StoreEventKind::kCompactStart, false, kWatchSysEvents, "type=compact_start id=4 version=9"},
      {StoreEventKind::kCompactReadStart, false, kWatchSysEvents, "type=compact_read_start id=4 offset=2097152"},
      {StoreEventKind::kCompactReadEnd, false, kWatchSysEvents,
       "type=compact_read_end id=4 offset=2097152 rescues=5 lost=1 skipped=2"},
      {StoreEventKind::kCompactReadEnd, true, kWatchSysEvents,
       "type=compact_read_end id=4 offset=2097152 rescues=5 rescues_realloc=0 lost=1 lost_oom=0 skipped=2"},
      {StoreEventKind::kCompactEnd, false, kWatchSysEvents, "type=compact_end id=4"},
  };
  for (const Case& c : cases) {
    StoreEvent e;
    e.kind = c.kind;
    e.key = "a b";
    e.fetched = true;
    e.ttl_s = -1;
    e.idle_s = 7;
    e.slab_class = 12;
    e.bucket = 3;
    e.page = 4;
    e.page_version = 9;
    e.offset = 2097152;
    e.rescues = 5;
    e.lost = 1;
    e.skipped = 2;
    e.long_form = c.long_form;
    e.frag_ratio = 0.671;
    e.frag_bytes = 5629499;
    LogLine line;
    EXPECT_EQ(FormatStoreEvent(&line, e), c.want_kind) << c.want;
    EXPECT_EQ(line.view(), c.want);
  }
}

class RecordingLog final : public WatchLog {
 public:
  explicit RecordingLog(uint32_t kinds) { SetWatched(kinds); }
  void Write(uint32_t, std::string_view body) override { lines.emplace_back(body); }
  std::vector<std::string> lines;
};

// `watch sysevents` asks the store for the compaction events, `watch
// evictions` for evictions and moves to flash.
TEST(WatchTest, TheWatchedKindsPickTheStoreEvents) {
  RecordingLog recording(kWatchSysEvents | kWatchEvictions);
  StoreEventLog log(&recording);
  log.Sync(kWatchSysEvents);
  for (StoreEventKind k : {StoreEventKind::kCompactFragInfo, StoreEventKind::kCompactStart,
                           StoreEventKind::kCompactReadStart, StoreEventKind::kCompactReadEnd,
                           StoreEventKind::kCompactEnd}) {
    EXPECT_TRUE(log.Wants(k)) << static_cast<int>(k);
  }
  EXPECT_FALSE(log.Wants(StoreEventKind::kFlashWrite));
  EXPECT_FALSE(log.Wants(StoreEventKind::kEviction));
  log.Sync(kWatchEvictions);
  EXPECT_TRUE(log.Wants(StoreEventKind::kFlashWrite));
  EXPECT_TRUE(log.Wants(StoreEventKind::kEviction));
  EXPECT_FALSE(log.Wants(StoreEventKind::kCompactStart));
}

// memcached's do_store_item looks the key up first: a store logs that
// lookup's item_get (to fetchers) before its item_store (watcher.t 22-23,
// watcher_connid.t); a stored append logs the combined item.
TEST(WatchTest, AStoreLogsItsLookupBeforeItsStore) {
  struct Case {
    uint32_t kinds;
    StoreMode mode;
    StoreResult result;
    std::vector<std::string> want;
  };
  StoreResult miss{.status = StoreStatus::kStored};
  StoreResult hit{.status = StoreStatus::kNotStored, .found = {.live = true, .value_len = 4}};
  StoreResult appended{.status = StoreStatus::kStored, .stored_size = 6,
                       .found = {.live = true, .value_len = 4, .client_flags = 0}};
  StoreResult too_large{.status = StoreStatus::kTooLarge};
  const Case cases[] = {
      {kWatchFetchers | kWatchMutations, StoreMode::kSet, miss,
       {"type=item_get key=k status=not_found clsid=0 cfd=7 size=0",
        "type=item_store key=k status=stored cmd=set ttl=0 clsid=1 cfd=7 size=2"}},
      {kWatchFetchers, StoreMode::kAdd, hit, {"type=item_get key=k status=found clsid=1 cfd=7 size=4"}},
      {kWatchMutations, StoreMode::kAdd, hit,
       {"type=item_store key=k status=not_stored cmd=add ttl=0 clsid=1 cfd=7 size=2"}},
      {kWatchMutations, StoreMode::kAppend, appended,
       {"type=item_store key=k status=stored cmd=append ttl=0 clsid=1 cfd=7 size=6"}},
      {kWatchFetchers | kWatchMutations, StoreMode::kSet, too_large, {}},   // refused before the lookup
  };
  for (const Case& c : cases) {
    RecordingLog log(c.kinds);
    WatchContext ctx{.log = &log, .fd = 7};
    ctx.Store(nullptr, "k", 2, 0, 0, c.mode, c.result);
    EXPECT_EQ(log.lines, c.want) << static_cast<int>(c.mode);
  }
}

// delete, incr/decr, touch, ma and md log the item_get of their lookup, as
// memcached's do_item_get does (an expired or flushed copy it removed says
// so); only to fetchers.
TEST(WatchTest, ALookupLogsItemGetToFetchersOnly) {
  struct Case {
    uint32_t kinds;
    FoundItem found;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {kWatchFetchers, {.live = true, .value_len = 1},
       {"type=item_get key=n status=found clsid=1 cfd=7 size=1"}},
      {kWatchFetchers, {.value_len = 1}, {"type=item_get key=n status=not_found clsid=0 cfd=7 size=0"}},
      {kWatchFetchers, {.miss = LookupMiss::kExpired},
       {"type=item_get key=n status=expired clsid=0 cfd=7 size=0"}},
      {kWatchFetchers, {.miss = LookupMiss::kFlushed},
       {"type=item_get key=n status=flushed clsid=0 cfd=7 size=0"}},
      {kWatchFetchers, {.live = true, .value_len = 2000},
       {"type=item_get key=n status=found clsid=15 cfd=7 size=2000"}},
      {kWatchMutations | kWatchDeletions, {.live = true, .value_len = 1}, {}},
  };
  for (const Case& c : cases) {
    RecordingLog log(c.kinds);
    WatchContext ctx{.log = &log, .fd = 7};
    ctx.Lookup("n", c.found);
    EXPECT_EQ(log.lines, c.want) << c.found.value_len;
  }
}

// memcached logs an item whose value it moved to extstore by its header item
// (the key and a 12-byte item_hdr: class 1 for a short key, 2 for a 40-byte
// one) with the value's length as size=. Lines recorded from memcached 1.6.45
// (-m 64 -o ext_path=...,ext_item_age=0, 1000-byte values with flags 3 or 0,
// each read, looked up and deleted once it was on flash).
TEST(WatchTest, AValueOnFlashIsLoggedByItsHeaderItemsClass) {
  RecordingLog log(kWatchFetchers | kWatchDeletions);
  WatchContext ctx{.log = &log, .fd = 30};
  const std::string long_key(40, 'L');
  ReadResult read;
  read.client_flags = 3;
  read.value_len_on_flash = 1000;
  read.on_flash = true;
  ctx.Fetch("k019990", read, true);
  read.client_flags = 0;
  ctx.Fetch(long_key, read, true);
  const FoundItem found{.live = true, .value_len = 1000, .client_flags = 3, .on_flash = true};
  ctx.Lookup("k019991", found);
  ctx.Delete("k019991", false, found);
  ctx.Delete("k019994", true, found);
  read.on_flash = false;   // the same value in memory: its own class
  ctx.Fetch("k019990", read, true);
  const std::vector<std::string> want = {
      "type=item_get key=k019990 status=found clsid=1 cfd=30 size=1000",
      "type=item_get key=" + long_key + " status=found clsid=2 cfd=30 size=1000",
      "type=item_get key=k019991 status=found clsid=1 cfd=30 size=1000",
      "type=deleted key=k019991 cmd=delete clsid=1 size=1000",
      "type=deleted key=k019994 cmd=md clsid=1 size=1000",
      "type=item_get key=k019990 status=found clsid=12 cfd=30 size=1000"};
  EXPECT_EQ(log.lines, want);
}

// An incr/ma that created its item logs memcached's add of the initial number.
TEST(WatchTest, ACreatingIncrLogsAnAdd) {
  RecordingLog log(kWatchFetchers | kWatchMutations);
  WatchContext ctx{.log = &log, .fd = 7};
  ctx.Created(nullptr, "n", 12345, 0);
  const std::vector<std::string> want = {
      "type=item_get key=n status=not_found clsid=0 cfd=7 size=0",
      "type=item_store key=n status=stored cmd=add ttl=0 clsid=1 cfd=7 size=5"};
  EXPECT_EQ(log.lines, want);
}

TEST(WatchTest, LongLinesAreCutNotOverflowed) {
  LogLine line;
  const std::string key(250, '\xff');   // 750 bytes encoded
  FormatItemGet(&line, key, FetchStatus::kNotFound, 0, 1, 0);
  FormatItemGet(&line, key, FetchStatus::kNotFound, 0, 1, 0);
  EXPECT_EQ(line.view().size(), 1024u);
}

}  // namespace
}  // namespace herdless
