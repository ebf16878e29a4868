// Executor: runs requests against the ItemStore and writes memcached's replies
// into a ReplyBuffer. One per worker thread (it owns that worker's
// ThreadStats); not thread-safe. Process() runs request_loop.h's loop over
// the text protocol's requests (classic, meta and lease commands).
#ifndef HERDLESS_PROTOCOL_EXECUTOR_H_
#define HERDLESS_PROTOCOL_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/reply.h"
#include "protocol/request.h"
#include "protocol/request_loop.h"
#include "protocol/server_info.h"
#include "protocol/stats_groups.h"   // kServerVersion, which `version` answers
#include "protocol/text_commands.h"
#include "protocol/text_parser.h"
#include "protocol/thread_stats.h"
#include "protocol/warm.h"
#include "storage/item_store.h"

namespace herdless {

class Executor {
 public:
  Executor(ItemStore* store, ServerInfo* server, ThreadStats* stats);

  // Handles complete requests from `input`, stopping where request_loop.h
  // says (output over `max_output`, `max_requests` (-R), close, swallow, a
  // request that parks or starts a stream). `park` (classic wait mode): the
  // ticket a parking read registers; nullptr = no request parks (a timed-out
  // wait re-runs so).
  // `warm`: this pass's warm-up state (protocol/warm.h), nullptr = off.
  ProcessOutcome Process(std::string_view input, ReplyBuffer* out,
                         size_t max_output, int max_requests,
                         const WaitTicket* park = nullptr, const WarmPass* warm = nullptr);

  // The descriptor of the connection whose requests Process() runs next
  // (the cfd of `watch` lines), whether it is a UDP socket (a datagram
  // cannot carry a stream, so metadump and watch are refused there), and
  // whether its client has closed its end (EOF read: it is never chosen to
  // recompute, ClassicReadOptions).
  void set_client_fd(int fd, bool datagram = false, bool gone = false) {
    context_.watch.fd = fd;
    context_.datagram = datagram;
    context_.client_gone = gone;
  }

  // Executes one parsed request (exposed for tests).
  void Execute(Request& req, ReplyBuffer* out, ProcessOutcome* outcome);

 private:
  // A request the parser refused: its error line (unless noreply hides it).
  void AnswerParseError(const ParseResult& r, ReplyBuffer* out);

  WarmGate warm_;
  TextContext context_;   // the store, server, counters; this pass's client and ticket
  ParserLimits limits_;
  // A parsed request. Two, reused (Request is large: meta flags, decoded
  // key): while one runs, the next pipelined one is parsed into the other.
  struct Parsed {
    ParseResult result;
    Request request;
    const char* at = nullptr;   // where it starts in this pass's input; nullptr = not parsed
    uint64_t key_hash = 0;      // its key's hash, from the prefetch; 0 = not known
  };
  Parsed parsed_[2];
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_EXECUTOR_H_
