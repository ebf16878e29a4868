#include "protocol/accounting.h"

namespace herdless {

ReadOptions ClassicReadOptions(const ProtocolSettings& settings, bool touch, int64_t exptime,
                               const WaitTicket* park, bool with_value) {
  ReadOptions opts;
  opts.kind = ReadKind::kClassic;
  if (touch) {
    opts.has_touch = true;
    opts.touch_exptime = exptime;
  }
  if (with_value && settings.classic_stampede != ClassicStampedeMode::kOff) {
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
  if (opts.has_touch) {
    stats->cmd_touch.Add();
    (hit ? stats->touch_hits : stats->touch_misses).Add();
  } else {
    stats->cmd_get.Add();
    (hit ? stats->get_hits : stats->get_misses).Add();
  }
  return hit;
}

}  // namespace herdless
