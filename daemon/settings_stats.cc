#include "daemon/settings_stats.h"

#include <atomic>
#include <string_view>
#include <vector>

#include "daemon/option_table.h"
#include "storage/item_store.h"

namespace herdless {

namespace {

using W = StatWriter;
using V = SettingsView;

// An option's setting: the row of the option that sets `name` writes it.
constexpr SettingLine Option(const char* name) { return {.name = name}; }
// Machinery herdless does not have, shown with memcached's default so that
// tools that read it still parse.
constexpr SettingLine Fixed(const char* name, const char* value) {
  return {.name = name, .fixed = value};
}

// memcached 1.6.18's process_stat_settings, in its order (its TLS and extstore
// blocks where it prints them), then herdless's own settings in
// the order they were added. An option's setting that is not listed follows
// them, in the option table's order: a new option needs no entry here.
// Under -o compat=1.6.45, 1.6.45's: num_napi_ids as a number, client_flags_size.
constexpr SettingLine kSettings[] = {
    Option("maxbytes"), Option("maxconns"), Option("tcpport"), Option("udpport"),
    Option("inter"), Option("verbosity"), Fixed("oldest", "0"), Option("evictions"),
    Option("domain_socket"), Option("umask"), Option("shutdown_command"),
    Fixed("growth_factor", "1.25"), Fixed("chunk_size", "48"), Option("num_threads"),
    {"num_threads_per_udp",   // every worker reads UDP
     [](const V& v, std::string_view n, W* w) { w->AddSigned(n, v.settings.num_threads); }},
    Option("stat_key_prefix"),
    {"detail_enabled",   // -D, then stats detail on|off
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.detail_enabled); }},
    Option("reqs_per_event"), Option("cas_enabled"), Option("tcp_backlog"),
    Option("binding_protocol"), Option("auth_enabled_sasl"), Option("auth_enabled_ascii"),
    Option("item_size_max"),
    {"maxconns_fast",   // -o no_modern: no
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.settings.machinery.maxconns_fast); }},
    Fixed("hashpower_init", "0"),
    {"slab_reassign",   // -o no_modern: no
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.settings.machinery.slab_reassign); }},
    // slabs automove and lru_crawler change these.
    {"slab_automove",
     [](const V& v, std::string_view n, W* w) {
       w->Add(n, uint64_t{v.operators.slab_automove.load(std::memory_order_relaxed)});
     }},
    {"slab_automove_ratio",
     [](const V& v, std::string_view n, W* w) {
       w->AddFixed(n, v.operators.slab_automove_ratio.load(std::memory_order_relaxed), 2);
     }},
    {"slab_automove_window",
     [](const V& v, std::string_view n, W* w) {
       w->Add(n, uint64_t{v.operators.slab_automove_window.load(std::memory_order_relaxed)});
     }},
    Option("slab_chunk_max"),
    {"lru_crawler",
     [](const V& v, std::string_view n, W* w) {
       w->AddBool(n, v.operators.lru_crawler.load(std::memory_order_relaxed));
     }},
    {"lru_crawler_sleep",
     [](const V& v, std::string_view n, W* w) {
       w->Add(n, uint64_t{v.operators.lru_crawler_sleep.load(std::memory_order_relaxed)});
     }},
    {"lru_crawler_tocrawl",
     [](const V& v, std::string_view n, W* w) {
       w->Add(n, uint64_t{v.operators.lru_crawler_tocrawl.load(std::memory_order_relaxed)});
     }},
    Fixed("tail_repair_time", "0"), Option("flush_enabled"), Option("dump_enabled"),
    Fixed("hash_algorithm", "xxh3"),
    // -o lru_maintainer / no_lru_maintainer / no_modern; then what lru tune|mode|temp_ttl
    // set, printed as memcached prints them (the percentages as ints, the ttl unsigned).
    {"lru_maintainer_thread",
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.settings.machinery.lru_maintainer); }},
    {"lru_segmented",
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.operators.lru_segmented.load()); }},
    {"hot_lru_pct",
     [](const V& v, std::string_view n, W* w) {
       w->AddSigned(n, static_cast<int32_t>(v.operators.hot_lru_pct.load()));
     }},
    {"warm_lru_pct",
     [](const V& v, std::string_view n, W* w) {
       w->AddSigned(n, static_cast<int32_t>(v.operators.warm_lru_pct.load()));
     }},
    {"hot_max_factor",
     [](const V& v, std::string_view n, W* w) { w->AddFixed(n, v.operators.hot_max_factor.load(), 2); }},
    {"warm_max_factor",
     [](const V& v, std::string_view n, W* w) { w->AddFixed(n, v.operators.warm_max_factor.load(), 2); }},
    {"temp_lru", [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.operators.temp_lru.load()); }},
    {"temporary_ttl",
     [](const V& v, std::string_view n, W* w) {
       w->Add(n, uint64_t{static_cast<uint32_t>(v.operators.temporary_ttl.load())});
     }},
    Option("idle_timeout"), Fixed("watcher_logbuf_size", "262144"),
    Fixed("worker_logbuf_size", "65536"), Fixed("read_buf_mem_limit", "0"),
    {"track_sizes",   // stats sizes_enable|sizes_disable
     [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.tracking_sizes); }},
    Fixed("inline_ascii_response", "no"),
    Option("ext_item_size"), Option("ext_item_age"), Option("ext_low_ttl"), Option("ext_recache_rate"),
    Option("ext_wbuf_size"), Option("ext_compact_under"), Option("ext_drop_under"),
    Option("ext_max_sleep"), Option("ext_max_frag"),
    {"slab_automove_freeratio",   // -o slab_automove_freeratio, then slabs automove freeratio
     [](const V& v, std::string_view n, W* w) {
       w->AddFixed(n, v.operators.slab_automove_freeratio.load(std::memory_order_relaxed), 3);
     }},
    Option("ext_drop_unread"),
    Option("ssl_enabled"), Option("ssl_chain_cert"), Option("ssl_key"), Option("ssl_verify_mode"),
    Option("ssl_keyformat"), Option("ssl_ciphers"), Option("ssl_ca_cert"), Option("ssl_wbuf_size"),
    Option("ssl_session_cache"), Option("ssl_kernel_tls"), Option("ssl_min_version"),
    {"num_napi_ids",   // 1.6.18 prints the number with %s: "(null)" for 0 (and crashes on another)
     [](const V& v, std::string_view n, W* w) {
       const int ids = v.settings.num_napi_ids;
       if (ids == 0 && !v.settings.latest()) w->Add(n, "(null)");
       else w->Add(n, uint64_t(ids));
     }},
    Option("memory_file"),
    {"client_flags_size",   // 1.6.45: bytes of client flags an item keeps
     [](const V& v, std::string_view n, W* w) {
       if (v.settings.latest()) w->Add(n, uint64_t{4});
     }},
    // herdless
    Option("lease_timeout"), Option("xfetch_delta_ms"), Option("xfetch_beta"),
    Option("stale_grace"), Option("classic_stampede"), Option("wait_timeout_ms"),
    Option("refresh_ahead"), Option("refresh_hot"), Option("refresh_epsilon"),
    Option("refresh_max_fraction"), Option("stalled_client_timeout"), Option("exact_threads"),
    Option("io"),
    Option("snapshot_interval"), Option("ssl_handshake_timeout"),
};

bool Listed(std::string_view name) {
  for (const SettingLine& line : kSettings) {
    if (name == line.name) return true;
  }
  return false;
}

// What to print, in order: kSettings with each Option() replaced by its row,
// then the rows' settings kSettings does not list.
struct Printed {
  const SettingLine* line;
  bool tls;   // only when TLS is available
};

std::vector<Printed> PrintOrder() {
  std::vector<Printed> order;
  auto add_rows = [&order](std::string_view name, bool listed) {
    for (std::span<const OptionRow> rows : {FlagRows(), SuboptionRows()}) {
      for (const OptionRow& row : rows) {
        const char* setting = row.setting.name;
        if (setting == nullptr || (listed ? name != setting : Listed(setting))) continue;
        order.push_back({&row.setting, row.tls});
      }
    }
  };
  for (const SettingLine& line : kSettings) {
    if (line.write != nullptr || line.fixed != nullptr) {
      order.push_back({&line, false});
    } else {
      add_rows(line.name, true);
    }
  }
  add_rows({}, false);
  return order;
}

}  // namespace

void WriteSettingsStats(ServerInfo& server, const ItemStore& store, StatWriter* w) {
  const SettingsView view{server.Settings(), store.memory_limit(), store.tracking_sizes(),
                          server.Verbosity(), server.prefix_stats().delimiter(),
                          server.prefix_stats().enabled(), server.operators()};
  WriteSettingLines(view, w);
}

void WriteSettingLines(const SettingsView& view, StatWriter* w) {
  static const std::vector<Printed> kOrder = PrintOrder();
  for (const Printed& p : kOrder) {
    if (p.tls && !view.settings.tls.available) continue;
    if (p.line->fixed != nullptr) {
      w->Add(p.line->name, p.line->fixed);
    } else {
      p.line->write(view, p.line->name, w);
    }
  }
}

}  // namespace herdless
