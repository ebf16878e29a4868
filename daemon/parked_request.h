// ParkedRequest: classic wait mode for one connection. When the request at
// the head of the connection's input parks on a lease, the connection's
// pipeline stops (its output still flows) until the store's wake for the
// park's ticket, or until wait_timeout_ms: then the request runs once more
// without parking (a miss), unless the lease it waited for died meanwhile
// (it takes the lease over, or waits for the new one: a new wait). While
// parked the connection is in its worker's parked registry, where the wake
// finds it. Counts waits_parked / waits_woken / waits_timed_out and writes
// `watch stampede` lines. Worker thread only.
#ifndef HERDLESS_DAEMON_PARKED_REQUEST_H_
#define HERDLESS_DAEMON_PARKED_REQUEST_H_

#include <cstdint>
#include <string>

#include "protocol/watch.h"
#include "storage/parked.h"

struct event;

namespace herdless {

class Connection;
class Worker;
struct ProcessOutcome;

class ParkedRequest {
 public:
  enum class State : uint8_t {
    kNone,      // the head request does not wait
    kParked,    // it waits for a wake (or its timer)
    kWoken,     // woken: run it again (the timer still bounds the wait)
    kExpired,   // its wait timed out: run it again, alone and without parking
  };

  // A connection makes its ParkedRequest when a request first parks: until
  // then its passes use FirstTicket(), and the new one continues from it.
  static WaitTicket FirstTicket(int worker_id, uint64_t conn_id) {
    return WaitTicket{static_cast<uint32_t>(worker_id), conn_id, kFirstSeq};
  }
  // For `conn` (the tickets' conn_id; `fd` names it in watch lines).
  ParkedRequest(Worker* worker, Connection* conn, uint64_t conn_id, int fd);
  ~ParkedRequest();   // leaves the parked registry, frees the timer
  ParkedRequest(const ParkedRequest&) = delete;
  ParkedRequest& operator=(const ParkedRequest&) = delete;

  bool parked() const { return state_ == State::kParked; }
  bool waiting() const { return state_ != State::kNone; }   // owed a reply, parked or not
  bool expired() const { return state_ == State::kExpired; }
  uint64_t token() const { return token_; }   // the lease the head request waits for

  // The ticket for the next executor pass: a new seq each pass, so that a
  // wake meant for an earlier park is ignored.
  WaitTicket NextTicket() { return WaitTicket{worker_id_, conn_id_, ++seq_}; }
  // The store woke park `seq`. True: it is this park's; re-run the request.
  bool Wake(uint64_t seq);
  // After an executor pass (`expired`: the head request ran as an expired
  // wait): ends the wait of a request that was answered, and starts (or
  // keeps) the wait of one that parked.
  void Note(const ProcessOutcome& outcome, bool expired);

 private:
  static constexpr uint64_t kFirstSeq = 1;

  static void OnTimeout(int fd, short what, void* arg);
  void MoveTo(State next);   // keeps the worker's parked registry in step
  void StartWait(const ProcessOutcome& outcome);
  void LogWait(WaitEvent event);

  Worker* const worker_;
  const uint32_t worker_id_;
  Connection* const conn_;
  const uint64_t conn_id_;
  const int fd_;
  State state_ = State::kNone;
  uint64_t seq_ = kFirstSeq;      // ticket seq of the latest executor pass
  uint64_t token_ = 0;
  event* timer_ = nullptr;        // created on the first park
  int64_t started_ms_ = 0;        // watch stampede: when the wait began
  std::string key_;               // watch stampede: its key (kept only while watched)
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_PARKED_REQUEST_H_
