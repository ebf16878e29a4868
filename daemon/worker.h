// Worker: one thread with its own libevent loop, Executor and ThreadStats; it
// owns the connections handed to it and is the only thread that touches them.
// Other threads reach a worker only through Post() (a locked queue plus an
// eventfd that wakes the loop) and through ConnectionsInfo(), which reads the
// connection registry under its mutex.
#ifndef HERDLESS_DAEMON_WORKER_H_
#define HERDLESS_DAEMON_WORKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/client_address.h"
#include "daemon/warm_peer.h"
#include "protocol/block_cache.h"
#include "protocol/binary_executor.h"
#include "protocol/executor.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

struct event;
struct event_base;

namespace herdless {

class AuthFile;
class Connection;
class ClusterRing;
class Ring;
class TlsContext;
class WatchHub;
class UdpEndpoint;

// Process-wide connection counters (memcached's names), shared by the
// acceptor and every worker.
struct ConnectionCounters {
  std::atomic<uint64_t> current{0};     // open client connections
  std::atomic<uint64_t> total{0};       // ever accepted (plus the listeners)
  std::atomic<uint64_t> rejected{0};    // turned away over -c
  std::atomic<uint64_t> structures{0};  // high-water mark of connections + listeners
};

struct WorkerConfig {
  int reqs_per_event = 20;        // -R
  int idle_timeout_s = 0;         // -o idle_timeout, 0 = never
  int stalled_timeout_s = 0;      // -o stalled_client_timeout, 0 = never
  size_t max_output = 4u << 20;   // stop executing while this much output is unsent
  size_t max_input = 0;           // largest request buffered (item_size_max + slack)
  uint32_t wait_timeout_ms = ProtocolSettings{}.wait_timeout_ms;  // -o wait_timeout_ms: longest a reader stays parked
  BindingProtocol binding = BindingProtocol::kAuto;   // -B
  TlsContext* tls = nullptr;      // -Z: sessions for connections from TLS listeners
  int handshake_timeout_s = 10;   // close a TLS handshake unfinished after this
  const AuthFile* auth = nullptr; // -Y: connections must authenticate first
  bool auth_latest = false;       // -o compat=1.6.45: 1.6.45's answers in the -Y exchange
  const AuthFile* sasl_pwdb = nullptr;  // -S: binary connections must pass SASL first
  WatchHub* watch_hub = nullptr;  // `watch`: where watchers attach (nullptr: refused)
  std::vector<PeerAddress> warm_peers;   // -o warm_peer: empty = no warm-up
  uint32_t warm_timeout_ms = 50;  // -o warm_timeout_ms
  int64_t warm_until_s = 0;       // CoarseNowSeconds() when warm-up ends, 0 = never
  // -o ring: warm_peers are the pool's servers in its order, and a key is
  // asked only of its owner before this node joined (none for a foreign key).
  const ClusterRing* ring = nullptr;
  const std::atomic<bool>* warm_stopped = nullptr;   // set: no warm-up now
  bool uring = false;             // -o io=uring: plain connections on the worker's Ring
};

// Monotonic seconds, cheap (coarse clock): connection idle times.
int64_t CoarseNowSeconds();

class Worker {
 public:
  Worker(int id, const WorkerConfig& config, ItemStore* store, ServerInfo* server,
         ConnectionCounters* counters);
  ~Worker();   // after Join()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // -o io=uring: the ring this worker's plain connections use (Ring::Create,
  // made before the privilege drop); before Start, which needs one then.
  void UseRing(std::unique_ptr<Ring> ring);
  // Creates the loop and starts the thread. False (with *error) on failure.
  bool Start(std::string* error);

  // Runs `task` on the worker's thread soon. Thread-safe.
  void Post(std::function<void()> task);

  // Adopts an accepted non-blocking socket (counted in counters->current by
  // the caller) from `peer`. `tls`: the socket came from a TLS listener
  // (config().tls makes its session).
  void AddConnection(int fd, const ClientAddress& peer, bool tls = false);

  // Serves datagrams from `fd` (this worker's own descriptor of a UDP
  // socket; the worker closes it) on the worker's loop. Thread-safe.
  void AddUdpSocket(int fd);

  // Shutdown: stop reading, let every connection finish writing what it owes
  // (bounded by `drain_timeout_ms`), then leave the loop. Thread-safe.
  void BeginStop(int drain_timeout_ms);
  void Join();

  // Closes the connections idle or stalled past their timeouts, and TLS
  // handshakes past the handshake timeout (soon, on the
  // worker's thread). The server calls it once a second, so the worker loop
  // keeps no timer of its own and sleeps in epoll_wait without a timeout.
  // Thread-safe.
  void SweepIdle();

  // `stats conns`: appends one entry per connection. Thread-safe.
  void AppendConnectionsInfo(std::vector<ConnectionInfo>* out);

  // Classic wait mode: the store says a parked reader's key changed. Posts
  // the wake to this worker, which re-runs the connection's parked request
  // if it is still open and still parked with that ticket. Thread-safe.
  void WakeParked(const WaitTicket& ticket);

  ThreadStats& stats() { return stats_; }
  int id() const { return id_; }

  // For this worker's connections (worker thread only).
  event_base* base() { return base_; }
  Executor& executor() { return executor_; }
  BinaryExecutor& binary_executor() { return binary_executor_; }
  ItemStore* store() { return store_; }
  BlockCache* block_cache() { return &block_cache_; }   // worker thread only
  ReplyQueueCache* reply_queues() { return &reply_queues_; }   // worker thread only
  WarmPeers* warm_peers() { return warm_peers_.get(); }   // nullptr: no warm-up
  const WorkerConfig& config() const { return config_; }
  // The worker whose thread calls this; nullptr on any other thread.
  static Worker* Current();
  void CloseConnection(Connection* conn);
  // A connection with a parked request registers while it waits.
  void SetParked(uint64_t conn_id, Connection* conn);   // nullptr: no longer parked

 private:
  static void OnNotify(int fd, short what, void* arg);
  static void OnDrainDeadline(int fd, short what, void* arg);
  void RunTasks();
  void CloseIdleAndStalled();
  void StopNow();
  void MaybeFinishStop();

  const int id_;
  const WorkerConfig config_;
  ItemStore* const store_;
  ServerInfo* const server_;
  ConnectionCounters* const counters_;
  ThreadStats stats_;
  BlockCache block_cache_;   // the connections' input and reply blocks
  ReplyQueueCache reply_queues_;   // the connections' reply queues
  Executor executor_;
  BinaryExecutor binary_executor_;

  event_base* base_ = nullptr;
  std::unique_ptr<Ring> ring_;   // -o io=uring: the plain connections' I/O
  int notify_fd_ = -1;
  event* notify_event_ = nullptr;
  event* drain_timer_ = nullptr;
  std::thread thread_;
  bool stopping_ = false;   // worker thread only

  std::mutex tasks_mutex_;
  std::vector<std::function<void()>> tasks_;   // guarded by tasks_mutex_
  bool notified_ = false;                      // guarded by tasks_mutex_

  std::unordered_map<uint64_t, Connection*> parked_;   // worker thread only
  std::vector<std::unique_ptr<UdpEndpoint>> udp_;      // worker thread only
  std::unique_ptr<WarmPeers> warm_peers_;              // worker thread only

  std::mutex registry_mutex_;
  std::unordered_set<Connection*> connections_;   // written by the worker under the mutex
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_WORKER_H_
