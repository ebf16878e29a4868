// BinaryExecutor: runs binary-protocol requests (binary_parser.h) against the
// ItemStore and writes memcached 1.6.18's binary replies (proto_bin.c) into a
// ReplyBuffer. It goes through the same store calls, stats writers and
// ThreadStats counters as the text Executor of its worker, so text, meta and
// binary clients share one cache, one CAS space and one set of counters. One
// per worker thread; not thread-safe. Process() has the text Executor's
// contract (ProcessOutcome, back-pressure, -R, parking in wait mode).
// With a SASL password database (-S), a connection's BinarySession must pass
// SASL PLAIN (List Mechanisms / Auth / Step) before any command other than
// those and Version runs: the others get "Auth failure." and the connection
// closes, as in memcached.
#ifndef HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_
#define HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_

#include <cstddef>
#include <string_view>

#include "protocol/binary_parser.h"
#include "protocol/executor.h"
#include "protocol/reply.h"
#include "protocol/request_loop.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "protocol/warm.h"
#include "protocol/watch.h"
#include "storage/item_store.h"

namespace herdless {

class AuthFile;

// One binary connection's SASL state (-S).
// memcached keeps one Cyrus SASL context per connection: any SASL command
// drops the authentication it had, and a context that completed once never
// authenticates again.
struct BinarySession {
  bool authenticated = false;
  bool sasl_started = false;   // Auth PLAIN came without data: the next Step carries it
  bool sasl_done = false;      // an Auth succeeded on this connection before
};

class BinaryExecutor {
 public:
  // `sasl_pwdb`: -S's password database (nullptr: no SASL, its opcodes are unknown).
  BinaryExecutor(ItemStore* store, ServerInfo* server, ThreadStats* stats,
                 const AuthFile* sasl_pwdb = nullptr);

  // The descriptor of the connection whose requests Process() runs next
  // (the cfd of `watch` lines), and whether its client has closed its end
  // (EOF read: it is never chosen to recompute, ClassicReadOptions).
  void set_client_fd(int fd, bool gone = false) {
    watch_.fd = fd;
    client_gone_ = gone;
  }

  // request_loop.h's loop over binary requests, as Executor::Process.
  // `session` is the connection's SASL state (required with -S); `warm`
  // this pass's warm-up state (protocol/warm.h), nullptr = off.
  ProcessOutcome Process(std::string_view input, ReplyBuffer* out, size_t max_output,
                         int max_requests, const WaitTicket* park = nullptr,
                         BinarySession* session = nullptr, const WarmPass* warm = nullptr);

  // Executes one parsed request (exposed for tests).
  void Execute(const BinaryRequest& req, ReplyBuffer* out, ProcessOutcome* outcome);

 private:
  void Retrieve(const BinaryRequest& req, ReplyBuffer* out, ProcessOutcome* outcome);
  void Update(const BinaryRequest& req, ReplyBuffer* out);
  void Concat(const BinaryRequest& req, ReplyBuffer* out);
  void Delete(const BinaryRequest& req, ReplyBuffer* out);
  void Arithmetic(const BinaryRequest& req, ReplyBuffer* out);
  void Flush(const BinaryRequest& req, ReplyBuffer* out);
  void Stat(const BinaryRequest& req, ReplyBuffer* out);
  bool RefuseUnauthenticated(std::string_view rest, ReplyBuffer* out);
  void SaslAuth(const BinaryRequest& req, ReplyBuffer* out);

  ItemStore* store_;
  ServerInfo* server_;
  WatchContext watch_;   // `watch` lines: the server's log, the client's fd
  ThreadStats* stats_;
  ParserLimits limits_;
  const AuthFile* const sasl_pwdb_;
  const WaitTicket* park_ = nullptr;   // set for the duration of Process()
  bool client_gone_ = false;           // set_client_fd
  WarmGate warm_;
  bool warming_ = false;               // this Process() has a WarmPass
  BinarySession* session_ = nullptr;   // likewise
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_
