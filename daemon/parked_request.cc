#include "daemon/parked_request.h"

#include <event2/event.h>

#include <ctime>

#include "daemon/connection.h"
#include "daemon/watch_hub.h"
#include "daemon/worker.h"
#include "protocol/executor.h"

namespace herdless {

namespace {

// A parked reader's timer runs this much past wait_timeout_ms. libevent
// measures from the loop's cached time, which may be a few ms old; with the
// default wait_timeout_ms = lease_timeout the slack makes sure a reader whose
// wait ends finds the lease it waited for dead, and takes it over.
constexpr int kWaitSlackMs = 10;

int64_t MonotonicMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

ParkedRequest::ParkedRequest(Worker* worker, Connection* conn, uint64_t conn_id, int fd)
    : worker_(worker),
      worker_id_(static_cast<uint32_t>(worker->id())),
      conn_(conn),
      conn_id_(conn_id),
      fd_(fd) {}

ParkedRequest::~ParkedRequest() {
  if (timer_ != nullptr) event_free(timer_);
  if (parked()) worker_->SetParked(conn_id_, nullptr);
}

bool ParkedRequest::Wake(uint64_t seq) {
  if (!parked() || seq != seq_) return false;   // a ticket of an earlier park
  MoveTo(State::kWoken);
  return true;
}

void ParkedRequest::OnTimeout(int, short, void* arg) {
  ParkedRequest* p = static_cast<ParkedRequest*>(arg);
  if (!p->waiting()) return;
  p->MoveTo(State::kExpired);
  p->conn_->Resume();   // may delete the connection, and this with it
}

void ParkedRequest::MoveTo(State next) {
  const bool was_parked = parked();
  state_ = next;
  if (was_parked != parked()) worker_->SetParked(conn_id_, parked() ? conn_ : nullptr);
}

void ParkedRequest::Note(const ProcessOutcome& outcome, bool expired) {
  if (waiting() && outcome.consumed > 0) {
    ThreadStats& stats = worker_->stats();
    (expired ? stats.waits_timed_out : stats.waits_woken).Add();
    LogWait(expired ? WaitEvent::kTimedOut : WaitEvent::kWoken);
    MoveTo(State::kNone);
    if (timer_ != nullptr) event_del(timer_);
  }
  if (!outcome.parked) return;
  // The same wait keeps its timer; a new one is this request's first park,
  // or a new lease after the one it waited for timed out (wait_timeout_ms
  // bounds the wait for one lease).
  const bool same_wait = waiting() && outcome.park_token == token_;
  const bool first_park = !waiting();
  MoveTo(State::kParked);
  if (same_wait) return;
  if (first_park) worker_->stats().waits_parked.Add();
  StartWait(outcome);
}

void ParkedRequest::StartWait(const ProcessOutcome& outcome) {
  token_ = outcome.park_token;
  WatchHub* hub = worker_->config().watch_hub;
  if (hub != nullptr && hub->Wants(kWatchStampede)) {
    key_.assign(outcome.park_key);
    started_ms_ = MonotonicMs();
    LogWait(WaitEvent::kParked);
  } else {
    key_.clear();
  }
  if (timer_ == nullptr) timer_ = event_new(worker_->base(), -1, 0, &ParkedRequest::OnTimeout, this);
  const int64_t ms = int64_t{worker_->config().wait_timeout_ms} + kWaitSlackMs;
  struct timeval timeout = {static_cast<time_t>(ms / 1000),
                            static_cast<suseconds_t>((ms % 1000) * 1000)};
  if (timer_ == nullptr || event_add(timer_, &timeout) != 0) {
    // No timer, no bound on the wait: give up waiting at once.
    MoveTo(State::kExpired);
    conn_->ResumeSoon();
  }
}

void ParkedRequest::LogWait(WaitEvent event) {
  WatchHub* hub = worker_->config().watch_hub;
  if (hub == nullptr || !hub->Wants(kWatchStampede) || key_.empty()) return;
  const int64_t waited = event == WaitEvent::kParked ? 0 : MonotonicMs() - started_ms_;
  LogLine line;
  FormatWait(&line, event, key_, token_, static_cast<uint32_t>(waited), fd_);
  hub->Write(kWatchStampede, line.view());
}

}  // namespace herdless
