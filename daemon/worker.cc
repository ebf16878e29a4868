#include "daemon/worker.h"

#include <event2/event.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "daemon/connection.h"
#include "daemon/log.h"
#include "daemon/tls.h"
#include "daemon/tls_transport.h"
#include "daemon/transport.h"
#include "daemon/udp.h"
#include "daemon/uring_transport.h"

namespace herdless {

namespace {
thread_local Worker* current_worker = nullptr;   // set on each worker's thread
}  // namespace

int64_t CoarseNowSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec;
}

Worker::Worker(int id, const WorkerConfig& config, ItemStore* store, ServerInfo* server,
               ConnectionCounters* counters)
    : id_(id),
      config_(config),
      store_(store),
      server_(server),
      counters_(counters),
      executor_(store, server, &stats_),
      binary_executor_(store, server, &stats_, config.sasl_pwdb) {}

Worker::~Worker() {
  // The thread has ended: tasks it never ran may still hold sockets.
  stopping_ = true;
  RunTasks();
  for (Connection* c : connections_) {
    delete c;
    counters_->current.fetch_sub(1, std::memory_order_relaxed);
  }
  connections_.clear();
  udp_.clear();
  warm_peers_.reset();
  ring_.reset();   // after its transports, before the loop it is registered with
  if (notify_event_ != nullptr) event_free(notify_event_);
  if (drain_timer_ != nullptr) event_free(drain_timer_);
  if (base_ != nullptr) event_base_free(base_);
  if (notify_fd_ >= 0) close(notify_fd_);
}

void Worker::UseRing(std::unique_ptr<Ring> ring) { ring_ = std::move(ring); }

bool Worker::Start(std::string* error) {
  // Only this worker's thread uses its base: libevent's locks are not needed.
  // Nothing here reads libevent's cached time, and with no timer pending the
  // loop then makes no clock call per pass.
  event_config* cfg = event_config_new();
  if (cfg == nullptr) {
    *error = "event_config_new failed";
    return false;
  }
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NO_CACHE_TIME);
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (base_ == nullptr) {
    *error = "event_base_new failed";
    return false;
  }
  if (config_.uring && (ring_ == nullptr || !ring_->Attach(base_, error))) {
    if (ring_ == nullptr) *error = "no ring";
    *error = "cannot set up io_uring for worker thread: " + *error;
    return false;
  }
  notify_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (notify_fd_ < 0) {
    *error = std::string("failed creating eventfd for worker thread: ") + std::strerror(errno);
    return false;
  }
  notify_event_ = event_new(base_, notify_fd_, EV_READ | EV_PERSIST, &Worker::OnNotify, this);
  if (notify_event_ == nullptr || event_add(notify_event_, nullptr) != 0) {
    *error = "cannot register the worker's notify event";
    return false;
  }
  if (!config_.warm_peers.empty()) {
    warm_peers_ = std::make_unique<WarmPeers>(base_, config_.warm_peers, config_.warm_timeout_ms,
                                              store_->item_size_max());
  }
  thread_ = std::thread([this] {
    current_worker = this;
    event_base_loop(base_, 0);
  });
  return true;
}

Worker* Worker::Current() { return current_worker; }

void Worker::Post(std::function<void()> task) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    tasks_.push_back(std::move(task));
    wake = !notified_;
    notified_ = true;
  }
  if (wake) {
    uint64_t one = 1;
    ssize_t n = write(notify_fd_, &one, sizeof(one));
    (void)n;   // only fails when the counter is already non-zero: the loop wakes anyway
  }
}

void Worker::OnNotify(int fd, short, void* arg) {
  uint64_t count;
  ssize_t n = read(fd, &count, sizeof(count));
  (void)n;
  static_cast<Worker*>(arg)->RunTasks();
}

void Worker::RunTasks() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    tasks.swap(tasks_);
    notified_ = false;
  }
  for (auto& task : tasks) task();
}

void Worker::AddConnection(int fd, const ClientAddress& peer, bool tls) {
  Post([this, fd, peer, tls]() mutable {
    std::unique_ptr<TlsSession> session;
    if (tls && !stopping_) session = config_.tls->NewSession(fd);   // on this worker's thread
    if (stopping_ || (tls && session == nullptr)) {
      close(fd);
      counters_->current.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    std::unique_ptr<Transport> transport;
    if (session != nullptr) {
      transport = std::make_unique<TlsTransport>(fd, base_, std::move(session));
    } else if (ring_ != nullptr) {
      transport = ring_->NewTransport(fd);
    } else {
      transport = std::make_unique<SocketTransport>(fd, base_);
    }
    auto* conn = new Connection(this, std::move(transport), peer);
    {
      std::lock_guard<std::mutex> lock(registry_mutex_);
      connections_.insert(conn);
    }
    Log(LogLevel::kInfo,
        config_.binding == BindingProtocol::kAuto     ? "<%d new auto-negotiating client connection"
        : config_.binding == BindingProtocol::kBinary ? "<%d new binary client connection."
                                                      : "<%d new ascii client connection.",
        fd);
    if (!conn->Start()) CloseConnection(conn);
  });
}

void Worker::AddUdpSocket(int fd) {
  Post([this, fd] {
    if (stopping_) {
      close(fd);
      return;
    }
    auto endpoint = std::make_unique<UdpEndpoint>(this, fd);
    if (!endpoint->Start()) {
      Log(LogLevel::kError, "failed to serve UDP on worker %d", id_);
      return;
    }
    udp_.push_back(std::move(endpoint));
  });
}

void Worker::CloseConnection(Connection* conn) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    connections_.erase(conn);
  }
  Log(LogLevel::kInfo, "<%d connection closed.", conn->fd());
  delete conn;
  counters_->current.fetch_sub(1, std::memory_order_relaxed);
  MaybeFinishStop();
}

void Worker::SetParked(uint64_t conn_id, Connection* conn) {
  if (conn != nullptr) {
    parked_[conn_id] = conn;
  } else {
    parked_.erase(conn_id);
  }
}

void Worker::WakeParked(const WaitTicket& ticket) {
  Post([this, ticket] {
    if (stopping_) return;   // draining connections are not re-run
    auto it = parked_.find(ticket.conn_id);
    if (it != parked_.end()) it->second->Wake(ticket.seq);
  });
}

void Worker::SweepIdle() {
  if (config_.idle_timeout_s <= 0 && config_.stalled_timeout_s <= 0 && config_.tls == nullptr) return;
  Post([this] {
    if (!stopping_) CloseIdleAndStalled();
  });
}

void Worker::CloseIdleAndStalled() {
  const int64_t now = CoarseNowSeconds();
  std::vector<Connection*> idle;
  std::vector<Connection*> stalled;
  std::vector<Connection*> handshaking;
  for (Connection* c : connections_) {   // only this thread changes the set
    if (config_.tls != nullptr && c->HandshakeLongerThan(now, config_.handshake_timeout_s)) {
      handshaking.push_back(c);
    } else if (config_.idle_timeout_s > 0 && c->IdleLongerThan(now, config_.idle_timeout_s)) {
      idle.push_back(c);
    } else if (config_.stalled_timeout_s > 0 &&
               c->StalledLongerThan(now, config_.stalled_timeout_s)) {
      stalled.push_back(c);
    }
  }
  // A client that opened a TLS connection and stalled its handshake (or sent
  // nothing) holds a descriptor only until the handshake timeout.
  for (Connection* c : handshaking) c->FailHandshake();
  for (Connection* c : idle) {
    Log(LogLevel::kInfo, "Closing idle fd %d", c->fd());
    stats_.idle_kicks.Add();
    CloseConnection(c);
  }
  // A client that stopped reading holds its output bound in memory forever:
  // past the timeout its replies are dropped with the connection.
  for (Connection* c : stalled) {
    Log(LogLevel::kNotice, "Closing stalled fd %d (reads no replies)", c->fd());
    CloseConnection(c);
  }
}

void Worker::BeginStop(int drain_timeout_ms) {
  Post([this, drain_timeout_ms] {
    stopping_ = true;
    udp_.clear();   // no new requests: datagrams are answered at once, nothing is owed
    drain_timer_ = event_new(base_, -1, 0, &Worker::OnDrainDeadline, this);
    struct timeval deadline = {drain_timeout_ms / 1000, (drain_timeout_ms % 1000) * 1000};
    if (drain_timer_ != nullptr) event_add(drain_timer_, &deadline);
    // Draining one connection never deletes another: iterate a copy.
    std::vector<Connection*> conns(connections_.begin(), connections_.end());
    for (Connection* c : conns) c->BeginDrain();
    MaybeFinishStop();
  });
}

void Worker::OnDrainDeadline(int, short, void* arg) { static_cast<Worker*>(arg)->StopNow(); }

void Worker::StopNow() {
  std::vector<Connection*> conns(connections_.begin(), connections_.end());
  for (Connection* c : conns) CloseConnection(c);
  event_base_loopbreak(base_);
}

void Worker::MaybeFinishStop() {
  if (stopping_ && connections_.empty()) event_base_loopbreak(base_);
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::AppendConnectionsInfo(std::vector<ConnectionInfo>* out) {
  const int64_t now = CoarseNowSeconds();
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (const Connection* c : connections_) out->push_back(c->Info(now));
}

}  // namespace herdless
