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
#include "protocol/stat_writer.h"
#include "protocol/text_parser.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

namespace herdless {

// What `version` says (memcached's VERSION, marked as herdless).
inline constexpr std::string_view kServerVersion = "1.6.18-herdless";

// A classic read of one key (text get/gets/gat/gats; binary Get, GetK, GAT,
// GATK and their quiet variants; binary Touch, `with_value` false). In a
// classic stampede mode a read that returns a value is a lease read: the
// reader that wins the key's lease (on a miss, a stale value, an XFetch draw
// or a refresh-ahead window) is answered with a miss, its cue to recompute and
// set; the others get the stale value, or a miss when there is none. A touch
// read (gat) touches only a fresh value it returns: touching a stale value
// would make it look fresh, and the winner's miss touches nothing. In wait
// mode a read of a key with no value whose lease is held parks on `park` (the
// caller passes nullptr where a reply could be left half written: multi-key
// gets). A read without a value (binary Touch) ignores the modes, as `touch`.
ReadOptions ClassicReadOptions(const ProtocolSettings& settings, bool touch, int64_t exptime,
                               const WaitTicket* park, bool with_value = true);
// Counts a classic read as memcached does (cmd_get/get_hits/get_misses, or
// cmd_touch/touch_hits/touch_misses for a touch, plus get_expired/get_flushed)
// and returns whether the client is given the value.
bool CountClassicRead(ThreadStats* stats, const ReadOptions& opts, const ReadResult& r);

// `stats <group>` for both protocols: "" (the general stats), settings, items,
// slabs, sizes, sizes_enable, sizes_disable, with the end marker where
// memcached writes one. False for a group it does not know.
bool WriteStatsGroup(ItemStore* store, ServerInfo* server, std::string_view group,
                     StatWriter* w);

class Executor {
 public:
  Executor(ItemStore* store, ServerInfo* server, ThreadStats* stats);

  // Handles complete requests from `input`, stopping where request_loop.h
  // says (output over `max_output`, `max_requests` (-R), close, swallow, a
  // request that parks or starts a stream). `park` (classic wait mode): the
  // ticket a parking read registers; nullptr = no request parks (a timed-out
  // wait re-runs so).
  ProcessOutcome Process(std::string_view input, ReplyBuffer* out,
                         size_t max_output, int max_requests,
                         const WaitTicket* park = nullptr);

  // The descriptor of the connection whose requests Process() runs next
  // (the cfd of `watch` lines), and whether it is a UDP socket: a datagram
  // cannot carry a stream, so metadump and watch are refused there.
  void set_client_fd(int fd, bool datagram = false) {
    client_fd_ = fd;
    datagram_ = datagram;
  }

  // Executes one parsed request (exposed for tests).
  void Execute(Request& req, ReplyBuffer* out, ProcessOutcome* outcome);

 private:
  // A request the parser refused: its error line (unless noreply hides it).
  void AnswerParseError(const ParseResult& r, ReplyBuffer* out);

  ItemStore* store_;
  ServerInfo* server_;
  ThreadStats* stats_;
  ParserLimits limits_;
  Request request_;   // reused: Request is large (meta flags, decoded key)
  const WaitTicket* park_ = nullptr;   // set for the duration of Process()
  size_t batch_output_ = 0;            // output pending when Process() began
  WatchLog* watch_;                    // the server's, or nullptr
  int client_fd_ = -1;
  bool datagram_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_EXECUTOR_H_
