#include "daemon/server.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "daemon/client_address.h"
#include "daemon/cpu_limit.h"
#include "daemon/listen_socket.h"
#include "daemon/log.h"
#include "daemon/service_notify.h"
#include "daemon/metrics_server.h"
#include "daemon/ring_return.h"
#include "daemon/snapshotter.h"
#include "daemon/tls.h"
#include "daemon/uring_transport.h"
#include "protocol/auth.h"

namespace herdless {

namespace {

constexpr char kTooManyConnections[] = "ERROR Too many open connections\r\n";
constexpr int kAcceptsPerEvent = 64;          // then let the loop breathe
constexpr int kAcceptPauseMs = 10;            // out of descriptors: retry after this (as memcached)
constexpr int kDrainTimeoutMs = 2000;         // shutdown: longest wait for unsent replies
// The reaper runs often and briefly: a tick removes at most kReclaimPerTick
// expired items and looks at ~16x as many buckets, so the main thread never
// holds the core (which it may share with workers) for long: measured with
// 100k items, ReclaimExpired(4096) took 1.8 ms a call, ReclaimExpired(64) 0.1 ms.
constexpr size_t kReclaimPerTick = 64;
constexpr int kMaintenanceTickMs = 100;
constexpr int kTicksPerIdleSweep = 1000 / kMaintenanceTickMs;   // workers sweep once a second
constexpr size_t kMaxOutputPerConnection = 4u << 20;
constexpr size_t kInputSlack = 1u << 20;      // room beyond one max item for long get lines

// How many workers to run for -t. A worker never blocks (a waiting reader is
// parked, not slept), so workers beyond the CPUs this process may run on add
// only context switches: measured on one pinned core with 50 clients, four
// workers cost 8.0-8.9 s of CPU per million requests and one worker 6.5.
// "May run on" is the affinity mask and the cgroup v2 CPU quota (a container
// given 2 CPUs of a 64-CPU host). -o exact_threads keeps -t as given.
struct WorkerPlan {
  int workers = 0;
  int affinity_cpus = 0;   // 0 = unknown
  int quota_cpus = 0;      // 0 = no quota
};

WorkerPlan PlanWorkers(const ProtocolSettings& p) {
  WorkerPlan plan;
  plan.workers = p.num_threads;
  plan.affinity_cpus = CpusInAffinityMask();
  plan.quota_cpus = CpuQuotaOfThisProcess();
  if (p.exact_threads) return plan;
  if (plan.affinity_cpus > 0) plan.workers = std::min(plan.workers, plan.affinity_cpus);
  if (plan.quota_cpus > 0) plan.workers = std::min(plan.workers, plan.quota_cpus);
  return plan;
}

void LogWorkerPlan(const WorkerPlan& plan, int num_threads) {
  if (plan.workers == num_threads) return;
  Log(LogLevel::kNotice,
      "running %d worker threads for -t %d: %d CPUs in the affinity mask, cgroup cpu.max %s%s"
      " (-o exact_threads runs %d)",
      plan.workers, num_threads, plan.affinity_cpus,
      plan.quota_cpus > 0 ? std::to_string(plan.quota_cpus).c_str() : "none",
      plan.quota_cpus > 0 ? " CPUs" : "", num_threads);
}

double Seconds(const struct timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

}  // namespace

Server::Server(const Options& options)
    : options_(options), started_unix_(clock_.UnixSeconds()) {
  SetLogVerbosity(options.verbosity);
  prefix_stats().Configure(options.protocol.prefix_delimiter, options.protocol.detail_enabled);
  operators().StartWith(options.protocol);
}

Server::~Server() {
  for (int fd : udp_fds_) close(fd);
  for (Listener& l : listeners_) {
    if (l.accept_event != nullptr) event_free(l.accept_event);
    if (l.fd >= 0) close(l.fd);
  }
  for (event* ev : events_) event_free(ev);
  if (maintenance_event_ != nullptr) event_free(maintenance_event_);
  if (resume_accept_event_ != nullptr) event_free(resume_accept_event_);
  workers_.clear();   // joined in Run()
  if (base_ != nullptr) event_base_free(base_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

// The longest a returning ring node waits for each other server's list.
constexpr int kRingReturnTimeoutMs = 500;

bool Server::LoadCredentials(std::string* error, int* exit_status) {
  if (!options_.protocol.ring.empty()) {
    ring_ = ClusterRing::Load(options_.protocol.ring, options_.protocol.ring_self, error);
    if (ring_ == nullptr) return false;
    foreign_log_ = std::make_unique<ForeignLog>(ring_.get(), options_.protocol.foreign_ttl_s);
  }
  if (options_.protocol.tls.enabled) {
    tls_ = TlsContext::Create(options_.protocol.tls, error);
    if (tls_ == nullptr) return false;
  }
  *exit_status = EXIT_FAILURE;   // memcached's authfile_load and SASL init failures
  if (!options_.protocol.auth_file.empty()) {
    auth_ = std::make_unique<AuthFile>();
    if (!auth_->Load(options_.protocol.auth_file, error)) return false;
  }
  if (options_.protocol.sasl_enabled) {
    // memcached falls back to Cyrus SASL's own databases; herdless has only
    // memcached's plain file, so without it -S would let nobody in.
    const char* pwdb = std::getenv("MEMCACHED_SASL_PWDB");
    if (pwdb == nullptr || *pwdb == '\0') {
      *error = "ERROR: -S needs MEMCACHED_SASL_PWDB=<file> (user:password lines)";
      return false;
    }
    sasl_pwdb_ = std::make_unique<AuthFile>();
    if (!sasl_pwdb_->Load(pwdb, error, AuthFile::Format::kSaslPwdb)) return false;
  }
  return true;
}

bool Server::RefreshCerts(std::string* error) {
  if (tls_ == nullptr) {
    *error = "Error TLS not enabled";
    return false;
  }
  return tls_->Reload(error);
}

bool Server::Listen(std::string* error) {
  const ProtocolSettings& p = options_.protocol;
  if (!p.metrics_address.empty()) {   // with -s too
    metrics_ = std::make_unique<MetricsServer>();
    if (!metrics_->Bind(p.metrics_address, error)) return false;
  }
  if (!p.domain_socket.empty()) return true;   // -s: no network (ListenUnix binds it)
  // memcached writes "<file>.lck" and renames it once every port is bound, so
  // a reader never sees half a list.
  const char* port_file_name = std::getenv("MEMCACHED_PORT_FILENAME");
  const std::string temp_name = port_file_name != nullptr ? std::string(port_file_name) + ".lck" : "";
  FILE* port_file = nullptr;
  if (port_file_name != nullptr && (port_file = std::fopen(temp_name.c_str(), "a")) == nullptr) {
    Log(LogLevel::kError, "Failed to open \"%s\": %s", temp_name.c_str(), std::strerror(errno));
  }
  bool ok = (p.tcp_port == 0 || Bind(/*udp=*/false, port_file, error)) &&
            (p.udp_port == 0 || Bind(/*udp=*/true, port_file, error));
  if (port_file != nullptr) {
    std::fclose(port_file);
    if (ok) std::rename(temp_name.c_str(), port_file_name);
  }
  return ok;
}

bool Server::Bind(bool udp, FILE* port_file, std::string* error) {
  const ProtocolSettings& p = options_.protocol;
  const char* transport = udp ? "UDP" : "TCP";
  for (const ListenAddress& address : options_.listen) {
    struct addrinfo hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    struct addrinfo* found = nullptr;
    // An -l entry's own port serves both transports, as in memcached; -1 is
    // a port the kernel picks.
    int port_number = udp ? (address.explicit_port >= 0 ? address.explicit_port : p.udp_port)
                          : address.port;
    if (port_number < 0) port_number = 0;
    std::string port = std::to_string(port_number);
    const char* host = address.host.empty() ? nullptr : address.host.c_str();
    int rc = getaddrinfo(host, port.c_str(), &hints, &found);
    const std::string where = (address.host.empty() ? "*" : address.host) + ":" + port;
    if (rc != 0) {
      *error = "getaddrinfo(" + where + "): " + gai_strerror(rc);
      return false;
    }
    int bound = 0;
    int last_errno = 0;
    for (struct addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      int fd = OpenListener(ai, p.backlog, p.sock_cookie_id);
      if (fd < 0) {
        last_errno = errno;
        if (errno == EADDRINUSE) break;   // fatal, as in memcached
        continue;                         // e.g. no IPv6 on this host: try the next one
      }
      struct sockaddr_storage ss;
      socklen_t len = sizeof(ss);
      const bool named = getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) == 0;
      if (port_file != nullptr && named && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)) {
        const uint16_t bound_port =
            ntohs(ss.ss_family == AF_INET ? reinterpret_cast<struct sockaddr_in*>(&ss)->sin_port
                                          : reinterpret_cast<struct sockaddr_in6*>(&ss)->sin6_port);
        std::fprintf(port_file, "%s INET%s: %u\n", transport, ss.ss_family == AF_INET6 ? "6" : "",
                     bound_port);
      }
      std::string addr = named ? AddressText(reinterpret_cast<struct sockaddr*>(&ss)) : "";
      if (udp) {
        if (addr.rfind("tcp", 0) == 0) addr.replace(0, 3, "udp");
        udp_fds_.push_back(fd);
        AddListenerInfo(fd, addr, "conn_read", /*udp=*/true);
      } else {
        Listener listener;
        listener.fd = fd;
        listener.addr = addr;
        listener.tls = address.tls;
        listeners_.push_back(listener);
        AddListenerInfo(fd, addr, "conn_listening");
      }
      ++bound;
    }
    freeaddrinfo(found);
    if (bound == 0 || last_errno == EADDRINUSE) {
      *error = std::string("failed to listen on ") + transport + " port " + port + " of " + where +
               ": " + std::strerror(last_errno);
      return false;
    }
  }
  return true;
}

bool Server::ListenUnix(std::string* error) {
  const ProtocolSettings& p = options_.protocol;
  if (p.domain_socket.empty()) return true;
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (p.domain_socket.size() >= sizeof(addr.sun_path)) {
    *error = "failed to listen on UNIX socket: " + p.domain_socket + ": path too long";
    return false;
  }
  std::memcpy(addr.sun_path, p.domain_socket.data(), p.domain_socket.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("failed to create a UNIX socket: ") + std::strerror(errno);
    return false;
  }
  // A socket file left by an earlier run is replaced (never any other file).
  struct stat st;
  if (lstat(addr.sun_path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(addr.sun_path);
  const mode_t old_umask = umask(static_cast<mode_t>(~p.unix_mask & 0777));
  const bool bound = bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) == 0;
  const int bind_errno = errno;
  umask(old_umask);
  if (!bound || listen(fd, p.backlog) != 0) {
    *error = "failed to listen on UNIX socket: " + p.domain_socket + ": " +
             std::strerror(bound ? errno : bind_errno);
    close(fd);
    return false;
  }
  unix_path_ = p.domain_socket;
  Listener listener;
  listener.fd = fd;
  listener.addr = "unix:" + p.domain_socket;
  listeners_.push_back(listener);
  AddListenerInfo(fd, listener.addr, "conn_listening");
  return true;
}

void Server::AddListenerInfo(int fd, const std::string& addr, const char* state, bool udp) {
  ConnectionInfo info;
  info.fd = fd;
  info.addr = addr;
  info.state = state;
  info.udp = udp;
  listener_info_.push_back(info);
  Log(LogLevel::kNotice, "listening on %s", addr.c_str());
}

int Server::Run() {
  const ProtocolSettings& p = options_.protocol;
  StoreConfig store_config;
  store_config.memory_limit = p.max_bytes;
  store_config.item_size_max = p.item_size_max;
  store_config.evictions = p.evictions;
  store_config.lease = p.lease;
  store_config.stale_grace_s = p.stale_grace_s;
  store_config.clock = &clock_;
  store_config.random = &random_;
  store_config.wake_sink = this;   // readers park only once every worker runs
  store_config.events = watch_hub_.store_events();
  store_config.foreign = foreign_log_.get();
  store_config.flash_tunables = &operators().flash;   // the `extstore` command's
  store_config.flash_chunk_max = p.slab_chunk_max;
  if (p.warm_enabled()) warm_invalidations_ = WarmInvalidations::Configure(p, ring_.get(), &warm_stopped_, &store_config);
  // -o ext_path: after -u, as memcached; with -e its files are kept for the snapshot's values.
  store_ = MakeStoreWithFlashTier(store_config, p.ext, &flash_tier_, !p.memory_file.empty());
  if (store_ == nullptr) return EXIT_FAILURE;
  if (p.track_sizes) store_->TrackSizes(true);   // before a snapshot's items are counted
  const WorkerPlan plan = PlanWorkers(p);
  if (!p.memory_file.empty()) {
    // Before the first accept: clients that connect meanwhile wait in the
    // listen backlog and then find the cache warm.
    snapshotter_ = std::make_unique<Snapshotter>(
        store_.get(), p.memory_file, p.snapshot_interval_s, std::max(1, plan.workers),
        p.restore_max_age_s, p.classic_stampede == ClassicStampedeMode::kOff);
    snapshotter_->Load();
    if (flash_tier_ != nullptr) flash_tier_->Start(store_.get(), store_config.flash_tunables);
  }
  if (ring_ != nullptr) {
    // Still before the first accept: drop what the others changed meanwhile.
    LogReturn(ReturnToRing(*ring_, store_.get(), kRingReturnTimeoutMs), 0);
  }
  if (!CreateMainLoop()) return EXIT_FAILURE;
  LogWorkerPlan(plan, p.num_threads);
  const bool started = StartWorkers(plan.workers);
  if (started && ring_ != nullptr) {
    later_returns_ = std::make_unique<LaterRingReturns>(ring_.get(), store_.get(), kRingReturnTimeoutMs);
  }
  if (started) Serve();
  return Finish(started);
}

bool Server::CreateMainLoop() {
  event_config* cfg = event_config_new();
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);   // only the main thread uses it
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (base_ == nullptr || stop_fd_ < 0) {
    Log(LogLevel::kError, "failed to create the main event loop");
    return false;
  }
  return true;
}

// -o io: auto is io_uring when this kernel and sandbox give every worker a ring
// (seccomp profiles and kernel.io_uring_disabled may not), else epoll, logged;
// uring that cannot run is a start-up error. Made before the privilege drop,
// rings are not charged to the -u user's RLIMIT_MEMLOCK (8 MB, ~140 KB a ring).
bool Server::CreateRings() {
  int& path = options_.protocol.io_path;
  std::string why;
  for (int i = 0, n = path == kIoEpoll ? 0 : PlanWorkers(options_.protocol).workers; i < n; ++i) {
    std::unique_ptr<Ring> ring = Ring::Create(&why);
    if (ring == nullptr) break;
    rings_.push_back(std::move(ring));
  }
  if (path != kIoEpoll && !why.empty()) {
    rings_.clear();
    if (path == kIoUring) {
      Log(LogLevel::kError, "-o io=uring: io_uring is not available (%s)", why.c_str());
      return false;
    }
    Log(LogLevel::kNotice, "-o io=auto: io_uring is not available (%s): using epoll", why.c_str());
    path = kIoEpoll;
  }
  io_auto_ = path == kIoAuto;
  if (io_auto_) path = kIoUring;
  Log(LogLevel::kNotice, "connections' I/O: %s%s", path == kIoUring ? "io_uring" : "epoll",
      path == kIoUring && tls_ != nullptr ? " (TLS connections: epoll)" : "");
  return true;
}

WorkerConfig Server::MakeWorkerConfig() {
  const ProtocolSettings& p = options_.protocol;
  WorkerConfig worker_config;
  worker_config.reqs_per_event = p.reqs_per_event;
  worker_config.idle_timeout_s = p.idle_timeout;
  worker_config.stalled_timeout_s = p.stalled_client_timeout;
  worker_config.max_output = kMaxOutputPerConnection;
  worker_config.max_input = p.item_size_max + kInputSlack;
  worker_config.wait_timeout_ms = p.wait_timeout_ms;
  worker_config.binding = p.binding_protocol;
  worker_config.tls = tls_.get();
  worker_config.handshake_timeout_s = p.tls.handshake_timeout_s;
  worker_config.auth = auth_.get();
  worker_config.auth_latest = options_.protocol.latest();
  worker_config.sasl_pwdb = sasl_pwdb_.get();
  worker_config.watch_hub = &watch_hub_;
  if (p.warm_enabled()) {
    std::string error;   // the list was checked when the options were parsed
    if (!p.warm_peer.empty()) {
      ParsePeerList(p.warm_peer, &worker_config.warm_peers, &error);
    } else {
      std::string list;
      for (const RingServer& s : ring_->pool().servers) list += s.listed + ";";
      ParsePeerList(list, &worker_config.warm_peers, &error);
      worker_config.ring = ring_.get();
    }
    worker_config.warm_timeout_ms = p.warm_timeout_ms;
    worker_config.warm_stopped = &warm_stopped_;
    worker_config.warm_until_s = warm_invalidations_->warm_until_s();
  }
  worker_config.uring = p.io_path == kIoUring;
  return worker_config;
}

bool Server::StartWorkers(int worker_count) {
  WorkerConfig worker_config = MakeWorkerConfig();
  // Workers start with every signal blocked, so signals reach the main loop.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  bool started = true;
  for (int i = 0; i < worker_count && started; ++i) {
    workers_.push_back(std::make_unique<Worker>(i, worker_config, store_.get(), this, &counters_));
    if (worker_config.uring && static_cast<size_t>(i) < rings_.size()) {
      workers_.back()->UseRing(std::move(rings_[i]));
    }
    std::string error;
    if (workers_.back()->Start(&error)) continue;
    if (io_auto_ && worker_config.uring) {
      // A ring the worker's loop cannot watch: auto means epoll then.
      Log(LogLevel::kNotice, "-o io=auto: %s: using epoll", error.c_str());
      for (size_t w = 0; w + 1 < workers_.size(); ++w) workers_[w]->BeginStop(0);
      for (auto& w : workers_) w->Join();
      workers_.clear();
      rings_.clear();
      options_.protocol.io_path = kIoEpoll;
      worker_config.uring = false;
      i = -1;
      continue;
    }
    Log(LogLevel::kError, "%s", error.c_str());
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return started;
}

// Every worker reads each UDP socket through its own descriptor, as in
// memcached (the first takes the bound one, the others dups). `stats conns`
// lists each descriptor, as memcached's does; they are listed before any
// worker reads one (listener_info_ is fixed from then).
void Server::HandUdpSocketsToWorkers() {
  std::vector<std::pair<size_t, int>> udp_sockets;   // (worker, descriptor)
  for (int fd : udp_fds_) {
    ConnectionInfo dup_info;
    for (const ConnectionInfo& info : listener_info_) {
      if (info.fd == fd) dup_info = info;
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      const int worker_fd = i == 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (worker_fd < 0) continue;
      udp_sockets.emplace_back(i, worker_fd);
      if (i == 0) continue;
      dup_info.fd = worker_fd;
      listener_info_.push_back(dup_info);
    }
  }
  for (const auto& [i, fd] : udp_sockets) workers_[i]->AddUdpSocket(fd);
  udp_fds_.clear();   // the workers own them now
}

void Server::AddMainEvents() {
  for (Listener& l : listeners_) {
    l.accept_event = event_new(base_, l.fd, EV_READ | EV_PERSIST, &Server::OnAccept, this);
  }
  for (int signo : {SIGTERM, SIGINT, SIGUSR1}) {
    events_.push_back(evsignal_new(base_, signo, &Server::OnSignal, this));
  }
  events_.push_back(evsignal_new(base_, SIGHUP, &Server::OnReload, this));
  events_.push_back(event_new(base_, stop_fd_, EV_READ | EV_PERSIST, &Server::OnStopRequest, this));
  for (event* ev : events_) event_add(ev, nullptr);
  maintenance_event_ = event_new(base_, -1, EV_PERSIST, &Server::OnMaintenance, this);
  struct timeval tick = {0, kMaintenanceTickMs * 1000};
  event_add(maintenance_event_, &tick);
  resume_accept_event_ = event_new(base_, -1, 0, &Server::OnResumeAccept, this);
}

void Server::Serve() {
  HandUdpSocketsToWorkers();
  AddMainEvents();
  if (snapshotter_ != nullptr) snapshotter_->StartPeriodic();
  if (std::string error; metrics_ != nullptr && !metrics_->Start(store_.get(), this, &error)) {
    Log(LogLevel::kError, "%s", error.c_str());
  }
  counters_.total.store(listeners_.size());
  counters_.structures.store(listeners_.size());
  SetAccepting(true);
  std::string where;
  for (const Listener& l : listeners_) where += (where.empty() ? "" : ", ") + l.addr;
  NotifyReady("serving " + where + " with " + std::to_string(workers_.size()) + " workers");
  event_base_dispatch(base_);   // returns after BeginShutdown()
  // Stopping already: a second SIGTERM (or a SIGHUP) must not kill the
  // process while it drains and exits once the signal events are freed.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signo : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) sigaddset(&stop_signals, signo);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
}

int Server::Finish(bool started) {
  if (!started) for (auto& w : workers_) w->BeginStop(0);
  // A periodic write still walking is cancelled: the last one starts once
  // the workers have written the replies they owe and changed their last item.
  if (snapshotter_ != nullptr) snapshotter_->StopPeriodic();
  if (flash_tier_ != nullptr) flash_tier_->Stop();   // no wake reaches a stopping worker
  metrics_.reset();   // it reads the workers' counters
  later_returns_.reset();
  for (auto& w : workers_) w->Join();
  if (snapshotter_ != nullptr && started) snapshotter_->WriteFinal();
  if (!unix_path_.empty()) unlink(unix_path_.c_str());   // as it was created: by -u's user
  return started ? EXIT_SUCCESS : EXIT_FAILURE;
}

void Server::Wake(const WaitTicket& ticket) {
  if (ticket.worker < workers_.size()) workers_[ticket.worker]->WakeParked(ticket);
}

void Server::SetAccepting(bool on) {
  if (on == accepting_) return;
  for (Listener& l : listeners_) {
    if (l.accept_event == nullptr) continue;
    if (on) {
      event_add(l.accept_event, nullptr);
    } else {
      event_del(l.accept_event);
    }
  }
  accepting_ = on;
}

void Server::PauseAccepting() {
  SetAccepting(false);
  struct timeval pause = {0, kAcceptPauseMs * 1000};
  event_add(resume_accept_event_, &pause);
}

void Server::OnResumeAccept(int, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  if (!s->shutting_down_) s->SetAccepting(true);
}

void Server::OnAccept(int fd, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  for (Listener& l : s->listeners_) {
    if (l.fd == fd) {
      s->AcceptFrom(&l);
      return;
    }
  }
}

void Server::AcceptFrom(Listener* listener) {
  const uint64_t limit = static_cast<uint64_t>(options_.protocol.max_connections);
  for (int i = 0; i < kAcceptsPerEvent; ++i) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof(peer);
    int fd = accept4(listener->fd, reinterpret_cast<struct sockaddr*>(&peer), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        Log(LogLevel::kNotice, "Too many open connections");
        PauseAccepting();
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        Log(LogLevel::kNotice, "accept(): %s", std::strerror(errno));
      }
      return;
    }
    if (counters_.current.load(std::memory_order_relaxed) >= limit) {
      // memcached 1.6 (maxconns_fast): tell the client why, then hang up.
      ssize_t n = send(fd, kTooManyConnections, sizeof(kTooManyConnections) - 1,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
      (void)n;
      close(fd);
      counters_.rejected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    uint64_t current = counters_.current.fetch_add(1, std::memory_order_relaxed) + 1;
    counters_.total.fetch_add(1, std::memory_order_relaxed);
    uint64_t structures = current + listeners_.size();
    if (structures > counters_.structures.load(std::memory_order_relaxed)) {
      counters_.structures.store(structures, std::memory_order_relaxed);
    }
    Worker* worker = workers_[next_worker_++ % workers_.size()].get();
    worker->AddConnection(fd, ClientAddress(reinterpret_cast<struct sockaddr*>(&peer)),
                          listener->tls);
  }
}

void Server::OnSignal(int signo, short, void* arg) { static_cast<Server*>(arg)->BeginShutdown(); }

// SIGHUP (systemd's ExecReload): memcached re-reads its -Y auth file here, and
// so does herdless. A file that no longer loads keeps the old passwords.
void Server::OnReload(int, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  NotifyReloading();
  if (s->auth_ != nullptr) {
    std::string error;
    if (s->auth_->Load(s->options_.protocol.auth_file, &error)) {
      Log(LogLevel::kNotice, "SIGHUP: reloaded the authfile [%s] (%zu entries)",
          s->options_.protocol.auth_file.c_str(), s->auth_->size());
    } else {
      Log(LogLevel::kWarning, "SIGHUP: %s; the previous passwords stay in force", error.c_str());
    }
  } else {
    Log(LogLevel::kNotice, "SIGHUP: nothing to reload");
  }
  NotifyReady("reloaded");
}

void Server::OnStopRequest(int fd, short, void* arg) {
  uint64_t count;
  ssize_t n = read(fd, &count, sizeof(count));
  (void)n;
  static_cast<Server*>(arg)->BeginShutdown();
}

void Server::OnMaintenance(int, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  // `lru_crawler disable` stops the background expiry crawl too, as memcached's; without
  // memcached's LRU maintainer (-o no_lru_maintainer, no_modern) only lookups, evictions
  // and crawls reclaim, as in memcached.
  if (s->operators().lru_crawler.load(std::memory_order_relaxed)) {
    if (s->options_.protocol.machinery.lru_maintainer) s->store_->ReclaimExpired(kReclaimPerTick);
    s->RunCrawl();
  }
  if (++s->maintenance_ticks_ % kTicksPerIdleSweep == 0) {
    for (auto& w : s->workers_) w->SweepIdle();
    s->JudgeWarmPeers();
  }
}

void Server::SetWarmStopped(bool stopped) {
  if (!stopped) warm_window_stale_.store(true, std::memory_order_relaxed);
  warm_stopped_.store(stopped, std::memory_order_relaxed);
  Log(LogLevel::kNotice, "warm-up from the peers %s (warm command)", stopped ? "stopped" : "resumed");
}

// Once a second: -o warm_min_hit_ratio ends warm-up once the peers stop having the keys.
void Server::JudgeWarmPeers() {
  const double ratio = options_.protocol.warm_min_hit_ratio;
  if (ratio <= 0 || WarmStopped()) return;
  if (warm_window_stale_.exchange(false, std::memory_order_relaxed)) warm_window_ = PeerHitWindow();
  ThreadStatsTotals t;
  for (const auto& w : workers_) t.Add(w->stats());
  // A stale copy pays too: the key's readers but one are served it.
  warm_window_.Second(t.warm_fetches, t.warm_hits + t.warm_stale_copies);
  if (!warm_window_.Below(ratio)) return;
  warm_stopped_.store(true, std::memory_order_relaxed);
  Log(LogLevel::kNotice, "warm-up from the peers ended: their hit ratio over %d s fell below %.2f",
      PeerHitWindow::kSeconds, ratio);
}

CrawlStart Server::StartCrawl(uint64_t classes, uint32_t per_class_limit) {
  std::lock_guard<std::mutex> lock(crawl_mu_);
  if (crawl_running_.load(std::memory_order_relaxed)) return CrawlStart::kRunning;
  crawl_cursor_ = WalkCursor();
  crawl_scope_ = CrawlScope();
  crawl_scope_.classes = classes;
  crawl_scope_.per_class_limit = per_class_limit;
  crawl_running_.store(true, std::memory_order_relaxed);
  crawl_starts_.fetch_add(1, std::memory_order_relaxed);
  return CrawlStart::kOk;
}

// memcached's crawler checks 1000 items, then sleeps lru_crawler_sleep
// microseconds. A tick (kMaintenanceTickMs) does the walk steps that pace
// allows, in steps of kCrawlBuckets index buckets (one shard lock each), and
// never more than kCrawlStepsPerTick of them, so the main thread stays brief.
void Server::RunCrawl() {
  constexpr size_t kCrawlBuckets = 64;
  constexpr uint64_t kCrawlStepsPerTick = 256;
  if (!crawl_running_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(crawl_mu_);
  const uint64_t sleep_us = operators().lru_crawler_sleep.load(std::memory_order_relaxed);
  // Items a tick may check: 1000 per sleep period (unbounded with sleep 0).
  const uint64_t budget = sleep_us == 0 ? UINT64_MAX : 1000 * (kMaintenanceTickMs * 1000 / sleep_us + 1);
  const uint64_t checked_before = crawl_scope_.checked_total;
  for (uint64_t step = 0; step < kCrawlStepsPerTick && !crawl_cursor_.done; step++) {
    store_->Crawl(&crawl_cursor_, kCrawlBuckets, &crawl_scope_);
    if (crawl_scope_.checked_total - checked_before >= budget) break;
  }
  if (crawl_cursor_.done) crawl_running_.store(false, std::memory_order_relaxed);
}

void Server::BeginShutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  Log(LogLevel::kNotice, "Exiting normally");
  NotifyStopping("draining connections");
  // Stop accepting first: nothing new arrives while the workers drain.
  SetAccepting(false);
  event_del(resume_accept_event_);
  for (Listener& l : listeners_) {
    if (l.accept_event != nullptr) event_free(l.accept_event);
    l.accept_event = nullptr;
    close(l.fd);
    l.fd = -1;
  }
  for (auto& w : workers_) w->BeginStop(kDrainTimeoutMs);
  event_base_loopbreak(base_);
}

ServerSnapshot Server::Snapshot() {
  ServerSnapshot s;
  s.pid = getpid();
  s.time = clock_.UnixSeconds();
  s.uptime = s.time - started_unix_;
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    s.rusage_user = Seconds(usage.ru_utime);
    s.rusage_system = Seconds(usage.ru_stime);
  }
  s.max_connections = static_cast<uint64_t>(options_.protocol.max_connections);
  s.curr_connections = counters_.current.load(std::memory_order_relaxed);
  s.total_connections = counters_.total.load(std::memory_order_relaxed);
  s.rejected_connections = counters_.rejected.load(std::memory_order_relaxed);
  s.connection_structures = counters_.structures.load(std::memory_order_relaxed);
  s.threads = workers_.size();
  // stdin/out/err, the listeners, and one wake-up eventfd per worker (and
  // each worker's descriptor of every UDP socket).
  s.reserved_fds = 3 + listener_info_.size() + workers_.size();
  s.libevent = event_get_version();
  if (tls_ != nullptr) {
    s.ssl_new_sessions = tls_->new_sessions();
    s.ssl_cert_refresh_time = tls_->last_refresh_unix();
  }
  for (const auto& w : workers_) s.totals.Add(w->stats());
  if (snapshotter_ != nullptr) s.snapshot = snapshotter_->Figures();
  s.log_watchers = watch_hub_.watchers();
  s.log_watcher_sent = watch_hub_.sent();
  s.log_watcher_skipped = watch_hub_.skipped();
  return s;
}

std::vector<ConnectionInfo> Server::Connections() {
  std::vector<ConnectionInfo> out = listener_info_;
  const int64_t uptime = clock_.UnixSeconds() - started_unix_;
  for (ConnectionInfo& l : out) l.secs_since_last_cmd = uptime;
  for (const auto& w : workers_) w->AppendConnectionsInfo(&out);
  std::sort(out.begin(), out.end(),
            [](const ConnectionInfo& a, const ConnectionInfo& b) { return a.fd < b.fd; });
  return out;
}

void Server::ResetStats() {
  // A relaxed store racing the owner's increment may lose that one increment;
  // memcached's reset is no more exact under load.
  for (const auto& w : workers_) w->stats().Reset();
  counters_.total.store(0, std::memory_order_relaxed);
  counters_.rejected.store(0, std::memory_order_relaxed);
}

void Server::SetVerbosity(int level) { SetLogVerbosity(level); }

int Server::Verbosity() const { return LogVerbosity(); }

void Server::Shutdown(bool graceful) {
  // Called on a worker thread: wake the main loop, which owns the listeners.
  (void)graceful;   // both forms drain the same way
  uint64_t one = 1;
  if (stop_fd_ >= 0) {
    ssize_t n = write(stop_fd_, &one, sizeof(one));
    (void)n;
  }
}

}  // namespace herdless
