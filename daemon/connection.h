// Connection: one client connection, owned by one Worker and used only on
// that worker's thread. Its Transport (daemon/transport.h: plain or TLS)
// moves the bytes; the connection reads into its InputBuffer, lets the
// worker's executor turn complete requests into its ReplyBuffer, and has the
// transport write them. The first byte picks the protocol (-B auto: 0x80 is
// binary, as memcached); the connection keeps it. With -Y it speaks only
// memcached's ASCII authentication exchange (protocol/auth.h) until that
// passes.
// Back-pressure: while more than max_output bytes are unsent it neither
// executes nor reads, so a client that does not read cannot grow the server.
// Its parts, made when first needed: a ParkedRequest (classic wait mode: a
// parked head request stops the pipeline, its output still flows), a WarmRequest (a head request that
// waits for a warm peer stops it likewise) and, after `lru_crawler metadump` or
// `watch`, a ConnectionStream.
// Only Info() may be called from other threads (under the worker's registry
// lock).
#ifndef HERDLESS_DAEMON_CONNECTION_H_
#define HERDLESS_DAEMON_CONNECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/client_address.h"
#include "daemon/input_buffer.h"
#include "daemon/parked_request.h"
#include "daemon/warm_request.h"
#include "daemon/transport.h"
#include "protocol/binary_executor.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"
#include "protocol/watch.h"

struct event;

namespace herdless {

class ConnectionStream;
class Worker;
struct ProcessOutcome;

// What a connection is doing, by memcached's conn_* names (`stats conns`).
// Start() moves it from kNewCmd to kWaiting; each pass of the pipeline moves
// it to kParseCmd while it executes, and then to what it waits for: a stream
// (kWatch), the socket (kMwrite), the rest of a refused data block to
// discard (kSwallow), the rest of a request (kRead) or the next one
// (kWaiting). kClosing and kDraining are final: no more requests, close
// once the output is written; kDraining is the server's shutdown, which
// also reads what the client sent meanwhile, so that the close sends no reset.
// The final states come last (Connection::closing() compares).
enum class ConnState : uint8_t {
  kNewCmd,     // conn_new_cmd: just accepted
  kWaiting,    // conn_waiting: nothing buffered, waiting for a request
  kRead,       // conn_read: part of a request line buffered
  kNread,      // conn_nread: a request's line (binary: header) in, its data not all
  kParseCmd,   // conn_parse_cmd: executing requests
  kSwallow,    // conn_swallow: discarding a refused data block
  kMwrite,     // conn_mwrite: replies waiting for the socket
  kWatch,      // conn_watch: streaming a watch log or a metadump
  kClosing,    // conn_closing: finishing before close
  kDraining,   // conn_closing: finishing before close, at shutdown
};
const char* ConnStateName(ConnState state);
ConnState PartialRequestState(std::string_view partial);   // input not empty

class Connection final : private Transport::Owner {
 public:
  // Takes ownership of `transport` (which owns the socket), accepted from `peer`.
  Connection(Worker* worker, std::unique_ptr<Transport> transport, const ClientAddress& peer);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Registers the socket with the worker's loop. False: close it.
  bool Start();

  // Shutdown: stop reading and executing; close once the output is written.
  // May delete the connection (through Worker::CloseConnection).
  void BeginDrain();

  // Idle-timeout check (worker thread): nothing owed and no request for
  // longer than `timeout_s`.
  bool IdleLongerThan(int64_t now_s, int timeout_s) const;
  // True when the output has been at the bound, with nothing written, for
  // more than timeout_s seconds: the client does not read its replies.
  bool StalledLongerThan(int64_t now_s, int timeout_s) const {
    return stalled_since_s_ != 0 && now_s - stalled_since_s_ > timeout_s;
  }
  // A TLS handshake begun at accept and not finished after `timeout_s`.
  bool HandshakeLongerThan(int64_t now_s, int timeout_s) const;
  // Counts a failed TLS handshake and closes (the handshake timeout). Deletes this.
  void FailHandshake();

  int fd() const { return fd_; }
  uint64_t id() const { return id_; }   // unique in the process: a parked reader's ticket

  // The store woke park `seq`: re-run the parked request (if still parked so).
  void Wake(uint64_t seq);
  // A part's timer fired (a wait's timeout, a watch tick): run the pipeline
  // now (may delete this), or soon, after the other connections' turn.
  void Resume() { Run(); }
  void ResumeSoon();
  ConnectionInfo Info(int64_t now_s) const;   // any thread, under the worker's registry lock

 private:
  // The protocol it speaks: -Y's exchange first, then -B's, or (auto) its first byte's.
  enum class Wire : uint8_t { kAuth, kUndecided, kText, kBinary };

  // Transport::Owner
  void OnReadable() override;
  void OnWritable() override { Run(); }
  void OnEstablished() override;
  void OnHandshakeFailed() override { FailHandshake(); }

  static void OnResume(int fd, short what, void* arg);
  event* ResumeEvent();   // resume_event_, made on first use (nullptr: out of memory)

  bool warming() const { return warming_ != nullptr && warming_->in_flight(); }
  bool park_waiting() const { return parking_ != nullptr && parking_->waiting(); }
  bool closing() const { return state() >= ConnState::kClosing; }
  ConnState state() const { return state_.load(std::memory_order_relaxed); }
  void MoveTo(ConnState state) { state_.store(state, std::memory_order_relaxed); }
  void CloseAfterWrite() { MoveTo(ConnState::kClosing); }

  Transport::Io ReadInput();
  void Run();                 // execute, write, then decide what to wait for
  bool Execute();             // true: come back on the next pass (more may be done)
  bool ContinueStream(bool* more);   // false: the stream ended
  bool Authenticate();        // -Y: true once authenticated with input left to execute
  bool ExecuteRequests();
  ProcessOutcome RunExecutor(int max_requests, const WaitTicket* park, const WarmPass* warm);
  bool Flush();               // false: the socket failed
  void DiscardSwallowed();
  void UpdateEvents(bool more_input);
  ConnState WaitState() const;   // where a pass leaves the connection
  void LogConnEvent(bool open);  // watch connevents
  void Close();               // deletes this

  Worker* const worker_;
  const std::unique_ptr<Transport> transport_;
  const int fd_;
  Wire wire_;
  BinarySession binary_session_;      // -S: SASL state of a binary connection
  const uint64_t id_;
  // Formatted when asked (`stats conns`, watch connevents); the local end is
  // getsockname's then.
  const ClientAddress peer_;
  // The small members fill the 4 bytes after peer_ (a Connection is 240 B, in
  // jemalloc's 256 B class: a member more would take it to 320).
  CloseReason close_reason_ = CloseReason::kNormal;   // watch connevents
  bool peer_closed_ = false;      // EOF read: finish what is buffered, then close
  std::atomic<ConnState> state_{ConnState::kNewCmd};
  event* resume_event_ = nullptr;
  const int64_t accepted_s_;

  InputBuffer input_;
  ReplyBuffer output_;
  std::unique_ptr<ParkedRequest> parking_;   // made when a request first parks
  std::unique_ptr<WarmRequest> warming_;   // -o warm_peer only: the head request waits for a peer
  std::unique_ptr<ConnectionStream> stream_;   // a metadump or watch under way
  uint64_t swallow_ = 0;          // input bytes still to discard
  std::atomic<int64_t> last_cmd_s_;
  int64_t stalled_since_s_ = 0;   // output at the bound and no write since; 0 = not stalled
  uint64_t flash_recache_counter_ = 0;   // -o ext_path: WaitTicket::recache_counter
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_CONNECTION_H_
