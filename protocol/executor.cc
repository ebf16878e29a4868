// The text protocol's pass over a connection's input: request_loop.h's loop
// with the text parser (text_parser.h) and the text commands
// (text_commands.h).
#include "protocol/executor.h"

#include <string_view>

#include "protocol/text_commands.h"
#include "storage/item_store.h"

namespace herdless {

namespace {

constexpr std::string_view kBadDataChunk = "CLIENT_ERROR bad data chunk";

}  // namespace

Executor::Executor(ItemStore* store, ServerInfo* server, ThreadStats* stats)
    : limits_(ItemStoreLimits(store)) {
  limits_.latest = server->Settings().latest();
  context_.store = store;
  context_.server = server;
  context_.stats = stats;
  context_.watch.log = server->watch_log();
}

void Executor::AnswerParseError(const ParseResult& r, ReplyBuffer* out) {
  // memcached counts a storage command as cmd_set once its data block is
  // read, before it finds the block malformed.
  if (r.error == kBadDataChunk) context_.stats->cmd_set.Add();
  // A classic command's noreply hides its errors too.
  if (!r.suppress) {
    out->Append(r.error);
    out->Append("\r\n");
  }
}

ProcessOutcome Executor::Process(std::string_view input, ReplyBuffer* out, size_t max_output,
                                 int max_requests, const WaitTicket* park, const WarmPass* warm) {
  ProcessOutcome outcome;
  context_.park = park;
  warm_.Begin(warm, context_.store, context_.stats);
  context_.warm = warm != nullptr ? &warm_ : nullptr;
  context_.batch_output = out->pending_bytes();
  RunRequests(input, *out, {max_output, max_requests}, &context_.stats->conn_yields,
              &outcome.consumed, [&](std::string_view rest) {
                const ParseResult r = ParseRequest(rest.data(), rest.size(), limits_, &request_);
                // The next pipelined request's index bucket loads while this one runs.
                if (r.status == ParseStatus::kRequest && r.consumed < rest.size()) {
                  const std::string_view next_key = PeekRequestKey(rest.substr(r.consumed));
                  if (!next_key.empty()) context_.store->Prefetch(next_key);
                }
                const StepResult step = FinishParsedStep(r, out, &outcome, [&] {
                  if (r.status == ParseStatus::kError) {
                    AnswerParseError(r, out);
                  } else {
                    Execute(request_, out, &outcome);
                  }
                  return request_.noreply || request_.meta.Has('q');
                });
                warm_.NextRequest();
                return step;
              });
  context_.park = nullptr;
  context_.warm = nullptr;
  return outcome;
}

void Executor::Execute(Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  ExecuteTextCommand(context_, req, out, outcome);
}

}  // namespace herdless
