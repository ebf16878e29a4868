// Executor: runs requests against the ItemStore and writes memcached's replies
// into a ReplyBuffer. One per worker thread (it owns that worker's
// ThreadStats); not thread-safe. Process() parses and executes as many
// complete requests as the input holds, in order, so pipelined requests are
// answered in order with one write.
#ifndef HERDLESS_PROTOCOL_EXECUTOR_H_
#define HERDLESS_PROTOCOL_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/reply.h"
#include "protocol/request.h"
#include "protocol/server_info.h"
#include "protocol/stat_writer.h"
#include "protocol/text_parser.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

namespace herdless {

// What `version` says (memcached's VERSION, marked as herdless).
inline constexpr std::string_view kServerVersion = "1.6.18-herdless";

struct ProcessOutcome {
  size_t consumed = 0;     // input bytes used (drop them from the buffer)
  uint64_t swallow = 0;    // then discard this many further input bytes
  bool close = false;      // close the connection once the output is written
  // Classic wait mode: the request at `consumed` is parked (not consumed, and
  // nothing of its reply written). The store will wake the ticket given to
  // Process(); then call Process() again, which re-runs it.
  bool parked = false;
  uint64_t park_token = 0; // the lease it waits for (a new one = a new wait)
  std::string_view park_key;  // its key (in the input, which still holds the request)
  // lru_crawler metadump, watch: the connection streams from here on (the
  // dump until its END, log lines until it closes); Process() stopped after
  // the command. The connection runs the stream (protocol/metadump.h,
  // daemon/watch_hub.h).
  enum class Stream : uint8_t { kNone, kMetadump, kWatch };
  Stream stream = Stream::kNone;
  uint64_t stream_arg = 0; // metadump: size classes (bit c = class c); watch: kinds
};

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

  // Handles complete requests from `input`. Stops early (returning what it
  // consumed) when the output holds more than `max_output` bytes, so a client
  // that does not read cannot make the server buffer without bound, or at
  // most `max_requests` requests (-R), or on close/swallow, or at a request
  // that parks. `park` (classic wait mode): the ticket a parking read
  // registers; nullptr = no request parks (a timed-out wait re-runs so).
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
