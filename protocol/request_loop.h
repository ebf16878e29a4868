// The request loop of every Process(): the text Executor's (classic and meta
// commands), the BinaryExecutor's and the -Y authentication exchange's
// (auth.h). Each runs the requests at the front of a connection's input one at
// a time, in order, so pipelined requests are answered in order with one
// write, and stops at whichever comes first: input that holds no complete
// request, output over its bound (a client that does not read cannot make the
// server buffer without bound), -R's request count, or a request that ends the
// pass (close, swallow a data block, park, start a stream). The protocols
// differ only in their step: how one request is parsed and answered.
#ifndef HERDLESS_PROTOCOL_REQUEST_LOOP_H_
#define HERDLESS_PROTOCOL_REQUEST_LOOP_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/reply.h"
#include "protocol/text_parser.h"
#include "protocol/thread_stats.h"

namespace herdless {

class ItemStore;

// What a pass of Process() did, for the connection to act on.
struct ProcessOutcome {
  size_t consumed = 0;     // input bytes used (drop them from the buffer)
  uint64_t swallow = 0;    // then discard this many further input bytes
  bool close = false;      // close the connection once the output is written
  bool close_normal = false;   // the close is a quit: memcached logs reason=normal, else error
  // Classic wait mode: the request at `consumed` is parked (not consumed, and
  // nothing of its reply written). The store will wake the ticket given to
  // Process(); then call Process() again, which re-runs it.
  bool parked = false;
  uint64_t park_token = 0; // the lease it waits for (a new one = a new wait)
  std::string_view park_key;  // its key (in the input, which still holds the request)
  // lru_crawler metadump and mgdump, watch: the connection streams from here on (the
  // dump until its END, log lines until it closes); Process() stopped after
  // the command. The connection runs the stream (protocol/metadump.h,
  // daemon/watch_hub.h).
  enum class Stream : uint8_t { kNone, kMetadump, kMgdump, kWatch };
  Stream stream = Stream::kNone;
  uint64_t stream_arg = 0; // metadump, mgdump: size classes (bit c = class c); watch: kinds
  bool stream_latest = false;  // metadump under -o compat=1.6.45: its flags= field

  // Warm-up (protocol/warm.h): the request at `consumed` won the lease
  // `park_token` of `park_key`, which has no value, and waits for the peer
  // (not consumed, nothing of its reply written).
  bool warm = false;

  // A read of `key` parked on the lease `token` (ReadResult::parked, ::cas).
  void Park(std::string_view key, uint64_t token) {
    parked = true;
    park_key = key;
    park_token = token;
  }
  void Warm(std::string_view key, uint64_t token) {
    warm = true;
    park_key = key;
    park_token = token;
  }
};

struct RequestBounds {
  size_t max_output;   // run no request once the output holds more than this
  int max_requests;    // -R (reqs_per_event): run at most this many; <= 0: no bound
};

// What a step did with the request at the front of the input.
struct StepResult {
  size_t consumed = 0;   // input bytes it used
  bool next = false;     // go on with the next request (else the pass ends here)
};

// Runs `step(rest)` on what is left of `input` past `*consumed` until a step
// ends the pass, the input is used up or a bound is met, adding each step's
// bytes to `*consumed`. A pass cut short by max_requests with input left
// counts in `yields` (conn_yields; nullptr: not counted).
template <typename Step>
void RunRequests(std::string_view input, const ReplyBuffer& out, RequestBounds bounds,
                 Counter* yields, size_t* consumed, Step&& step) {
  int handled = 0;
  while (*consumed < input.size()) {
    if (bounds.max_requests > 0 && handled >= bounds.max_requests) {
      if (yields != nullptr) yields->Add();   // -R: give other connections a turn
      return;
    }
    if (out.pending_bytes() > bounds.max_output) return;
    const StepResult s = step(input.substr(*consumed));
    *consumed += s.consumed;
    if (!s.next) return;
    ++handled;
  }
}

// The step of a parsed protocol (text, binary) once its parser has spoken
// (`r`: a ParseResult or BinaryParseResult). `answer()` runs the request or
// answers its parse error and returns whether its reply is hidden (a text
// noreply, a meta q). A request that parked is not answered yet: it stays in
// the input and runs again when woken.
template <typename Parsed, typename Answer>
StepResult FinishParsedStep(const Parsed& r, ReplyBuffer* out, ProcessOutcome* outcome,
                            Answer&& answer) {
  if (r.status == ParseStatus::kNeedMore) return {};
  if (r.status == ParseStatus::kClose) {
    outcome->close = true;
    return {};
  }
  const bool hidden = answer();
  if (outcome->parked || outcome->warm) return {};
  // UDP: each request's reply is its own message; a hidden one sends nothing.
  out->EndMessage(/*skipped=*/hidden);
  if (r.swallow > 0) {
    // The daemon drops these bytes as they arrive, then calls again.
    outcome->swallow = r.swallow;
    return {r.consumed, false};
  }
  return {r.consumed, !outcome->close && outcome->stream == ProcessOutcome::Stream::kNone};
}

// The parsers' limits for values stored in `store` (item_size_max).
ParserLimits ItemStoreLimits(const ItemStore* store);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_REQUEST_LOOP_H_
