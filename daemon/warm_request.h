// WarmRequest: warm-up from a peer for one connection (protocol/warm.h).
// When the head request wins the lease of a key with no value and the
// executor diverts it (ProcessOutcome::warm), Start() asks the worker's
// WarmPeers; the connection's pipeline stops (its output still flows) until
// the answer. A hit is stored under the reader's lease token (so a set,
// delete or flush that came meanwhile wins, and the readers waiting on the
// key are woken); then the request runs again with Pass() saying it came
// back, and reads the value or gets its lease back. A value the peer holds
// stale is stored as a stale one under the same lease instead
// (StoreStaleCopy). Counts warm_*.
// Worker thread only.
#ifndef HERDLESS_DAEMON_WARM_REQUEST_H_
#define HERDLESS_DAEMON_WARM_REQUEST_H_

#include <cstdint>
#include <string>

#include "protocol/warm.h"

namespace herdless {

class Connection;
class Worker;
struct WarmResult;

class WarmRequest {
 public:
  // A peer that speaks only gets tells no TTL: its values are kept this long.
  static constexpr int64_t kUnknownTtlS = 60;

  WarmRequest(Worker* worker, Connection* conn) : worker_(worker), conn_(conn) {}
  ~WarmRequest();   // forgets a fetch under way
  WarmRequest(const WarmRequest&) = delete;
  WarmRequest& operator=(const WarmRequest&) = delete;

  bool in_flight() const { return fetch_ != 0; }
  // What the next executor pass knows of warm-up; nullptr when it is off.
  const WarmPass* Pass();
  // After that pass: a head request answered (or parked) is done with the peer;
  // one diverted to the peer (outcome.warm) is sent there.
  void Note(const ProcessOutcome& outcome);

 private:
  void Start(std::string_view key, uint64_t token);
  void Done(const WarmResult& r);
  bool StoreStaleCopy(const WarmResult& r);

  Worker* const worker_;
  Connection* const conn_;
  uint64_t fetch_ = 0;    // WarmPeers' id while a fetch is under way
  std::string key_;
  WarmPass pass_;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_WARM_REQUEST_H_
