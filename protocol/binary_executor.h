// BinaryExecutor: runs binary-protocol requests (binary_parser.h) against the
// ItemStore and writes memcached 1.6.18's binary replies (proto_bin.c) into a
// ReplyBuffer. It goes through the same store calls, stats writers and
// ThreadStats counters as the text Executor of its worker, so text, meta and
// binary clients share one cache, one CAS space and one set of counters. One
// per worker thread; not thread-safe. Process() has the text Executor's
// contract (ProcessOutcome, back-pressure, -R, parking in wait mode).
#ifndef HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_
#define HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_

#include <cstddef>
#include <string_view>

#include "protocol/binary_parser.h"
#include "protocol/executor.h"
#include "protocol/reply.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

namespace herdless {

class BinaryExecutor {
 public:
  BinaryExecutor(ItemStore* store, ServerInfo* server, ThreadStats* stats);

  ProcessOutcome Process(std::string_view input, ReplyBuffer* out, size_t max_output,
                         int max_requests, const WaitTicket* park = nullptr);

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

  ItemStore* store_;
  ServerInfo* server_;
  ThreadStats* stats_;
  ParserLimits limits_;
  const WaitTicket* park_ = nullptr;   // set for the duration of Process()
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_BINARY_EXECUTOR_H_
