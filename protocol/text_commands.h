// The text protocol's commands: classic (get..cas, delete, incr, touch,
// flush_all, version, verbosity, quit, shutdown, cache_memlimit,
// refresh_certs), mcrouter's lease-get and lease-set, and the dispatch to the
// meta commands (meta_executor.h) and the operator console
// (operator_commands.h). Replies and counters are memcached 1.6.18's.
#ifndef HERDLESS_PROTOCOL_TEXT_COMMANDS_H_
#define HERDLESS_PROTOCOL_TEXT_COMMANDS_H_

#include <cstddef>

#include "protocol/reply.h"
#include "protocol/request.h"
#include "protocol/request_loop.h"
#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "protocol/warm.h"
#include "protocol/watch.h"
#include "storage/item_store.h"

namespace herdless {

// What a text command runs against: one worker's store, server, counters
// and, for the pass of Process() under way, the client it answers.
struct TextContext {
  ItemStore* store = nullptr;
  ServerInfo* server = nullptr;
  ThreadStats* stats = nullptr;
  WatchContext watch;                 // `watch` lines: the server's log, the client's fd
  const WaitTicket* park = nullptr;   // classic wait mode: the ticket a read parks on
  WarmGate* warm = nullptr;           // warm-up from a peer (protocol/warm.h), nullptr = off
  // Output pending when the pass began, or at its last `mn`: memcached's mn
  // flushes its replies, so requests after it are not pipelined behind them
  // (a dump or watch after an mn is accepted). Moved by the mn itself.
  mutable size_t batch_output = 0;
  bool datagram = false;              // a UDP client: no streams
  bool client_gone = false;           // the client closed its end (ClassicReadOptions)
  // The hash of the request's key when the executor prefetched it
  // (ItemStore::Prefetch) while the request before it ran; 0 = not known.
  uint64_t key_hash = 0;
};

// Runs one parsed request and writes its reply into `out`; close, park and
// streams go into `outcome`.
void ExecuteTextCommand(const TextContext& c, const Request& req, ReplyBuffer* out,
                        ProcessOutcome* outcome);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_TEXT_COMMANDS_H_
