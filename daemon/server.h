// Server: the process around the protocol. The main thread binds the
// listening sockets, accepts connections and hands them round-robin to the
// worker threads, runs the 1 s maintenance timer (expired-item reclaim), and
// handles SIGTERM/SIGINT/SIGUSR1 and the `shutdown` command: stop accepting,
// let the workers finish writing the replies they owe, write the -e snapshot,
// exit 0. With -e the snapshot is loaded before the first accept
// (daemon/snapshotter.h). SIGHUP is a reload. A supervisor is told when it serves (daemon/service_notify.h).
// It is also the protocol's ServerInfo (stats, verbosity, shutdown); those
// methods are called from worker threads and are thread-safe. And it is the
// store's LeaseWakeSink: a parked reader's wake goes to its worker.
#ifndef HERDLESS_DAEMON_SERVER_H_
#define HERDLESS_DAEMON_SERVER_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/flash_tier.h"
#include "daemon/options.h"
#include "daemon/warm_invalidations.h"
#include "daemon/settings_stats.h"
#include "daemon/watch_hub.h"
#include "daemon/worker.h"
#include "protocol/cluster_ring.h"
#include "protocol/foreign_log.h"
#include "protocol/warm.h"
#include "protocol/server_info.h"
#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/random.h"

struct event;
struct event_base;

namespace herdless {

class AuthFile;
class LaterRingReturns;
class MetricsServer;
class Ring;
class Snapshotter;
class TlsContext;

class Server final : public ServerInfo, public LeaseWakeSink {
 public:
  explicit Server(const Options& options);
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Reads what -Z and -Y name (certificates, key, CA, password file), before
  // root is dropped. False with a message in *error, and *exit_status set to
  // 1 for a password file (memcached's; the caller's EX_USAGE stays for TLS):
  // herdless never starts without the protection that was asked for.
  bool LoadCredentials(std::string* error, int* exit_status);

  // Creates, binds and listens on every -l address: TCP (unless -p 0) and UDP
  // (with -U), or nothing when -s names a unix socket; then writes the bound
  // ports to $MEMCACHED_PORT_FILENAME if it is set. Call before dropping
  // privileges (a port below 1024 needs root) and before daemonizing (so
  // errors reach the terminal). False with a message in *error.
  bool Listen(std::string* error);

  // -s: creates the unix socket (replacing a stale socket file) with -a's
  // permissions. Call after dropping privileges, as memcached, so the file
  // belongs to -u's user, who removes it at exit. False with *error.
  bool ListenUnix(std::string* error);

  // Picks the connections' I/O path (-o io) and makes the workers' io_uring
  // rings. Call before dropping privileges (see server.cc). False when
  // -o io=uring cannot run (logged).
  bool CreateRings();

  // Builds the store and the workers and serves until shutdown. Returns the
  // process exit code (0 after a signal or `shutdown`).
  int Run();

  // ServerInfo
  ServerSnapshot Snapshot() override;
  std::vector<ConnectionInfo> Connections() override;
  const ProtocolSettings& Settings() const override { return options_.protocol; }
  void WriteSettings(const ItemStore& store, StatWriter* w) override {
    WriteSettingsStats(*this, store, w);
  }
  void ResetStats() override;
  void SetVerbosity(int level) override;
  int Verbosity() const override;
  void Shutdown(bool graceful) override;
  bool RefreshCerts(std::string* error) override;
  CrawlStart StartCrawl(uint64_t classes, uint32_t per_class_limit) override;
  WatchLog* watch_log() override { return &watch_hub_; }
  const ClusterRing* ring() const override { return ring_.get(); }
  ForeignLog* foreign_log() override { return foreign_log_.get(); }
  bool WarmStopped() const override { return warm_stopped_.load(std::memory_order_relaxed); }
  void SetWarmStopped(bool stopped) override;
  bool CrawlRunning() const override { return crawl_running_.load(std::memory_order_relaxed); }
  uint64_t CrawlStarts() const override { return crawl_starts_.load(std::memory_order_relaxed); }

  // LeaseWakeSink (any thread)
  void Wake(const WaitTicket& ticket) override;

 private:
  struct Listener {
    int fd = -1;
    std::string addr;   // "tcp:127.0.0.1:11211", as memcached's stats conns
    bool tls = false;   // -Z, unless the -l entry said notls:
    event* accept_event = nullptr;
  };
  // Run()'s steps, in order.
  bool CreateMainLoop();
  WorkerConfig MakeWorkerConfig();
  bool StartWorkers(int worker_count);   // false: one failed (the rest are stopped in Finish)
  void Serve();                          // until shutdown
  void HandUdpSocketsToWorkers();
  void AddMainEvents();                  // accepts, signals, the stop request, maintenance
  int Finish(bool started);              // the exit code
  // Binds TCP or UDP sockets for every -l address; records the ports bound.
  bool Bind(bool udp, FILE* port_file, std::string* error);
  void AddListenerInfo(int fd, const std::string& addr, const char* state, bool udp = false);

  static void OnAccept(int fd, short what, void* arg);
  static void OnSignal(int signo, short what, void* arg);
  static void OnReload(int signo, short what, void* arg);
  static void OnStopRequest(int fd, short what, void* arg);
  static void OnMaintenance(int fd, short what, void* arg);
  static void OnResumeAccept(int fd, short what, void* arg);
  void AcceptFrom(Listener* listener);
  void PauseAccepting();
  void SetAccepting(bool on);
  void BeginShutdown();
  void RunCrawl();
  void JudgeWarmPeers();   // a maintenance tick's share of an lru_crawler crawl

  Options options_;
  std::unique_ptr<TlsContext> tls_;    // -Z
  std::unique_ptr<AuthFile> auth_;     // -Y
  std::unique_ptr<AuthFile> sasl_pwdb_;  // -S: MEMCACHED_SASL_PWDB
  std::unique_ptr<ClusterRing> ring_;         // -o ring
  std::unique_ptr<ForeignLog> foreign_log_;   // ... its foreign keys
  std::unique_ptr<WarmInvalidations> warm_invalidations_;   // with warm-up: the peers' old copies
  std::atomic<bool> warm_stopped_{false};     // `warm off`, warm_min_hit_ratio
  PeerHitWindow warm_window_;                 // main thread only
  std::atomic<bool> warm_window_stale_{false};  // `warm on`: judge from scratch
  SystemClock clock_;
  DefaultRandom random_;
  WatchHub watch_hub_;                 // before the store, which reports to it
  std::unique_ptr<ItemStore> store_;
  std::unique_ptr<FlashTier> flash_tier_;      // -o ext_path (after store_: stopped first)
  std::unique_ptr<Snapshotter> snapshotter_;   // -e
  std::unique_ptr<LaterRingReturns> later_returns_;   // -o ring: before the store goes
  std::unique_ptr<MetricsServer> metrics_;     // -o metrics
  std::vector<std::unique_ptr<Ring>> rings_;   // -o io=uring: made by CreateRings, one a worker
  std::vector<std::unique_ptr<Worker>> workers_;
  bool io_auto_ = false;   // -o io=auto chose io_uring: a worker whose ring fails falls back to epoll
  size_t next_worker_ = 0;
  ConnectionCounters counters_;
  const int64_t started_unix_;

  std::vector<Listener> listeners_;          // main thread only
  std::vector<int> udp_fds_;                 // bound UDP sockets, handed to the workers in Run()
  std::string unix_path_;                    // the socket file this process created (-s)
  std::vector<ConnectionInfo> listener_info_;  // fixed after Listen(): read by workers
  event_base* base_ = nullptr;
  std::vector<event*> events_;         // signals and the stop request
  event* maintenance_event_ = nullptr;
  uint64_t maintenance_ticks_ = 0;
  // lru_crawler crawl: started by a worker, run by the maintenance timer.
  std::mutex crawl_mu_;
  WalkCursor crawl_cursor_;     // guarded by crawl_mu_
  CrawlScope crawl_scope_;      // guarded by crawl_mu_
  std::atomic<bool> crawl_running_{false};
  std::atomic<uint64_t> crawl_starts_{0};
  event* resume_accept_event_ = nullptr;
  int stop_fd_ = -1;                   // eventfd: Shutdown() from a worker wakes the main loop
  bool accepting_ = false;
  bool shutting_down_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_SERVER_H_
