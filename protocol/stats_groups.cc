#include "protocol/stats_groups.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/foreign_log.h"
#include "protocol/warm.h"

namespace herdless {

namespace {

// Stats memcached prints for machinery herdless does not have: the names stay,
// so dashboards and tools that read them keep working.
void Zeros(StatWriter* w, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) w->Add(name, uint64_t{0});
}

int HashPowerLevel(uint64_t buckets) {
  int power = 0;
  while (buckets > 1) {
    buckets >>= 1;
    ++power;
  }
  return power;
}

// herdless's warm-restart figures (-e): the last write and the load at start.
void SnapshotStats(const SnapshotFigures& f, StatWriter* w) {
  w->Add("snapshot_in_progress", uint64_t{f.in_progress});
  w->Add("snapshot_writes", f.writes);
  w->Add("snapshot_failures", f.failures);
  w->AddSigned("snapshot_last_time", f.last_time);
  w->Add("snapshot_last_duration_ms", f.last_duration_ms);
  w->Add("snapshot_last_bytes", f.last_bytes);
  w->Add("snapshot_last_items", f.last_items);
  w->Add("snapshot_loaded_items", f.loaded_items);
  w->Add("snapshot_load_skipped_expired", f.load_skipped_expired);
  w->Add("snapshot_load_skipped_too_large", f.load_skipped_too_large);
  w->Add("snapshot_load_skipped_no_memory", f.load_skipped_no_memory);
  w->Add("snapshot_load_skipped_changed", f.load_skipped_changed);
  w->Add("snapshot_load_skipped_flushed", f.load_skipped_flushed);
  w->Add("snapshot_load_ms", f.load_ms);
}

// server_stats' first lines: the process and its connections.
void ProcessStats(const ServerSnapshot& snap, std::string_view version, bool maxconns_fast,
                  StatWriter* w) {
  w->AddSigned("pid", snap.pid);
  w->AddSigned("uptime", snap.uptime);
  w->AddSigned("time", snap.time);
  w->Add("version", version);
  w->Add("libevent", std::string_view(snap.libevent));
  w->Add("pointer_size", uint64_t{8 * sizeof(void*)});
  w->AddFixed("rusage_user", snap.rusage_user, 6);
  w->AddFixed("rusage_system", snap.rusage_system, 6);
  w->Add("max_connections", snap.max_connections);
  w->Add("curr_connections", snap.curr_connections);
  w->Add("total_connections", snap.total_connections);
  if (maxconns_fast) w->Add("rejected_connections", snap.rejected_connections);
  w->Add("connection_structures", snap.connection_structures);
  // memcached's response-object and read-buffer pools: herdless has neither
  // (replies point into items, buffers belong to connections).
  Zeros(w, {"response_obj_oom", "response_obj_count", "response_obj_bytes", "read_buf_count",
            "read_buf_bytes", "read_buf_bytes_free", "read_buf_oom"});
  w->Add("reserved_fds", snap.reserved_fds);
}

// server_stats' hash table, slab mover, LRU crawler and logger lines.
void MaintenanceStats(const StoreStats& ss, ServerInfo* server, const ServerSnapshot& snap,
                      StatWriter* w) {
  w->Add("hash_power_level", uint64_t(HashPowerLevel(ss.hash_buckets)));
  w->Add("hash_bytes", ss.hash_bytes);
  w->Add("hash_is_expanding", uint64_t{0});
  // No slab rebalancer or LRU maintainer thread: memcached's names, zero
  // (1.6.45's set under -o compat=1.6.45: evictions_nomem went, busy_nomem
  // and the last busy status came). A segment back in the free pool is a
  // page any class takes: slabs_moved. Each block shows only while its
  // machinery is on, as in memcached (-o no_modern / no_slab_reassign,
  // lru_crawler disable / no_lru_crawler, no_lru_maintainer).
  const ProtocolSettings& settings = server->Settings();
  if (settings.machinery.slab_reassign) {
    Zeros(w, {"slab_reassign_rescues", "slab_reassign_chunk_rescues"});
    if (!settings.latest()) Zeros(w, {"slab_reassign_evictions_nomem"});
    Zeros(w, {"slab_reassign_inline_reclaim", "slab_reassign_busy_items",
              "slab_reassign_busy_deletes"});
    if (settings.latest()) {
      Zeros(w, {"slab_reassign_busy_nomem"});
      w->Add("slab_reassign_last_busy_status", "none");
    }
    Zeros(w, {"slab_reassign_running"});
    w->Add("slabs_moved", ss.segments_recycled);
  }
  if (server->operators().lru_crawler.load(std::memory_order_relaxed)) {
    w->Add("lru_crawler_running", uint64_t{server->CrawlRunning() ? 1u : 0u});
    w->Add("lru_crawler_starts", server->CrawlStarts());
  }
  if (settings.machinery.lru_maintainer) w->Add("lru_maintainer_juggles", uint64_t{0});
  w->Add("malloc_fails", uint64_t{0});
  // herdless's workers write log lines straight into the watchers' buffers:
  // nothing is dropped or written on the way (log_worker_*).
  Zeros(w, {"log_worker_dropped", "log_worker_written"});
  w->Add("log_watcher_skipped", snap.log_watcher_skipped);
  w->Add("log_watcher_sent", snap.log_watcher_sent);
  w->Add("log_watchers", snap.log_watchers);
}

// memcached 1.6.45's extstore_memory_pressure: the share of memory held by
// what cannot move to flash, the items of the slab classes whose chunks are
// smaller than ext_item_size (memcached counts those classes' 1 MB pages
// against all of its pages; herdless the classes' bytes against -m).
double FlashMemoryPressure(const StoreStats& ss, uint64_t memory_limit, uint32_t item_size) {
  uint64_t held = 0;
  for (int k = 1; k <= kMemcachedClasses && MemcachedChunkSize(k) < item_size; k++) held += ss.classes[k].bytes;
  return memory_limit == 0 ? 0 : 100.0 * static_cast<double>(held) / static_cast<double>(memory_limit);
}

// memcached's storage_stats (-o ext_path), after the logger's lines; 1.6.45's
// adds the memory pressure and the rescues into its coldcompact and old buckets.
void ExtstoreStats(const FlashStore& flash, const StoreStats& ss, uint64_t memory_limit,
                   uint32_t item_size, bool latest, StatWriter* w) {
  const FlashStats f = flash.Stats();
  if (latest) w->AddFixed("extstore_memory_pressure", FlashMemoryPressure(ss, memory_limit, item_size), 2);
  w->Add("extstore_compact_lost", f.compact_lost);
  w->Add("extstore_compact_rescues", f.compact_rescues);
  if (latest) {
    w->Add("extstore_compact_resc_cold", f.compact_resc_cold);
    w->Add("extstore_compact_resc_old", f.compact_resc_old);
  }
  w->Add("extstore_compact_skipped", f.compact_skipped);
  w->Add("extstore_page_allocs", f.page_allocs);
  w->Add("extstore_page_evictions", f.page_evictions);
  w->Add("extstore_page_reclaims", f.page_reclaims);
  w->Add("extstore_pages_free", f.pages_free);
  w->Add("extstore_pages_used", f.pages_used);
  w->Add("extstore_objects_evicted", f.objects_evicted);
  w->Add("extstore_objects_read", f.objects_read);
  w->Add("extstore_objects_written", f.objects_written);
  w->Add("extstore_objects_used", f.objects_used);
  w->Add("extstore_bytes_evicted", f.bytes_evicted);
  w->Add("extstore_bytes_written", f.bytes_written);
  w->Add("extstore_bytes_read", f.bytes_read);
  w->Add("extstore_bytes_used", f.bytes_used);
  w->Add("extstore_bytes_fragmented", f.bytes_fragmented);
  w->Add("extstore_limit_maxbytes", f.limit_maxbytes);
  w->Add("extstore_io_queue", f.io_queue);
}

// memcached's `stats extstore`: four lines per page, as its
// extstore_get_page_data fills them: a page still being written shows zeros
// in 1.6.18 and its version and bytes in 1.6.45; only a written page holding
// values shows the bucket that wrote it; every page its file's free bucket.
void ExtstorePageStats(const FlashStore& flash, bool latest, StatWriter* w) {
  const std::vector<FlashPageData> pages = flash.PageData();
  for (size_t i = 0; i < pages.size(); i++) {
    const FlashPageData& p = pages[i];
    const bool shown = !p.open || latest;
    const bool bucket_shown = !p.open && p.objects > 0;
    const std::string n = std::to_string(i);
    w->Add(n + ":version", shown ? p.version : 0);
    w->Add(n + ":bytes", shown ? p.bytes_used : 0);
    w->Add(n + ":bucket", uint64_t{bucket_shown ? static_cast<uint32_t>(p.bucket) : 0u});
    w->Add(n + ":free_bucket", uint64_t{static_cast<uint32_t>(p.free_bucket)});
  }
}

// The engine's totals (memcached's threadlocal and slab stats, then
// do_item_stats_totals, whose LRU maintainer's lines only with it).
void ItemTotalsStats(const StoreStats& ss, bool lru_maintainer, StatWriter* w) {
  w->Add("bytes", ss.bytes);
  w->Add("curr_items", ss.curr_items);
  w->Add("total_items", ss.total_items);
  w->Add("slab_global_page_pool", uint64_t{0});
  w->Add("expired_unfetched", ss.expired_unfetched);
  w->Add("evicted_unfetched", ss.evicted_unfetched);
  if (lru_maintainer) w->Add("evicted_active", ss.evicted_active);
  w->Add("evictions", ss.evictions);
  w->Add("reclaimed", ss.reclaimed);
  w->Add("crawler_reclaimed", ss.crawler_reclaimed);
  w->Add("crawler_items_checked", ss.crawler_items_checked);
  Zeros(w, {"lrutail_reflocked"});
  if (lru_maintainer) {
    Zeros(w, {"moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped"});
  }
}

// herdless's stampede counters.
void LeaseStats(const StoreStats& ss, StatWriter* w) {
  w->Add("curr_leases", ss.curr_leases);
  w->Add("lease_grants", ss.lease_grants);
  w->Add("lease_fulfilled", ss.lease_fulfilled);
  w->Add("lease_timeouts", ss.lease_timeouts);
  w->Add("lease_sets_refused", ss.lease_sets_refused);
  w->Add("xfetch_grants", ss.xfetch_grants);
  w->Add("refresh_grants", ss.refresh_grants);
  w->Add("hot_keys", ss.hot_keys);
  w->Add("tracked_keys", ss.rated_keys);
  w->Add("stale_hits", ss.stale_hits);
}

// `stats`: memcached's names in memcached's order (server_stats, then the
// engine totals), as a memcached run with no slab rebalancer, LRU crawler,
// segmented LRU, extstore, proxy or TLS prints them, since herdless has none
// of those. Its own lease and wait counters follow at the end, then the
// snapshot's. The workers' counters print from thread_stats.h's lists.
void GeneralStats(ItemStore* store, ServerInfo* server, StatWriter* w) {
  const ServerSnapshot snap = server->Snapshot();
  const ProtocolSettings& settings = server->Settings();
  const StoreStats ss = store->Stats();
  const ThreadStatsTotals& t = snap.totals;
#define HERDLESS_ADD_TOTAL(name) w->Add(#name, t.name);

  ProcessStats(snap, ServerVersion(server->Settings()), settings.machinery.maxconns_fast, w);
  const FlashStore* flash = store->config().flash;
  HERDLESS_GET_COMMAND_STATS(HERDLESS_ADD_TOTAL)
  if (flash != nullptr) {
#define HERDLESS_ADD_STORE(name) w->Add(#name, ss.name);
    HERDLESS_FLASH_COUNTERS(HERDLESS_ADD_STORE)
#undef HERDLESS_ADD_STORE
  }
  HERDLESS_OTHER_COMMAND_STATS(HERDLESS_ADD_TOTAL)
  if (settings.idle_timeout != 0) w->Add("idle_kicks", t.idle_kicks);
  w->Add("bytes_read", t.bytes_read);
  w->Add("bytes_written", t.bytes_written);
  w->Add("limit_maxbytes", uint64_t{store->memory_limit()});
  w->Add("accepting_conns", uint64_t{1});
  w->Add("listen_disabled_num", uint64_t{0});
  w->Add("time_in_listen_disabled_us", uint64_t{0});
  w->Add("threads", snap.threads);
  w->Add("conn_yields", t.conn_yields);
  MaintenanceStats(ss, server, snap, w);
  if (flash != nullptr) {
    ExtstoreStats(*flash, ss, store->memory_limit(),
                  server->operators().flash.item_size.load(std::memory_order_relaxed), settings.latest(), w);
  }
  if (settings.tls.enabled) {
    if (settings.tls.session_cache) w->Add("ssl_new_sessions", snap.ssl_new_sessions);
    w->Add("ssl_handshake_errors", t.ssl_handshake_errors);
    if (settings.latest()) w->Add("ssl_proto_errors", t.ssl_proto_errors);   // 1.6.45
    w->AddSigned("time_since_server_cert_refresh", snap.time - snap.ssl_cert_refresh_time);
  }
  Zeros(w, {"unexpected_napi_ids", "round_robin_fallback"});
  ItemTotalsStats(ss, settings.machinery.lru_maintainer, w);
  LeaseStats(ss, w);
  HERDLESS_WAIT_STATS(HERDLESS_ADD_TOTAL)
  if (settings.warm_enabled()) {
    HERDLESS_WARM_STATS(HERDLESS_ADD_TOTAL)
    w->Add("warm_active", uint64_t{WarmActive(settings, snap.uptime) && !server->WarmStopped()});
  }
  if (const ForeignLog* foreign = server->foreign_log(); foreign != nullptr) {
    const ForeignLog::Figures f = foreign->Stats();
#define HERDLESS_ADD_FOREIGN(name) w->Add(#name, f.name);
    HERDLESS_FOREIGN_STATS(HERDLESS_ADD_FOREIGN)
#undef HERDLESS_ADD_FOREIGN
    w->Add("curr_foreign_items", ss.curr_foreign_items);
  }
  if (snap.snapshot.enabled) SnapshotStats(snap.snapshot, w);
#undef HERDLESS_ADD_TOTAL
}

// `stats items` and `stats slabs`: one entry per size class that holds
// items. herdless stores items in segments, not slabs: a "class" is the
// memcached slab class an item of that size would occupy (StoreStats::classes,
// storage/item.h MemcachedSlabClass), so tools and dashboards see the same
// class numbers as memcached's. docs/operations.md says what each field
// means here.
void AddClassStat(StatWriter* w, std::string_view prefix, int cls, std::string_view name,
                  uint64_t value) {
  char key[64];
  const int n = std::snprintf(key, sizeof(key), "%.*s%d:%.*s", static_cast<int>(prefix.size()),
                              prefix.data(), cls, static_cast<int>(name.size()), name.data());
  w->Add(std::string_view(key, static_cast<size_t>(n)), value);
}

// memcached's item_stats; the LRU maintainer's lines only with it (and the
// temporary LRU's count only with temp_lru).
void ItemsStats(ItemStore* store, bool lru_maintainer, bool temp_lru, StatWriter* w) {
  const StoreStats ss = store->Stats();
  uint64_t ages[kMemcachedClasses + 1];
  store->ClassAges(ages);
  for (int k = 1; k <= kMemcachedClasses; k++) {
    const StoreStats::Class& c = ss.classes[k];
    if (c.items == 0) continue;
    auto add = [&](std::string_view name, uint64_t v) { AddClassStat(w, "items:", k, name, v); };
    add("number", c.items);
    if (lru_maintainer) {
      // No segmented LRU (lru_segmented no): every item counts as cold, as memcached's
      // without segmentation, and none as temporary.
      add("number_hot", 0);
      add("number_warm", 0);
      add("number_cold", c.items);
      if (temp_lru) add("number_temp", 0);
      add("age_hot", 0);
      add("age_warm", 0);
    }
    add("age", ages[k]);
    add("mem_requested", c.mem_requested);
    add("evicted", c.evicted);
    add("evicted_nonzero", c.evicted_nonzero);
    add("evicted_time", c.evicted_time);
    add("outofmemory", c.outofmemory);
    add("tailrepairs", 0);
    add("reclaimed", c.reclaimed);
    add("expired_unfetched", c.expired_unfetched);
    add("evicted_unfetched", c.evicted_unfetched);
    if (lru_maintainer) add("evicted_active", c.evicted_active);
    add("crawler_reclaimed", c.crawler_reclaimed);
    add("crawler_items_checked", c.crawler_items_checked);
    add("lrutail_reflocked", 0);
    if (!lru_maintainer) continue;
    add("moves_to_cold", 0);
    add("moves_to_warm", 0);
    add("moves_within_lru", 0);
    add("direct_reclaims", 0);
    add("hits_to_hot", 0);
    add("hits_to_warm", 0);
    add("hits_to_cold", c.get_hits + c.touch_hits);
    add("hits_to_temp", 0);
  }
}

void SlabsStats(ItemStore* store, StatWriter* w) {
  const StoreStats ss = store->Stats();
  uint64_t active = 0;
  for (int k = 1; k <= kMemcachedClasses; k++) {
    const StoreStats::Class& c = ss.classes[k];
    // memcached keeps a class's pages once it had items: a class whose items
    // are all gone still shows, with used_chunks 0 (t/lru-crawler.t).
    if (c.items == 0 && c.total_items == 0) continue;
    active++;
    auto add = [&](std::string_view name, uint64_t v) { AddClassStat(w, "", k, name, v); };
    const uint64_t chunk = MemcachedChunkSize(k);
    // The class's items in segment units, rounded up: segments are shared by
    // every class, so this is the memory its items take, not pages it owns.
    const uint64_t pages = ss.segment_size == 0 ? 0 : (c.bytes + ss.segment_size - 1) / ss.segment_size;
    add("chunk_size", chunk);
    add("chunks_per_page", ss.segment_size / chunk);
    add("total_pages", pages);
    // Items are not kept in chunks: one "chunk" per item, none free (free
    // room is in the segments being filled, shared by every class).
    add("total_chunks", c.items);
    add("used_chunks", c.items);
    add("free_chunks", 0);
    add("free_chunks_end", 0);
    add("get_hits", c.get_hits);
    add("cmd_set", c.set_cmds);
    add("delete_hits", c.delete_hits);
    add("incr_hits", c.incr_hits);
    add("decr_hits", c.decr_hits);
    add("cas_hits", c.cas_hits);
    add("cas_badval", c.cas_badval);
    add("touch_hits", c.touch_hits);
  }
  w->Add("active_slabs", active);
  w->Add("total_malloced", ss.total_malloced);
}

// `stats sizes`: the histogram of item sizes while sizes_enable is on.
void SizesStats(ItemStore* store, StatWriter* w) {
  if (!store->tracking_sizes()) {
    w->Add("sizes_status", "disabled");
    return;
  }
  for (const auto& [bytes, count] : store->SizeHistogram()) {
    char name[24];
    const int n = std::snprintf(name, sizeof(name), "%llu", static_cast<unsigned long long>(bytes));
    w->Add(std::string_view(name, static_cast<size_t>(n)), count);
  }
}

}  // namespace

bool WriteStatsGroup(ItemStore* store, ServerInfo* server, std::string_view group,
                     StatWriter* w) {
  if (group.empty()) {
    GeneralStats(store, server, w);
  } else if (group == "settings") {
    server->WriteSettings(*store, w);
  } else if (group == "items") {
    ItemsStats(store, server->Settings().machinery.lru_maintainer,
               server->operators().temp_lru.load(std::memory_order_relaxed), w);
  } else if (group == "slabs") {
    SlabsStats(store, w);
  } else if (group == "sizes") {
    SizesStats(store, w);
  } else if (group == "extstore") {
    // memcached built with extstore: one line group per page with ext_path, none without.
    if (store->config().flash != nullptr) ExtstorePageStats(*store->config().flash, server->Settings().latest(), w);
  } else if ((group == "sizes_disable" || group == "sizes_enable") && !server->Settings().latest()) {
    // 1.6.45 has neither (ERROR), as -o compat=1.6.45.
    // memcached writes these two without an end marker.
    const bool on = group == "sizes_enable";
    if (on && !server->Settings().cas_enabled) {
      // memcached tells an item stored since from an older one by its CAS.
      w->Add("sizes_status", "error");
      w->Add("sizes_error", "cas_support_disabled");
      return true;
    }
    store->TrackSizes(on);
    w->Add("sizes_status", on ? "enabled" : "disabled");
    return true;
  } else {
    return false;
  }
  w->End();
  return true;
}

void ConnsStats(ServerInfo* server, StatWriter* w) {
  for (const ConnectionInfo& c : server->Connections()) {
    const std::string prefix = std::to_string(c.fd) + ":";
    if (c.udp) w->Add(prefix + "UDP", "UDP");
    w->Add(prefix + "addr", std::string_view(c.addr));
    if (!c.listen_addr.empty()) w->Add(prefix + "listen_addr", std::string_view(c.listen_addr));
    w->Add(prefix + "state", std::string_view(c.state));
    w->AddSigned(prefix + "secs_since_last_cmd", c.secs_since_last_cmd);
  }
}

void ResetStats(ItemStore* store, ServerInfo* server) {
  server->ResetStats();
  store->ResetStats();
  server->prefix_stats().Clear();   // memcached's stats_reset clears them too
}

}  // namespace herdless
