// ServerInfo: what the protocol needs from the process around it, for `stats`,
// `verbosity`, `shutdown` and the other control commands. The daemon implements
// it; unit tests use a fake. The arrow still points daemon -> protocol: this
// interface is defined here and knows nothing of sockets or event loops.
#ifndef HERDLESS_PROTOCOL_SERVER_INFO_H_
#define HERDLESS_PROTOCOL_SERVER_INFO_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/prefix_stats.h"
#include "protocol/thread_stats.h"
#include "storage/flash_settings.h"
#include "storage/lease.h"

namespace herdless {

class ItemStore;
class ClusterRing;
class ForeignLog;
class StatWriter;
class WatchLog;

enum class ClassicStampedeMode : uint8_t { kOff, kStale, kWait };

// -o compat: which memcached's answers herdless gives where 1.6.18 and 1.6.45
// answer the same request differently (docs/protocol.md's table). What only
// 1.6.19+ has (a 1.6.18 client never sends it) is on under both.
enum class Compat : uint8_t { k1618, k1645 };

// -B: the protocol of a connection. kAuto picks per connection from its
// first byte (0x80 = binary), as memcached's negotiation does.
enum class BindingProtocol : uint8_t { kAuto, kAscii, kBinary };

// -Z and memcached's -o ssl_* settings, as given (the daemon's TlsContext
// turns them into an OpenSSL context). `stats settings` shows them.
struct TlsSettings {
  bool available = false;      // built with TLS: `stats settings` has the ssl_* block
  bool enabled = false;        // -Z
  std::string chain_cert;      // "" = not given
  std::string key;             // "" = the key is in chain_cert
  int verify_mode = 0;         // memcached's 0 none, 1 request, 2 require, 3 once
  int keyformat = 1;           // OpenSSL's SSL_FILETYPE_PEM (1) or _ASN1 (2)
  std::string ciphers;         // "" = OpenSSL's default
  std::string ca_cert;         // "" = none
  uint32_t wbuf_size = 16384;  // bytes: largest plaintext handed to one SSL_write
  bool session_cache = false;
  bool kernel_tls = false;
  int min_version = 2;         // 0 tlsv1.0, 1 tlsv1.1, 2 tlsv1.2, 3 tlsv1.3
  int handshake_timeout_s = 10;  // herdless: close a handshake not done by then
};

// memcached's machinery that herdless does not have, as memcached's -o
// switches set it at the start (lru_maintainer, no_lru_maintainer, no_modern,
// temporary_ttl, hot_lru_pct, ...): `stats settings` shows it, and `lru mode` / `lru temp_ttl`
// need the LRU maintainer as memcached's do. herdless's background reclaim
// stands for memcached's maintainer thread.
struct MachinerySettings {
  bool lru_maintainer = true;
  bool slab_reassign = true;       // no_modern: no
  bool maxconns_fast = true;       // no_modern: no
  uint32_t slab_automove = 1;      // no_modern: 0
  bool temp_lru = false;           // -o temporary_ttl=<ttl>: yes
  int32_t temporary_ttl = 61;
  uint32_t hot_lru_pct = 20;       // -o hot_lru_pct, warm_lru_pct, hot_max_factor, warm_max_factor
  uint32_t warm_lru_pct = 40;
  double hot_max_factor = 0.2;
  double warm_max_factor = 2.0;
  uint32_t lru_crawler_sleep = 100;   // -o lru_crawler_sleep, lru_crawler_tocrawl
  uint32_t lru_crawler_tocrawl = 0;
  double slab_automove_ratio = 0.8;   // -o slab_automove_ratio, slab_automove_window
  int slab_automove_window = 0;       // 0 = not given: 30, or 10 under -o compat=1.6.45
};

// Settings the protocol obeys and `stats settings` shows (memcached's names).
enum : int { kIoAuto = 0, kIoUring = 1, kIoEpoll = 2 };   // ProtocolSettings::io_path

struct ProtocolSettings {
  int tcp_port = 11211;            // -p: 0 = no TCP, -1 = a port the kernel picks
  int udp_port = 0;                // -U: 0 = no UDP (memcached 1.6's default), -1 = any port
  std::string domain_socket;       // -s: listen only on this unix socket
  int unix_mask = 0700;            // -a: the socket file's permissions
  bool evictions = true;           // -M turns off: a full cache refuses stores
  std::string listen_interface = "127.0.0.1";
  uint64_t max_bytes = 64u << 20;
  int max_connections = 1024;
  int num_threads = 4;             // -t: the most worker threads to run
  int num_napi_ids = 0;            // -N: checked against -t and shown, nothing else
  int io_path = kIoEpoll;          // -o io: kIoAuto, kIoUring, kIoEpoll (daemon/option_table.cc);
                                   // once the daemon started, the path it runs (1 or 2)
  bool exact_threads = false;      // -o exact_threads: run -t workers even beyond
                                   // the CPUs the process may use
  bool track_sizes = false;        // -o track_sizes: `stats sizes` counts from the start
  uint32_t sock_cookie_id = 0;     // -o sock_cookie_id: the listeners' SO_MARK, 0 = none
  uint64_t item_size_max = 1u << 20;
  // -o slab_chunk_max, in bytes (given in bytes under compat=1.6.18, in
  // kilobytes under 1.6.45): shown only, herdless has no slab chunks.
  uint32_t slab_chunk_max = 512u << 10;
  int reqs_per_event = 20;         // -R
  bool shutdown_enabled = false;   // -A
  bool flush_enabled = true;       // -F disables flush_all
  bool cas_enabled = true;         // -C disables CAS
  BindingProtocol binding_protocol = BindingProtocol::kAuto;   // -B
  int idle_timeout = 0;
  int stalled_client_timeout = 30; // close a client that reads nothing while its
                                   // output is at the bound this long; 0 = never
  int backlog = 1024;
  std::string username;            // -u
  std::string auth_file;           // -Y: "" = no ASCII authentication
  bool sasl_enabled = false;       // -S: binary SASL PLAIN against MEMCACHED_SASL_PWDB
  TlsSettings tls;
  // herdless stampede options (-o ...). The store's lease settings, with
  // storage's defaults: -o lease_timeout (seconds, kept in ms),
  // xfetch_delta_ms, refresh_hot, refresh_epsilon, refresh_max_fraction.
  LeaseSettings lease;
  double xfetch_beta = 0;
  uint32_t stale_grace_s = 0;
  ClassicStampedeMode classic_stampede = ClassicStampedeMode::kOff;
  uint32_t wait_timeout_ms = LeaseSettings{}.lease_timeout_ms;   // a parked reader: as long as a lease
  // Warm restart (-e, -o snapshot_interval)
  std::string memory_file;         // -e: the snapshot file, "" = none
  uint32_t snapshot_interval_s = 0;  // 0 = only at an orderly stop
  std::string metrics_address;     // -o metrics: the Prometheus endpoint's HOST:PORT, "" = off
  uint32_t restore_max_age_s = 0;    // an older snapshot restores stale (or nothing), 0 = off
  ExtstoreSettings ext;              // -o ext_*: the flash tier (off without ext_path)
  // Refresh-ahead (docs/protocol.md): on for lease-get and the classic modes;
  // meta clients ask with mg Yr. lease's refresh_* shape the window.
  bool refresh_ahead = false;
  // Warm-up from peers (-o warm_peer..., docs/deployment.md): "" = off.
  std::string warm_peer;           // HOST:PORT or a unix socket path, ';' between peers
  uint32_t warm_timeout_ms = 50;   // longest a reader waits for the peers
  uint32_t warm_holdoff_s = 2;     // a delete refuses warm fills of its key this long
  uint32_t warm_for_s = 0;         // warm-up ends this long after the start, 0 = never
  double warm_min_hit_ratio = 0.1;   // ... or when the peers' 10 s hit ratio falls below, 0 = never
  // The nutcracker pool this node is in (-o ring, ring_self; protocol/cluster_ring.h): "" = none.
  std::string ring;                // the YAML file
  std::string ring_self;           // this node as the pool lists it (host:port or name)
  uint32_t foreign_ttl_s = 60;     // the longest a key of another node lives here
  bool warm_enabled() const { return !warm_peer.empty() || !ring.empty(); }
  bool dump_enabled = true;        // -X turns off lru_crawler metadump and stats cachedump
  bool watch_enabled = true;       // -W turns off watch
  // The lru crawler (and herdless's background expiry crawl) at the start:
  // memcached's -o no_modern and no_lru_crawler turn it off, lru_crawler on.
  bool lru_crawler_at_start = true;
  MachinerySettings machinery;     // -o lru_maintainer, no_modern, temporary_ttl, ...
  char prefix_delimiter = ':';     // -D: per-prefix stats (stats detail), and
  bool detail_enabled = false;     // -D turns them on, as memcached's -D does
  Compat compat = Compat::k1618;   // -o compat=1.6.18|1.6.45
  bool latest() const { return compat == Compat::k1645; }
};

// Operator switches set at run time (lru_crawler, slabs automove, extstore), with
// memcached 1.6.18's defaults; shown by `stats settings`. Shared by the
// workers and the maintenance timer, hence atomic.
struct OperatorSettings {
  std::atomic<bool> lru_crawler{true};          // lru_crawler enable|disable
  std::atomic<uint32_t> lru_crawler_sleep{100}; // microseconds per 1000 items checked
  std::atomic<uint32_t> lru_crawler_tocrawl{0}; // items per class a crawl checks, 0 = all
  std::atomic<uint32_t> slab_automove{1};       // 0 = off, 1 and 2 = on
  std::atomic<double> slab_automove_ratio{0.8};
  // slabs automove window|freeratio (memcached 1.6.20+): kept and shown only.
  // The window starts at 10 under -o compat=1.6.45 (the daemon sets it).
  std::atomic<uint32_t> slab_automove_window{30};
  std::atomic<double> slab_automove_freeratio{0.01};
  // lru tune|mode|temp_ttl: kept and shown only. herdless's LRU is S3-FIFO, not
  // memcached's segmented one, so lru_segmented starts off (docs/operations.md).
  std::atomic<bool> lru_segmented{false};
  std::atomic<uint32_t> hot_lru_pct{20};
  std::atomic<uint32_t> warm_lru_pct{40};
  std::atomic<double> hot_max_factor{0.2};
  std::atomic<double> warm_max_factor{2.0};
  std::atomic<bool> temp_lru{false};
  std::atomic<int32_t> temporary_ttl{61};
  // extstore item_size|item_age|...: the flash tier's run-time settings.
  FlashTunables flash;

  // What the options start the run-time settings at: the crawler (-o lru_crawler,
  // no_modern), -o slab_automove_freeratio, the window (1.6.45's default is 10),
  // and memcached's other -o switches and values (MachinerySettings).
  void StartWith(const ProtocolSettings& s) {
    const MachinerySettings& m = s.machinery;
    lru_crawler.store(s.lru_crawler_at_start, std::memory_order_relaxed);
    slab_automove_freeratio.store(s.ext.slab_automove_freeratio, std::memory_order_relaxed);
    if (m.slab_automove_window != 0) {
      slab_automove_window.store(static_cast<uint32_t>(m.slab_automove_window), std::memory_order_relaxed);
    } else if (s.latest()) {
      slab_automove_window.store(10, std::memory_order_relaxed);
    }
    lru_crawler_sleep.store(m.lru_crawler_sleep, std::memory_order_relaxed);
    lru_crawler_tocrawl.store(m.lru_crawler_tocrawl, std::memory_order_relaxed);
    slab_automove_ratio.store(m.slab_automove_ratio, std::memory_order_relaxed);
    slab_automove.store(m.slab_automove, std::memory_order_relaxed);
    temp_lru.store(m.temp_lru, std::memory_order_relaxed);
    temporary_ttl.store(m.temporary_ttl, std::memory_order_relaxed);
    hot_lru_pct.store(m.hot_lru_pct, std::memory_order_relaxed);
    warm_lru_pct.store(m.warm_lru_pct, std::memory_order_relaxed);
    hot_max_factor.store(m.hot_max_factor, std::memory_order_relaxed);
    warm_max_factor.store(m.warm_max_factor, std::memory_order_relaxed);
    flash.StartWith(s.ext);
  }
};

// Starting `lru_crawler crawl`, memcached's CRAWLER_* results.
enum class CrawlStart : uint8_t { kOk, kRunning, kError };

// One connection as `stats conns` shows it.
struct ConnectionInfo {
  int fd = 0;
  std::string addr;          // "127.0.0.1:54321" or "tcp:127.0.0.1:11211" for listeners
  std::string listen_addr;   // empty for listeners
  std::string state;         // memcached conn_* state name
  int64_t secs_since_last_cmd = 0;
  bool udp = false;          // a UDP socket (memcached lists "<fd>:UDP UDP" first)
};

// The warm-restart snapshot's figures (`stats` snapshot_*), with -e.
struct SnapshotFigures {
  bool enabled = false;             // -e given: the stats are shown
  bool in_progress = false;         // a write is running now
  uint64_t writes = 0;              // successful writes
  uint64_t failures = 0;            // failed writes (the previous file kept)
  int64_t last_time = 0;            // Unix seconds the last successful write ended, 0 = none
  uint64_t last_duration_ms = 0;    // of the last successful write
  uint64_t last_bytes = 0;
  uint64_t last_items = 0;
  uint64_t loaded_items = 0;        // at start
  uint64_t load_skipped_expired = 0;
  uint64_t load_skipped_too_large = 0;
  uint64_t load_skipped_no_memory = 0;
  uint64_t load_skipped_changed = 0;   // changed since the file began (the change journal)
  uint64_t load_skipped_flushed = 0;   // flushed by the file's delayed flush_all, its deadline passed
  uint64_t load_ms = 0;
};

// Process-wide figures the daemon owns.
struct ServerSnapshot {
  int64_t pid = 0;
  int64_t uptime = 0;
  int64_t time = 0;                 // Unix seconds
  double rusage_user = 0;
  double rusage_system = 0;
  uint64_t max_connections = 0;
  uint64_t curr_connections = 0;
  uint64_t total_connections = 0;
  uint64_t rejected_connections = 0;
  uint64_t connection_structures = 0;
  uint64_t threads = 0;
  uint64_t reserved_fds = 0;        // descriptors not available to clients (listeners, eventfds, ...)
  std::string libevent;             // libevent's version string
  uint64_t ssl_new_sessions = 0;    // TLS sessions negotiated (with ssl_session_cache)
  int64_t ssl_cert_refresh_time = 0;  // Unix seconds of the last certificate (re)load
  ThreadStatsTotals totals;         // summed over every worker
  SnapshotFigures snapshot;
  uint64_t log_watchers = 0;        // `watch` connections
  uint64_t log_watcher_sent = 0;    // lines handed to them
  uint64_t log_watcher_skipped = 0; // lines lost to full watcher buffers
};

class ServerInfo {
 public:
  virtual ~ServerInfo() = default;
  virtual ServerSnapshot Snapshot() = 0;
  virtual std::vector<ConnectionInfo> Connections() = 0;
  virtual const ProtocolSettings& Settings() const = 0;
  // stats settings: every setting with its value now (the memory limit and
  // size tracking as `store` has them), without the end marker. The daemon's
  // option table writes them (daemon/settings_stats.h).
  virtual void WriteSettings(const ItemStore& store, StatWriter* w) = 0;
  virtual void ResetStats() = 0;            // every worker's ThreadStats
  virtual void SetVerbosity(int level) = 0;
  virtual int Verbosity() const = 0;
  virtual void Shutdown(bool graceful) = 0; // only called when shutdown is enabled
  // refresh_certs: reloads the TLS certificate and key. False with memcached's
  // error text (without "\r\n") in *error; the old certificate stays in use.
  virtual bool RefreshCerts(std::string* error) {
    *error = "Error TLS not enabled";
    return false;
  }
  // lru_crawler crawl: starts a crawl that removes the expired and flushed
  // items of the size classes set in `classes` (bit c = class c), looking at
  // most at `per_class_limit` items of each (0 = all), in the background.
  virtual CrawlStart StartCrawl(uint64_t classes, uint32_t per_class_limit) {
    return CrawlStart::kError;
  }
  // Where the protocol logs events for `watch` (nullptr: nobody can watch).
  virtual WatchLog* watch_log() { return nullptr; }
  // -o ring: this node's pool; nullptr without one.
  virtual const ClusterRing* ring() const { return nullptr; }
  // ... and the keys changed here for its other servers while they were away.
  virtual ForeignLog* foreign_log() { return nullptr; }
  // Warm-up from peers stopped at run time (`warm off`, -o warm_min_hit_ratio).
  virtual bool WarmStopped() const { return false; }
  virtual void SetWarmStopped(bool stopped) {}
  // Whether a crawl started by StartCrawl is still running (stats).
  virtual bool CrawlRunning() const { return false; }
  virtual uint64_t CrawlStarts() const { return 0; }

  OperatorSettings& operators() { return operators_; }
  // stats detail: the per-prefix counters (set up from -D by the daemon).
  PrefixStats& prefix_stats() { return prefix_stats_; }

 private:
  OperatorSettings operators_;
  PrefixStats prefix_stats_;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_SERVER_INFO_H_
