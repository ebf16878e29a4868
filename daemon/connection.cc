#include "daemon/connection.h"

#include <event2/event.h>

#include <algorithm>
#include <string_view>

#include "daemon/connection_stream.h"
#include "daemon/log.h"
#include "daemon/watch_hub.h"
#include "daemon/worker.h"
#include "protocol/auth.h"
#include "protocol/executor.h"

namespace herdless {

namespace {

std::atomic<uint64_t> next_connection_id{1};

}  // namespace

// What memcached's state would be with `partial` (an incomplete request)
// buffered: conn_nread once the command line (binary: header, extras and
// key) is in and its data is awaited, conn_read before.
ConnState PartialRequestState(std::string_view partial) {
  constexpr size_t kBinaryHeaderSize = 24;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(partial[i]); };
  if (byte(0) != 0x80) {
    return partial.find('\n') != std::string_view::npos ? ConnState::kNread : ConnState::kRead;
  }
  if (partial.size() < kBinaryHeaderSize) return ConnState::kRead;
  const size_t key_and_extras = (size_t{byte(2)} << 8 | byte(3)) + byte(4);
  return partial.size() >= kBinaryHeaderSize + key_and_extras ? ConnState::kNread : ConnState::kRead;
}

const char* ConnStateName(ConnState state) {
  switch (state) {
    case ConnState::kNewCmd: return "conn_new_cmd";
    case ConnState::kWaiting: return "conn_waiting";
    case ConnState::kRead: return "conn_read";
    case ConnState::kNread: return "conn_nread";
    case ConnState::kParseCmd: return "conn_parse_cmd";
    case ConnState::kSwallow: return "conn_swallow";
    case ConnState::kMwrite: return "conn_mwrite";
    case ConnState::kWatch: return "conn_watch";
    case ConnState::kClosing: return "conn_closing";
    case ConnState::kDraining: return "conn_closing";
  }
  return "conn_closed";
}

Connection::Connection(Worker* worker, std::unique_ptr<Transport> transport,
                       const ClientAddress& peer)
    : worker_(worker),
      transport_(std::move(transport)),
      fd_(transport_->fd()),
      wire_(worker->config().auth != nullptr ? Wire::kAuth : Wire::kUndecided),
      id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      peer_(peer),
      accepted_s_(CoarseNowSeconds()),
      input_(worker->config().max_input, worker->block_cache()),
      last_cmd_s_(CoarseNowSeconds()) {
  output_.set_caches(worker->block_cache(), worker->reply_queues());
  // Only with -o warm_peer: the other connections carry no warm-up state.
  if (worker->warm_peers() != nullptr) warming_ = std::make_unique<WarmRequest>(worker, this);
}

// The stream and the parked request go first (they hold timers and
// registrations), the transport last (a TLS close_notify, then the close).
// output_ goes before the transport: a send still in flight on the io_uring
// path reads its bytes until it completes, so the transport takes them first.
Connection::~Connection() {
  transport_->Abandon(&output_);
  stream_.reset();
  if (resume_event_ != nullptr) event_free(resume_event_);
}

bool Connection::Start() {
  if (!transport_->Start(this)) return false;
  MoveTo(ConnState::kWaiting);
  LogConnEvent(/*open=*/true);
  return true;
}

void Connection::OnReadable() {
  switch (ReadInput()) {
    case Transport::Io::kError:
      close_reason_ = CloseReason::kError;
      Close();
      return;
    case Transport::Io::kEof:
      peer_closed_ = true;
      break;
    case Transport::Io::kDone:
    case Transport::Io::kAgain:
      break;
  }
  Run();
}

void Connection::OnEstablished() {
  last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
}

void Connection::FailHandshake() {
  worker_->stats().ssl_handshake_errors.Add();
  Log(LogLevel::kNotice, "<%d TLS handshake failed (%s)", fd_, peer_.Text().c_str());
  Close();
}

bool Connection::HandshakeLongerThan(int64_t now_s, int timeout_s) const {
  return transport_->handshaking() && now_s - accepted_s_ > timeout_s;
}

void Connection::OnResume(int, short, void* arg) { static_cast<Connection*>(arg)->Run(); }

void Connection::ResumeSoon() {
  if (ResumeEvent() != nullptr) event_active(resume_event_, EV_TIMEOUT, 0);
}

// Made on first use (few connections ever need it): an idle connection holds
// no more events than its transport's.
event* Connection::ResumeEvent() {
  if (resume_event_ == nullptr) {
    resume_event_ = event_new(worker_->base(), -1, 0, &Connection::OnResume, this);
  }
  return resume_event_;
}

void Connection::Wake(uint64_t seq) {
  if (parking_ != nullptr && parking_->Wake(seq)) Run();
}

void Connection::BeginDrain() {
  MoveTo(ConnState::kDraining);
  Run();
}

Transport::Io Connection::ReadInput() {
  size_t room;
  char* dest = input_.Room(&room);
  if (room == 0) return Transport::Io::kAgain;   // full: Run() decides
  size_t got = 0;
  const Transport::Io status = transport_->Read(dest, room, &got);
  if (status != Transport::Io::kDone) return status;
  input_.Commit(got);
  worker_->stats().bytes_read.Add(static_cast<uint64_t>(got));
  DiscardSwallowed();
  return status;
}

void Connection::DiscardSwallowed() {
  if (swallow_ == 0 || input_.empty()) return;
  size_t n = input_.size() < swallow_ ? input_.size() : static_cast<size_t>(swallow_);
  input_.Drop(n);
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
    const bool waiting = park_waiting() || warming();
    const bool oversized = !more && input_.full() && !waiting;   // a request larger than we buffer
    if (closing() || oversized || (peer_closed_ && !more && !waiting)) {
      if (oversized) close_reason_ = CloseReason::kError;   // memcached: line too long
      if (state() == ConnState::kDraining) transport_->DiscardUnread();
      Close();
      return;
    }
    // Waiting holds no buffer: the blocks go back to the worker's cache.
    input_.ReleaseIfEmpty();
    output_.ReleaseIdle();
  }
  UpdateEvents(more);
}

bool Connection::Execute() {
  DiscardSwallowed();
  bool more;
  if (stream_ != nullptr && ContinueStream(&more)) return more;
  if (closing() || swallow_ > 0 || input_.empty() || (parking_ != nullptr && parking_->parked()) ||
      warming()) {
    return false;
  }
  // Back-pressure: resume after a write.
  if (output_.pending_bytes() >= worker_->config().max_output) return true;
  MoveTo(ConnState::kParseCmd);
  if (wire_ == Wire::kAuth) return Authenticate();
  return ExecuteRequests();
}

// One pass of the stream under way. False: it has ended, requests after it
// may run; true: the pass is over (*more: come back on the next pass).
bool Connection::ContinueStream(bool* more) {
  switch (stream_->Continue(&output_, closing())) {
    case ConnectionStream::Pass::kLive:
      input_.Drop(input_.size());   // a watcher's input is not commands (memcached ignores it)
      *more = false;
      return true;
    case ConnectionStream::Pass::kPaused:
      *more = true;
      return true;
    case ConnectionStream::Pass::kEnded:
      break;
  }
  stream_.reset();
  return false;
}

// -Y: runs memcached's authentication exchange over the input. True once the
// connection has authenticated with input left for the command path (it runs
// on the next pass), or when the exchange consumed some of the input and
// more remains.
bool Connection::Authenticate() {
  const WorkerConfig& config = worker_->config();
  AuthOutcome outcome = ProcessAsciiAuth(input_.view(), *config.auth, &output_, &worker_->stats(),
                                         config.max_output, config.reqs_per_event,
                                         config.auth_latest);
  input_.Drop(outcome.consumed);
  if (outcome.consumed > 0) last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
  if (outcome.close) CloseAfterWrite();
  if (outcome.authenticated) wire_ = Wire::kUndecided;
  if (closing() || input_.empty()) return false;
  return outcome.authenticated || outcome.consumed > 0;
}

bool Connection::ExecuteRequests() {
  // A get may park on this pass's ticket. A request whose wait timed out
  // runs alone: if the lease it waited for is still held, once more without
  // parking (a miss); if that lease died, it takes it over or waits for the
  // new one.
  WaitTicket ticket = parking_ != nullptr ? parking_->NextTicket() : ParkedRequest::FirstTicket(worker_->id(), id_);
  ticket.recache_counter = &flash_recache_counter_;
  const bool expired = parking_ != nullptr && parking_->expired();
  const int max_requests = expired ? 1 : worker_->config().reqs_per_event;
  const WarmPass* warm = warming_ != nullptr ? warming_->Pass() : nullptr;
  ProcessOutcome outcome = RunExecutor(max_requests, &ticket, warm);
  if (expired && outcome.parked && outcome.park_token == parking_->token()) {
    outcome = RunExecutor(max_requests, nullptr, warm);
  }
  input_.Drop(outcome.consumed);
  if (outcome.parked && parking_ == nullptr) {
    parking_ = std::make_unique<ParkedRequest>(worker_, this, id_, fd_);   // its seq: FirstTicket's
  }
  if (park_waiting() || outcome.parked) parking_->Note(outcome, expired);
  if (warm != nullptr) warming_->Note(outcome);
  if (outcome.consumed > 0) last_cmd_s_.store(CoarseNowSeconds(), std::memory_order_relaxed);
  if (outcome.close) {
    // memcached's conn_close reason: normal for a quit, error for the rest
    // (an HTTP request line, a bad binary magic, ...); shutdown sets its own.
    close_reason_ = outcome.close_normal ? CloseReason::kNormal : CloseReason::kError;
    CloseAfterWrite();
    return false;
  }
  if (outcome.swallow > 0) {
    swallow_ = outcome.swallow;
    DiscardSwallowed();
  }
  if (outcome.stream != ProcessOutcome::Stream::kNone) {
    stream_ = ConnectionStream::Start(outcome, worker_, this, &output_);
    if (stream_ == nullptr) return false;   // a refused watch
    bool more = true;   // a dump that ended at once: the requests after it run next pass
    ContinueStream(&more);
    return more;
  }
  // Progress with input left over: Process() stopped at -R or at the output
  // bound, or the rest is incomplete. Another pass tells which.
  bool progressed = outcome.consumed > 0 || outcome.swallow > 0;
  return progressed && swallow_ == 0 && !input_.empty();
}

ProcessOutcome Connection::RunExecutor(int max_requests, const WaitTicket* park, const WarmPass* warm) {
  const WorkerConfig& config = worker_->config();
  if (wire_ == Wire::kUndecided) {
    const bool binary = config.binding == BindingProtocol::kBinary ||
                        (config.binding == BindingProtocol::kAuto &&
                         static_cast<unsigned char>(input_.view()[0]) == binary::kRequestMagic);
    wire_ = binary ? Wire::kBinary : Wire::kText;
  }
  if (wire_ == Wire::kBinary) {
    worker_->binary_executor().set_client_fd(fd_, peer_closed_);
    return worker_->binary_executor().Process(input_.view(), &output_, config.max_output,
                                              max_requests, park, &binary_session_, warm);
  }
  worker_->executor().set_client_fd(fd_, /*datagram=*/false, peer_closed_);
  return worker_->executor().Process(input_.view(), &output_, config.max_output, max_requests,
                                     park, warm);
}

bool Connection::Flush() {
  size_t written = 0;
  const Transport::Io status = transport_->Write(&output_, &written);
  if (written > 0) {
    stalled_since_s_ = 0;
    worker_->stats().bytes_written.Add(static_cast<uint64_t>(written));
  }
  return status != Transport::Io::kError;
}

void Connection::UpdateEvents(bool more_input) {
  const bool backlogged = output_.pending_bytes() >= worker_->config().max_output;
  if (!backlogged) {
    stalled_since_s_ = 0;
  } else if (stalled_since_s_ == 0) {
    stalled_since_s_ = CoarseNowSeconds();
  }
  transport_->Want(/*read=*/!peer_closed_ && !closing() && !backlogged && !input_.full(),
                   /*write=*/!output_.empty());
  if (more_input && !backlogged) {
    // Requests may be waiting in the buffer (-R stopped us, or a dump paused at
    // its output bound): come back after the other connections had their turn,
    // not when more bytes arrive. A zero timeout, not event_active: libevent runs
    // an event activated from a callback in the same pass, before it polls the
    // sockets again, so the other connections would wait for the whole dump.
    static const struct timeval kNextPass = {0, 0};
    if (ResumeEvent() != nullptr) event_add(resume_event_, &kNextPass);
  }
  if (!closing()) MoveTo(WaitState());
}

ConnState Connection::WaitState() const {
  if (stream_ != nullptr) return ConnState::kWatch;   // memcached's state for both streams
  if (!output_.empty()) return ConnState::kMwrite;
  if (swallow_ > 0) return ConnState::kSwallow;
  if (!input_.empty()) return PartialRequestState(input_.view());
  return ConnState::kWaiting;
}

bool Connection::IdleLongerThan(int64_t now_s, int timeout_s) const {
  return output_.empty() && !park_waiting() &&
         now_s - last_cmd_s_.load(std::memory_order_relaxed) > timeout_s;
}

ConnectionInfo Connection::Info(int64_t now_s) const {
  ConnectionInfo info;
  info.fd = fd_;
  // memcached keeps no peer address for unix-socket clients and prints its
  // zeroed one: "?:<AF 0>" (conn_to_str).
  info.addr = peer_.is_unix() ? "?:<AF 0>" : peer_.Text();
  info.listen_addr = LocalAddressText(fd_);
  info.state = ConnStateName(state_.load(std::memory_order_relaxed));
  info.secs_since_last_cmd = now_s - last_cmd_s_.load(std::memory_order_relaxed);
  return info;
}

// watch connevents: memcached's conn_new / conn_close lines. The peer is
// "tcp:<ip>:<port>" (tcp6:[<ip>]:<port>) or "unix:<path>" (rip=unix rport=0).
void Connection::LogConnEvent(bool open) {
  WatchHub* hub = worker_->config().watch_hub;
  if (hub == nullptr || !hub->Wants(kWatchConnEvents)) return;
  const std::string ip = peer_.is_unix() ? "unix" : peer_.Host();
  const uint16_t port = peer_.port();
  const ConnTransport transport = peer_.is_unix() ? ConnTransport::kLocal : ConnTransport::kTcp;
  LogLine line;
  if (open) {
    FormatConnNew(&line, ip, port, transport, fd_);
  } else {
    FormatConnClose(&line, ip, port, transport, close_reason_, fd_);
  }
  hub->Write(kWatchConnEvents, line.view());
}

void Connection::Close() {
  if (state() == ConnState::kDraining) close_reason_ = CloseReason::kShutdown;
  if (transport_->protocol_error()) worker_->stats().ssl_proto_errors.Add();
  LogConnEvent(/*open=*/false);
  if (!closing()) MoveTo(ConnState::kClosing);
  worker_->CloseConnection(this);   // deletes this
}

}  // namespace herdless
