// Accounting: how reads, stores and incr/decr count in ThreadStats, as
// memcached counts them, written once for the text, meta and binary
// executors; with the classic read's options, which decide what a read
// counts as.
#ifndef HERDLESS_PROTOCOL_ACCOUNTING_H_
#define HERDLESS_PROTOCOL_ACCOUNTING_H_

#include <cstdint>
#include <string_view>

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
// `client_gone`: the client has closed its end (EOF). It cannot store a value
// on this connection, so it is never chosen to recompute: its reads are plain
// classic reads (a parked reader whose client left must not take over a dead
// lease, or the live readers parked with it wait another lease_timeout).
ReadOptions ClassicReadOptions(const ProtocolSettings& settings, bool touch, int64_t exptime,
                               const WaitTicket* park, bool with_value = true, bool client_gone = false);
// Counts a classic read as memcached does (cmd_get/get_hits/get_misses, or
// cmd_touch/touch_hits/touch_misses for a touch, plus get_expired/get_flushed)
// and returns whether the client is given the value.
bool CountClassicRead(ThreadStats* stats, const ReadOptions& opts, const ReadResult& r);

// A read: cmd_get with get_hits or get_misses, or for a touch cmd_touch with
// touch_hits or touch_misses.
void CountRead(ThreadStats* stats, bool touch, bool hit);

// Stores (text set..cas and lease-set, ms, binary Set..Prepend). memcached
// allocates a store's item before it reads the value: a store whose item is
// too large or finds no memory is refused there, and is no cmd_set. (Text
// and binary append and prepend allocate the combined item later, where
// either failure is a plain "not stored" that counts as a cmd_set.)
inline bool IsAllocationFailure(StoreStatus status) {
  return status == StoreStatus::kTooLarge || status == StoreStatus::kNoMemory;
}
// A store refused so: store_too_large or store_no_memory, as memcached's text
// and meta protocols count it (its binary protocol counts neither).
void CountStoreRefusal(ThreadStats* stats, StoreStatus status);
// The text and meta protocols' reply to it, "\r\n" included.
std::string_view StoreRefusalLine(StoreStatus status);
// A store that was not refused: cmd_set, and for a compare-and-swap
// (`compare`) cas_hits, cas_badval or cas_misses when it stored, found
// another CAS, or found no item.
void CountStore(ThreadStats* stats, StoreStatus status, bool compare);

// incr/decr (text, ma, binary): incr_hits or incr_misses, decr_hits or
// decr_misses.
void CountArithmetic(ThreadStats* stats, bool incr, bool hit);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_ACCOUNTING_H_
