// Accounting: how a read is counted in ThreadStats, as memcached counts it,
// written once for the text, meta and binary executors, with the classic
// read's options that decide what a read counts as.
#ifndef HERDLESS_PROTOCOL_ACCOUNTING_H_
#define HERDLESS_PROTOCOL_ACCOUNTING_H_

#include <cstdint>

#include "protocol/server_info.h"
#include "protocol/thread_stats.h"
#include "storage/item_store.h"

namespace herdless {

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

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_ACCOUNTING_H_
