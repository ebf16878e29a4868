#include "protocol/accounting.h"

namespace herdless {

ReadOptions ClassicReadOptions(const ProtocolSettings& settings, bool touch, int64_t exptime,
                               const WaitTicket* park, bool with_value, bool client_gone) {
  ReadOptions opts;
  opts.kind = ReadKind::kClassic;
  opts.flash_park = park;   // -o ext_path: a value on flash is fetched while the reader waits
  opts.value_wanted = with_value;
  opts.details = false;   // a classic reply has no TTL, access time nor frequency in it
  if (touch) {
    opts.has_touch = true;
    opts.touch_exptime = exptime;
  }
  if (with_value && !client_gone && settings.classic_stampede != ClassicStampedeMode::kOff) {
    opts.kind = ReadKind::kClassicLease;
    opts.lease.xfetch_beta = settings.xfetch_beta;
    opts.lease.refresh_ahead = settings.refresh_ahead;
    if (settings.classic_stampede == ClassicStampedeMode::kWait) opts.park = park;
  }
  return opts;
}

bool CountClassicRead(ThreadStats* stats, const ReadOptions& opts, const ReadResult& r) {
  stats->CountMissCause(r.miss_expired, r.miss_flushed);
  bool hit = r.status == ReadStatus::kHit;
  if (hit && opts.kind == ReadKind::kClassicLease) hit = !r.no_value && r.lease != LeaseVerdict::kWin;
  CountRead(stats, opts.has_touch, hit);
  return hit;
}

void CountRead(ThreadStats* stats, bool touch, bool hit) {
  if (touch) {
    stats->cmd_touch.Add();
    (hit ? stats->touch_hits : stats->touch_misses).Add();
  } else {
    stats->cmd_get.Add();
    (hit ? stats->get_hits : stats->get_misses).Add();
  }
}

void CountStoreRefusal(ThreadStats* stats, StoreStatus status) {
  (status == StoreStatus::kTooLarge ? stats->store_too_large : stats->store_no_memory).Add();
}

std::string_view StoreRefusalLine(StoreStatus status) {
  return status == StoreStatus::kTooLarge ? "SERVER_ERROR object too large for cache\r\n"
                                          : "SERVER_ERROR out of memory storing object\r\n";
}

void CountStore(ThreadStats* stats, StoreStatus status, bool compare) {
  stats->cmd_set.Add();
  if (!compare) return;
  switch (status) {
    case StoreStatus::kStored: stats->cas_hits.Add(); return;
    case StoreStatus::kExists: stats->cas_badval.Add(); return;
    case StoreStatus::kNotFound: stats->cas_misses.Add(); return;
    default: return;
  }
}

void CountArithmetic(ThreadStats* stats, bool incr, bool hit) {
  if (incr) {
    (hit ? stats->incr_hits : stats->incr_misses).Add();
  } else {
    (hit ? stats->decr_hits : stats->decr_misses).Add();
  }
}

}  // namespace herdless
