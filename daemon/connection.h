// Connection: one client socket, owned by one Worker and used only on that
// worker's thread. It reads into an input buffer, lets the worker's Executor
// turn complete requests into a ReplyBuffer, and writes the replies with
// sendmsg (many iovecs at once, partial writes resumed on EV_WRITE).
// Back-pressure: while more than max_output bytes are unsent it neither
// executes nor reads, so a client that does not read cannot grow the server.
// Classic wait mode: a request that parks stops the connection's pipeline
// (its output still flows) until Wake() with the park's ticket re-runs it, or
// until wait_timeout_ms: then it is answered with a miss, unless the lease it
// waited for died meanwhile (it takes the lease over, or waits for the new one).
// Transport: plain TCP, or a TlsSession (-Z). A TLS connection first drives
// its handshake from the same events, bounded by the handshake timeout, then
// reads and writes through the session (writes gathered into one bounded
// buffer per SSL_write, not sendmsg). With -Y nothing is executed until the
// connection passes ASCII authentication (protocol/auth.h).
// `watch` turns the connection into a log stream: its input is read (to
// see the client leave) and ignored, and a timer moves its watcher's lines
// (daemon/watch_hub.h) into the output while little is unsent.
// `lru_crawler metadump` streams its dump a few walk steps per pass, within
// the output bound, between other connections' turns; requests after it wait
// for its END.
// The first byte picks the protocol (-B auto: 0x80 is binary, as memcached);
// the connection keeps it. Only state() and secs_since_last_cmd() may be read
// by other threads.
#ifndef HERDLESS_DAEMON_CONNECTION_H_
#define HERDLESS_DAEMON_CONNECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "daemon/watch_hub.h"
#include "protocol/binary_executor.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"

struct event;

namespace herdless {

class MetadumpStream;
class TlsSession;
class Worker;
struct ProcessOutcome;
struct WaitTicket;

// memcached's conn_* states, for `stats conns`.
enum class ConnState : uint8_t {
  kNewCmd,     // conn_new_cmd: just accepted
  kWaiting,    // conn_waiting: nothing buffered, waiting for a request
  kRead,       // conn_read: part of a request buffered
  kParseCmd,   // conn_parse_cmd: executing requests
  kSwallow,    // conn_swallow: discarding a refused data block
  kMwrite,     // conn_mwrite: replies waiting for the socket
  kClosing,    // conn_closing: finishing before close
  kWatch,      // conn_watch: streaming a watch log or a metadump
};
const char* ConnStateName(ConnState state);

class Connection {
 public:
  // Takes ownership of the non-blocking socket `fd` and of `tls` (nullptr: plain TCP).
  Connection(Worker* worker, int fd, std::string peer, std::string local,
             std::unique_ptr<TlsSession> tls = nullptr);
  ~Connection();   // closes the socket
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
  ConnectionInfo Info(int64_t now_s) const;   // any thread, under the worker's registry lock

 private:
  class InputBuffer;
  enum class ReadStatus { kData, kAgain, kEof, kError };

  static void OnReadable(int fd, short what, void* arg);
  static void OnWritable(int fd, short what, void* arg);
  static void OnResume(int fd, short what, void* arg);
  static void OnWaitTimeout(int fd, short what, void* arg);
  static void OnWatchTick(int fd, short what, void* arg);

  // The protocol a connection speaks: -B's, or (auto) its first byte's.
  enum class Wire : uint8_t { kUndecided, kText, kBinary };

  ReadStatus ReadInput();
  ReadStatus ReadTls(char* dest, size_t room, size_t* n);
  void ContinueHandshake();   // may delete this
  bool Authenticate();        // -Y: true once authenticated with input left to execute
  void Run();                 // execute, write, then decide what to wait for
  bool Execute();             // true: input remains that may hold more requests
  bool ContinueDump();        // true: the metadump goes on (come back)
  void StartWatch(uint32_t kinds);
  void LogWait(WaitEvent event);   // watch stampede: a parked reader's wait
  void LogConnEvent(bool open);    // watch connevents
  ProcessOutcome RunExecutor(int max_requests, const WaitTicket* park);
  bool Flush();               // false: the socket failed
  bool FlushTls();
  void NoteWait(const ProcessOutcome& outcome, bool expired);
  void SetParked(bool on);
  void DiscardSwallowed();
  void DiscardUnread();
  void UpdateEvents(bool more_input);
  void SetReading(bool on);
  void SetWriting(bool on);
  void Close();               // deletes this

  Worker* const worker_;
  const int fd_;
  const uint64_t id_;
  const std::string peer_;
  const std::string local_;
  event* read_event_ = nullptr;
  event* write_event_ = nullptr;
  event* resume_event_ = nullptr;
  bool reading_ = false;
  bool writing_ = false;

  Wire wire_ = Wire::kUndecided;

  std::unique_ptr<TlsSession> tls_;   // nullptr: plain TCP
  bool tls_read_wants_write_ = false; // SSL_read needs the socket writable first
  bool tls_write_wants_read_ = false; // SSL_write needs the socket readable first
  bool authenticated_;                // false until -Y's exchange succeeds
  BinarySession binary_session_;      // -S: SASL state of a binary connection
  const int64_t accepted_s_;

  std::unique_ptr<InputBuffer> input_;
  ReplyBuffer output_;
  std::unique_ptr<MetadumpStream> dump_;   // lru_crawler metadump under way
  std::shared_ptr<WatchHub::Watcher> watcher_;   // set once the connection watches
  event* watch_timer_ = nullptr;
  int64_t wait_started_ms_ = 0;   // watch stampede: when the head request parked
  std::string wait_key_;          // watch stampede: its key (kept only while watched)
  CloseReason close_reason_ = CloseReason::kNormal;   // watch connevents
  uint64_t swallow_ = 0;          // input bytes still to discard
  bool peer_closed_ = false;      // EOF read: finish what is buffered, then close
  bool close_after_write_ = false;
  bool draining_ = false;

  // Classic wait mode (see NoteWait).
  event* wait_timer_ = nullptr;   // created on the first park
  bool parked_ = false;           // the head request waits for a wake
  bool waiting_ = false;          // the head request has parked and is not answered yet
  bool wait_expired_ = false;     // its wait timed out: run it once without parking
  uint64_t park_seq_ = 0;         // ticket seq of the latest Process() pass
  uint64_t park_token_ = 0;       // the lease the head request waits for

  std::atomic<ConnState> state_{ConnState::kNewCmd};
  std::atomic<int64_t> last_cmd_s_;
  int64_t stalled_since_s_ = 0;   // output at the bound and no write since; 0 = not stalled
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_CONNECTION_H_
