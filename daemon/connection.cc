#include "daemon/connection.h"

#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string_view>

#include "daemon/log.h"
#include "daemon/tls.h"
#include "daemon/worker.h"
#include "protocol/auth.h"
#include "protocol/executor.h"
#include "protocol/metadump.h"

namespace herdless {

namespace {

constexpr size_t kInitialInput = 16 * 1024;   // memcached's READ_BUFFER_SIZE
constexpr size_t kMinReadRoom = 4 * 1024;     // grow or compact below this much free tail
constexpr int kMaxIovecs = IOV_MAX;
constexpr int kTlsIovecs = 64;   // enough to fill one ssl_wbuf_size write
// A parked reader's timer runs this much past wait_timeout_ms. libevent
// measures from the loop's cached time, which may be a few ms old; with the
// default wait_timeout_ms = lease_timeout the slack makes sure a reader whose
// wait ends finds the lease it waited for dead, and takes it over.
constexpr int kWaitSlackMs = 10;
// A metadump pass: at most this many walk steps (each one shard lock over a
// few index buckets) before other connections get their turn.
constexpr int kDumpStepsPerPass = 8;
// A watcher's lines move from its hub buffer to its output every tick, while
// less than kWatchOutputBound is unsent: a watcher that does not read keeps
// at most this plus its hub buffer (the rest is skipped, never queued).
constexpr int kWatchTickMs = 10;
constexpr size_t kWatchOutputBound = 64 * 1024;

std::atomic<uint64_t> next_connection_id{1};

int64_t MonotonicMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

const char* ConnStateName(ConnState state) {
  switch (state) {
    case ConnState::kNewCmd: return "conn_new_cmd";
    case ConnState::kWaiting: return "conn_waiting";
    case ConnState::kRead: return "conn_read";
    case ConnState::kParseCmd: return "conn_parse_cmd";
    case ConnState::kSwallow: return "conn_swallow";
    case ConnState::kMwrite: return "conn_mwrite";
    case ConnState::kClosing: return "conn_closing";
    case ConnState::kWatch: return "conn_watch";
  }
  return "conn_closed";
}

// Bytes read but not yet executed: [begin_, end_) of one growable block.
// Grows (up to `limit`) when a request does not fit; a large block is given
// back once it empties, so an idle connection holds at most kInitialInput.
class Connection::InputBuffer {
 public:
  explicit InputBuffer(size_t limit) : limit_(limit < kInitialInput ? kInitialInput : limit) {}

  std::string_view view() const { return {data_.get() + begin_, end_ - begin_}; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  bool full() const { return size() >= limit_; }

  void Drop(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }

  // Free room at the tail (0 only when full()).
  char* Room(size_t* len) {
    if (capacity_ == 0) Reallocate(kInitialInput);
    if (capacity_ - end_ < kMinReadRoom && begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, size());
      end_ -= begin_;
      begin_ = 0;
    }
    if (capacity_ - end_ < kMinReadRoom && capacity_ < limit_) {
      Reallocate(capacity_ * 2 < limit_ ? capacity_ * 2 : limit_);
    }
    *len = capacity_ - end_;
    return data_.get() + end_;
  }
  void Commit(size_t n) { end_ += n; }

  void ShrinkIfIdle() {
    if (empty() && capacity_ > kInitialInput) {
      data_.reset();
      capacity_ = 0;
    }
  }

 private:
  void Reallocate(size_t capacity) {
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (!empty()) std::memcpy(bigger.get(), data_.get() + begin_, size());
    end_ -= begin_;
    begin_ = 0;
    data_ = std::move(bigger);
    capacity_ = capacity;
  }

  const size_t limit_;
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

Connection::Connection(Worker* worker, int fd, std::string peer, std::string local,
                       std::unique_ptr<TlsSession> tls)
    : worker_(worker),
      fd_(fd),
      id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      peer_(std::move(peer)),
      local_(std::move(local)),
      tls_(std::move(tls)),
      authenticated_(worker->config().auth == nullptr),
      accepted_s_(CoarseNowSeconds()),
      input_(std::make_unique<InputBuffer>(worker->config().max_input)),
      last_cmd_s_(CoarseNowSeconds()) {}

Connection::~Connection() {
  if (read_event_ != nullptr) event_free(read_event_);
  if (write_event_ != nullptr) event_free(write_event_);
  if (resume_event_ != nullptr) event_free(resume_event_);
  if (wait_timer_ != nullptr) event_free(wait_timer_);
  if (watch_timer_ != nullptr) event_free(watch_timer_);
  if (watcher_ != nullptr) worker_->config().watch_hub->Remove(watcher_);
  if (parked_) worker_->SetParked(id_, nullptr);
  tls_.reset();   // its close_notify goes out before the descriptor is closed
  close(fd_);
}

bool Connection::Start() {
  event_base* base = worker_->base();
  read_event_ = event_new(base, fd_, EV_READ | EV_PERSIST, &Connection::OnReadable, this);
  write_event_ = event_new(base, fd_, EV_WRITE | EV_PERSIST, &Connection::OnWritable, this);
  resume_event_ = event_new(base, -1, 0, &Connection::OnResume, this);
  if (read_event_ == nullptr || write_event_ == nullptr || resume_event_ == nullptr) return false;
  SetReading(true);
  state_.store(ConnState::kWaiting, std::memory_order_relaxed);
  if (reading_) LogConnEvent(/*open=*/true);
  return reading_;
}

void Connection::OnReadable(int, short, void* arg) {
  Connection* c = static_cast<Connection*>(arg);
  if (c->tls_ != nullptr && !c->tls_->established()) {
    c->ContinueHandshake();
    return;
  }
  switch (c->ReadInput()) {
    case ReadStatus::kError:
      c->close_reason_ = CloseReason::kError;
      c->Close();
      return;
    case ReadStatus::kEof:
      c->peer_closed_ = true;
      break;
    case ReadStatus::kData:
    case ReadStatus::kAgain:
      break;
  }
  c->Run();
}

void Connection::OnWritable(int fd, short what, void* arg) {
  Connection* c = static_cast<Connection*>(arg);
  if (c->tls_ != nullptr && (!c->tls_->established() || c->tls_read_wants_write_)) {
    OnReadable(fd, what, arg);   // the handshake or a read waited for the socket to drain
    return;
  }
  c->Run();
}

// The server side of a TLS handshake, one step per socket event. Failures and
// peers that hang up mid-handshake count as ssl_handshake_errors.
void Connection::ContinueHandshake() {
  switch (tls_->Handshake()) {
    case TlsSession::Status::kOk:
      last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
      SetWriting(false);
      SetReading(true);
      // The first request may already wait in the socket (or in OpenSSL).
      OnReadable(fd_, EV_READ, this);
      return;
    case TlsSession::Status::kWantRead:
      SetWriting(false);
      SetReading(true);
      return;
    case TlsSession::Status::kWantWrite:
      SetWriting(true);
      return;
    case TlsSession::Status::kClosed:
    case TlsSession::Status::kError:
      break;
  }
  FailHandshake();
}

void Connection::FailHandshake() {
  worker_->stats().ssl_handshake_errors.Add();
  Log(LogLevel::kNotice, "<%d TLS handshake failed (%s)", fd_, peer_.c_str());
  Close();
}

bool Connection::HandshakeLongerThan(int64_t now_s, int timeout_s) const {
  return tls_ != nullptr && !tls_->established() && now_s - accepted_s_ > timeout_s;
}

void Connection::OnResume(int, short, void* arg) { static_cast<Connection*>(arg)->Run(); }

void Connection::Wake(uint64_t seq) {
  if (!parked_ || seq != park_seq_) return;   // a ticket of an earlier park
  SetParked(false);
  Run();
}

void Connection::OnWaitTimeout(int, short, void* arg) {
  Connection* c = static_cast<Connection*>(arg);
  if (!c->waiting_) return;
  c->SetParked(false);
  c->wait_expired_ = true;
  c->Run();
}

void Connection::SetParked(bool on) {
  parked_ = on;
  worker_->SetParked(id_, on ? this : nullptr);
}

// Bookkeeping after a Process() pass, for the request at the head of the
// input when it parks, and when it is finally answered.
void Connection::NoteWait(const ProcessOutcome& outcome, bool expired) {
  ThreadStats& stats = worker_->stats();
  if (waiting_ && outcome.consumed > 0) {
    (expired ? stats.waits_timed_out : stats.waits_woken).Add();
    LogWait(expired ? WaitEvent::kTimedOut : WaitEvent::kWoken);
    waiting_ = false;
    wait_expired_ = false;
    if (wait_timer_ != nullptr) event_del(wait_timer_);
  }
  if (!outcome.parked) return;
  SetParked(true);
  if (waiting_ && outcome.park_token == park_token_) return;   // same wait, same timer
  // A new wait: this request's first park, or a new lease after the one it
  // waited for timed out (wait_timeout_ms bounds the wait for one lease).
  if (!waiting_) stats.waits_parked.Add();
  waiting_ = true;
  wait_expired_ = false;
  park_token_ = outcome.park_token;
  WatchHub* hub = worker_->config().watch_hub;
  if (hub != nullptr && hub->Wants(kWatchStampede)) {
    wait_key_.assign(outcome.park_key);
    wait_started_ms_ = MonotonicMs();
    LogWait(WaitEvent::kParked);
  } else {
    wait_key_.clear();
  }
  if (wait_timer_ == nullptr) {
    wait_timer_ = event_new(worker_->base(), -1, 0, &Connection::OnWaitTimeout, this);
  }
  const int64_t ms = int64_t{worker_->config().wait_timeout_ms} + kWaitSlackMs;
  struct timeval timeout = {static_cast<time_t>(ms / 1000),
                            static_cast<suseconds_t>((ms % 1000) * 1000)};
  if (wait_timer_ == nullptr || event_add(wait_timer_, &timeout) != 0) {
    // No timer, no bound on the wait: give up waiting at once.
    SetParked(false);
    wait_expired_ = true;
    event_active(resume_event_, EV_TIMEOUT, 0);
  }
}

void Connection::LogWait(WaitEvent event) {
  WatchHub* hub = worker_->config().watch_hub;
  if (hub == nullptr || !hub->Wants(kWatchStampede) || wait_key_.empty()) return;
  const int64_t waited = event == WaitEvent::kParked ? 0 : MonotonicMs() - wait_started_ms_;
  LogLine line;
  FormatWait(&line, event, wait_key_, park_token_, static_cast<uint32_t>(waited), fd_);
  hub->Write(kWatchStampede, line.view());
}

void Connection::BeginDrain() {
  draining_ = true;
  Run();
}

Connection::ReadStatus Connection::ReadInput() {
  size_t room;
  char* dest = input_->Room(&room);
  if (room == 0) return ReadStatus::kAgain;   // full: Run() decides
  size_t got;
  if (tls_ == nullptr) {
    ssize_t n = read(fd_, dest, room);
    if (n == 0) return ReadStatus::kEof;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ReadStatus::kAgain;
      return ReadStatus::kError;   // ECONNRESET and friends: close quietly
    }
    got = static_cast<size_t>(n);
  } else {
    ReadStatus status = ReadTls(dest, room, &got);
    if (status != ReadStatus::kData) return status;
  }
  input_->Commit(got);
  worker_->stats().bytes_read.Add(static_cast<uint64_t>(got));
  DiscardSwallowed();
  return ReadStatus::kData;
}

Connection::ReadStatus Connection::ReadTls(char* dest, size_t room, size_t* n) {
  TlsSession::Status status = TlsSession::Status::kOk;
  *n = tls_->Read(dest, room, &status);
  tls_read_wants_write_ = false;
  if (*n > 0) return ReadStatus::kData;
  switch (status) {
    case TlsSession::Status::kWantWrite:
      tls_read_wants_write_ = true;   // UpdateEvents waits for EV_WRITE
      return ReadStatus::kAgain;
    case TlsSession::Status::kOk:
    case TlsSession::Status::kWantRead:
      return ReadStatus::kAgain;
    case TlsSession::Status::kClosed:
      return ReadStatus::kEof;
    case TlsSession::Status::kError:
      break;
  }
  return ReadStatus::kError;
}

void Connection::DiscardSwallowed() {
  if (swallow_ == 0 || input_->empty()) return;
  size_t n = input_->size() < swallow_ ? input_->size() : static_cast<size_t>(swallow_);
  input_->Drop(n);
  swallow_ -= n;
}

void Connection::Run() {
  bool more = Execute();
  if (!Flush()) {
    close_reason_ = CloseReason::kError;
    Close();
    return;
  }
  if (output_.empty()) {
    // Nothing owed: close now if there is nothing left to wait for. A parked
    // request is owed a reply (even after a half-close), up to its timeout.
    bool oversized = !more && input_->full() && !waiting_;   // a request larger than we buffer
    if (close_after_write_ || draining_ || oversized || (peer_closed_ && !more && !waiting_)) {
      if (draining_) DiscardUnread();
      Close();
      return;
    }
    input_->ShrinkIfIdle();
  }
  UpdateEvents(more);
}

void Connection::DiscardUnread() {
  // Closing a socket with unread input sends a reset, which can destroy the
  // replies the client has not read yet. At shutdown, read what is pending.
  char scratch[16 * 1024];
  for (int i = 0; i < 64; ++i) {
    if (read(fd_, scratch, sizeof(scratch)) <= 0) break;
  }
}

// -Y: runs memcached's authentication exchange over the input. True once the
// connection has authenticated and input remains for the command path.
bool Connection::Authenticate() {
  const WorkerConfig& config = worker_->config();
  AuthOutcome outcome = ProcessAsciiAuth(input_->view(), *config.auth, &output_, &worker_->stats(),
                                         config.max_output, config.reqs_per_event);
  input_->Drop(outcome.consumed);
  if (outcome.consumed > 0) last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
  if (outcome.close) close_after_write_ = true;
  authenticated_ = outcome.authenticated;
  return authenticated_ && !close_after_write_ && !input_->empty();
}

bool Connection::ContinueDump() {
  if (close_after_write_ || draining_) {
    dump_.reset();
    return false;
  }
  const size_t bound = worker_->config().max_output;
  if (output_.pending_bytes() >= bound) return true;   // a write brings us back
  state_.store(ConnState::kParseCmd, std::memory_order_relaxed);
  if (!dump_->Fill(&output_, bound, kDumpStepsPerPass)) return true;
  dump_.reset();
  return false;
}

void Connection::StartWatch(uint32_t kinds) {
  WatchHub* hub = worker_->config().watch_hub;
  if (hub == nullptr) {
    output_.Append("WATCHER_FAILED failed to add log watcher\r\n");
    return;
  }
  watch_timer_ = event_new(worker_->base(), -1, EV_PERSIST, &Connection::OnWatchTick, this);
  const struct timeval tick = {0, kWatchTickMs * 1000};
  if (watch_timer_ == nullptr || event_add(watch_timer_, &tick) != 0) {
    output_.Append("WATCHER_FAILED failed to add log watcher\r\n");
    return;
  }
  watcher_ = hub->Add(kinds);
  if (watcher_ == nullptr) {
    event_free(watch_timer_);
    watch_timer_ = nullptr;
    output_.Append("WATCHER_TOO_MANY log watcher limit reached\r\n");
    return;
  }
  output_.Append("OK\r\n");
  input_->Drop(input_->size());
}

void Connection::OnWatchTick(int, short, void* arg) {
  Connection* c = static_cast<Connection*>(arg);
  if (c->output_.pending_bytes() < kWatchOutputBound) {
    std::string lines;
    c->worker_->config().watch_hub->Drain(c->watcher_.get(), &lines);
    if (!lines.empty()) c->output_.Append(lines);
  }
  c->Run();
}

bool Connection::Execute() {
  DiscardSwallowed();
  if (watcher_ != nullptr) {
    input_->Drop(input_->size());   // a watcher's input is not commands (memcached ignores it)
    return false;
  }
  if (dump_ != nullptr && ContinueDump()) return true;
  if (close_after_write_ || draining_ || swallow_ > 0 || input_->empty() || parked_) return false;
  const WorkerConfig& config = worker_->config();
  if (output_.pending_bytes() >= config.max_output) return true;   // back-pressure: resume after a write
  if (!authenticated_) {
    state_.store(ConnState::kParseCmd, std::memory_order_relaxed);
    const size_t before = input_->size();
    if (Authenticate()) return true;   // the rest runs as commands on the next pass
    return !authenticated_ && !close_after_write_ && input_->size() < before && !input_->empty();
  }

  state_.store(ConnState::kParseCmd, std::memory_order_relaxed);
  // A get may park on this ticket (a new seq each pass: a wake meant for an
  // earlier park is ignored). A request whose wait timed out runs alone: if
  // the lease it waited for is still held, once more without parking (a
  // miss); if that lease died, it takes it over or waits for the new one.
  const WaitTicket ticket{static_cast<uint32_t>(worker_->id()), id_, ++park_seq_};
  const bool expired = wait_expired_;
  const int max_requests = expired ? 1 : config.reqs_per_event;
  ProcessOutcome outcome = RunExecutor(max_requests, &ticket);
  if (expired && outcome.parked && outcome.park_token == park_token_) {
    outcome = RunExecutor(max_requests, nullptr);
  }
  input_->Drop(outcome.consumed);
  if (waiting_ || outcome.parked) NoteWait(outcome, expired);
  if (outcome.consumed > 0) last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
  if (outcome.close) {
    close_after_write_ = true;
    return false;
  }
  if (outcome.swallow > 0) {
    swallow_ = outcome.swallow;
    DiscardSwallowed();
  }
  if (outcome.stream == ProcessOutcome::Stream::kMetadump) {
    dump_ = std::make_unique<MetadumpStream>(worker_->store(), outcome.stream_arg);
    return true;
  }
  if (outcome.stream == ProcessOutcome::Stream::kWatch) {
    StartWatch(static_cast<uint32_t>(outcome.stream_arg));
    return false;
  }
  // Progress with input left over: Process() stopped at -R or at the output
  // bound, or the rest is incomplete. Another pass tells which.
  bool progressed = outcome.consumed > 0 || outcome.swallow > 0;
  return progressed && swallow_ == 0 && !input_->empty();
}

ProcessOutcome Connection::RunExecutor(int max_requests, const WaitTicket* park) {
  const WorkerConfig& config = worker_->config();
  if (wire_ == Wire::kUndecided) {
    const bool binary = config.binding == BindingProtocol::kBinary ||
                        (config.binding == BindingProtocol::kAuto &&
                         static_cast<unsigned char>(input_->view()[0]) == binary::kRequestMagic);
    wire_ = binary ? Wire::kBinary : Wire::kText;
  }
  if (wire_ == Wire::kBinary) {
    worker_->binary_executor().set_client_fd(fd_);
    return worker_->binary_executor().Process(input_->view(), &output_, config.max_output,
                                              max_requests, park, &binary_session_);
  }
  worker_->executor().set_client_fd(fd_);
  return worker_->executor().Process(input_->view(), &output_, config.max_output, max_requests,
                                     park);
}

bool Connection::Flush() {
  if (tls_ != nullptr) return FlushTls();
  struct iovec iov[kMaxIovecs];
  while (!output_.empty()) {
    int count = output_.FillIovecs(iov, kMaxIovecs);
    struct msghdr msg;
    std::memset(&msg, 0, sizeof(msg));
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      stalled_since_s_ = 0;
      output_.Consume(static_cast<size_t>(n));
      worker_->stats().bytes_written.Add(static_cast<uint64_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;   // wait for EV_WRITE
    return false;   // EPIPE, ECONNRESET, ...
  }
  return true;
}

// TLS writes cannot take iovecs: TlsSession gathers them into one bounded
// buffer per SSL_write (or sends one large segment in place).
bool Connection::FlushTls() {
  struct iovec iov[kTlsIovecs];
  tls_write_wants_read_ = false;
  while (!output_.empty()) {
    int count = output_.FillIovecs(iov, kTlsIovecs);
    TlsSession::Status status = TlsSession::Status::kOk;
    size_t n = tls_->Write(iov, count, &status);
    if (n > 0) {
      stalled_since_s_ = 0;
      output_.Consume(n);
      worker_->stats().bytes_written.Add(static_cast<uint64_t>(n));
      continue;
    }
    if (status == TlsSession::Status::kWantWrite) return true;   // EV_WRITE stays on
    if (status == TlsSession::Status::kWantRead) {
      tls_write_wants_read_ = true;   // UpdateEvents keeps EV_READ on
      return true;
    }
    return false;
  }
  return true;
}

void Connection::UpdateEvents(bool more_input) {
  const bool backlogged = output_.pending_bytes() >= worker_->config().max_output;
  if (!backlogged) {
    stalled_since_s_ = 0;
  } else if (stalled_since_s_ == 0) {
    stalled_since_s_ = CoarseNowSeconds();
  }
  bool write = !output_.empty();
  bool read = !peer_closed_ && !close_after_write_ && !draining_ && !backlogged && !input_->full();
  if (tls_ != nullptr) {
    write = write || tls_read_wants_write_;
    read = read || (tls_write_wants_read_ && !peer_closed_);
  }
  SetWriting(write);
  SetReading(read);
  if (tls_ != nullptr && reading_ && !peer_closed_ && tls_->HasBufferedInput()) {
    // Decrypted bytes wait inside OpenSSL: no socket event will say so.
    event_active(read_event_, EV_READ, 0);
  }
  if (more_input && !backlogged) {
    // Requests may be waiting in the buffer (-R stopped us, or a dump paused at
    // its output bound): come back after the other connections had their turn,
    // not when more bytes arrive. A zero timeout, not event_active: libevent runs
    // an event activated from a callback in the same pass, before it polls the
    // sockets again, so the other connections would wait for the whole dump.
    static const struct timeval kNextPass = {0, 0};
    event_add(resume_event_, &kNextPass);
  }
  ConnState state = ConnState::kWaiting;
  if (draining_ || close_after_write_) {
    state = ConnState::kClosing;
  } else if (watcher_ != nullptr || dump_ != nullptr) {
    state = ConnState::kWatch;   // memcached's state for both streams
  } else if (!output_.empty()) {
    state = ConnState::kMwrite;
  } else if (swallow_ > 0) {
    state = ConnState::kSwallow;
  } else if (!input_->empty()) {
    state = ConnState::kRead;
  }
  state_.store(state, std::memory_order_relaxed);
}

void Connection::SetReading(bool on) {
  if (on == reading_) return;
  if (on ? event_add(read_event_, nullptr) == 0 : event_del(read_event_) == 0) reading_ = on;
}

void Connection::SetWriting(bool on) {
  if (on == writing_) return;
  if (on ? event_add(write_event_, nullptr) == 0 : event_del(write_event_) == 0) writing_ = on;
}

bool Connection::IdleLongerThan(int64_t now_s, int timeout_s) const {
  return output_.empty() && !waiting_ && now_s - last_cmd_s_.load(std::memory_order_relaxed) > timeout_s;
}

ConnectionInfo Connection::Info(int64_t now_s) const {
  ConnectionInfo info;
  info.fd = fd_;
  // memcached keeps no peer address for unix-socket clients and prints its
  // zeroed one: "?:<AF 0>" (conn_to_str).
  info.addr = peer_.compare(0, 5, "unix:") == 0 ? "?:<AF 0>" : peer_;
  info.listen_addr = local_;
  info.state = ConnStateName(state_.load(std::memory_order_relaxed));
  info.secs_since_last_cmd = now_s - last_cmd_s_.load(std::memory_order_relaxed);
  return info;
}

// watch connevents: memcached's conn_new / conn_close lines. The peer is
// "tcp:<ip>:<port>" (tcp6:[<ip>]:<port>) or "unix:<path>" (rip=unix rport=0).
void Connection::LogConnEvent(bool open) {
  WatchHub* hub = worker_->config().watch_hub;
  if (hub == nullptr || !hub->Wants(kWatchConnEvents)) return;
  std::string_view ip = peer_;
  uint16_t port = 0;
  ConnTransport transport = ConnTransport::kTcp;
  if (ip.substr(0, 5) == "unix:") {
    ip = "unix";
    transport = ConnTransport::kLocal;
  } else {
    ip.remove_prefix(std::min(ip.size(), ip.find(':') + 1));
    const size_t colon = ip.rfind(':');
    if (colon != std::string_view::npos) {
      for (char ch : ip.substr(colon + 1)) port = static_cast<uint16_t>(port * 10 + (ch - '0'));
      ip = ip.substr(0, colon);
    }
    if (ip.size() >= 2 && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
  }
  LogLine line;
  if (open) {
    FormatConnNew(&line, ip, port, transport, fd_);
  } else {
    FormatConnClose(&line, ip, port, transport, close_reason_, fd_);
  }
  hub->Write(kWatchConnEvents, line.view());
}

void Connection::Close() {
  if (draining_) close_reason_ = CloseReason::kShutdown;
  LogConnEvent(/*open=*/false);
  state_.store(ConnState::kClosing, std::memory_order_relaxed);
  worker_->CloseConnection(this);   // deletes this
}

}  // namespace herdless
