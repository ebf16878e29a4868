// The text protocol's pass over a connection's input: request_loop.h's loop
// with the text parser (text_parser.h) and the text commands
// (text_commands.h).
#include "protocol/executor.h"

#include <string_view>
#include <utility>

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
  // The request behind the one that runs is parsed ahead (the parser is a
  // pure function of the input, which does not change during a pass): its
  // key's index bucket loads while the one before it runs, and its key is
  // hashed once for both.
  Parsed* now = &parsed_[0];
  Parsed* ahead = &parsed_[1];
  ahead->at = nullptr;
  RunRequests(input, *out, {max_output, max_requests}, &context_.stats->conn_yields,
              &outcome.consumed, [&](std::string_view rest) {
                if (ahead->at == rest.data()) {
                  std::swap(now, ahead);
                } else {
                  now->result = ParseRequest(rest.data(), rest.size(), limits_, &now->request);
                  now->key_hash = 0;
                }
                const ParseResult& r = now->result;
                ahead->at = nullptr;
                if (r.status == ParseStatus::kRequest && r.swallow == 0 && r.consumed < rest.size()) {
                  const std::string_view next = rest.substr(r.consumed);
                  ahead->result = ParseRequest(next.data(), next.size(), limits_, &ahead->request);
                  ahead->at = next.data();
                  ahead->key_hash = ahead->result.status == ParseStatus::kRequest && !ahead->request.key.empty()
                                        ? context_.store->Prefetch(ahead->request.key)
                                        : 0;
                }
                context_.key_hash = now->key_hash;
                const StepResult step = FinishParsedStep(r, out, &outcome, [&] {
                  if (r.status == ParseStatus::kError) {
                    AnswerParseError(r, out);
                  } else {
                    Execute(now->request, out, &outcome);
                  }
                  return now->request.noreply || now->request.meta.Has('q');
                });
                warm_.NextRequest();
                return step;
              });
  context_.park = nullptr;
  context_.warm = nullptr;
  context_.key_hash = 0;
  return outcome;
}

void Executor::Execute(Request& req, ReplyBuffer* out, ProcessOutcome* outcome) {
  ExecuteTextCommand(context_, req, out, outcome);
}

}  // namespace herdless
