// Stats groups: what `stats` and `stats <group>` print, in memcached 1.6.18's
// names and order (memcached.c server_stats, do_item_stats, do_slabs_stats,
// item_stats_sizes; `stats settings` is the daemon's, through
// ServerInfo::WriteSettings), for the text and the binary protocol alike.
// Writers only: which words pick a group is each protocol's business.
#ifndef HERDLESS_PROTOCOL_STATS_GROUPS_H_
#define HERDLESS_PROTOCOL_STATS_GROUPS_H_

#include <string_view>

#include "protocol/server_info.h"
#include "protocol/stat_writer.h"
#include "storage/item_store.h"

namespace herdless {

// What `version` says (memcached's VERSION, marked as herdless), and the
// `version` stat: the memcached version -o compat chose.
inline constexpr std::string_view kServerVersion = "1.6.18-herdless";
inline constexpr std::string_view kLatestServerVersion = "1.6.45-herdless";
inline std::string_view ServerVersion(const ProtocolSettings& s) {
  return s.latest() ? kLatestServerVersion : kServerVersion;
}

// `stats <group>` for both protocols: "" (the general stats), settings, items,
// slabs, sizes, sizes_enable, sizes_disable, with the end marker where
// memcached writes one. False for a group it does not know.
bool WriteStatsGroup(ItemStore* store, ServerInfo* server, std::string_view group,
                     StatWriter* w);

// `stats conns` (text protocol only, as in memcached): one block per
// connection, without the end marker.
void ConnsStats(ServerInfo* server, StatWriter* w);

// `stats reset`: the workers' counters, the store's, and the per-prefix
// stats (memcached's stats_reset clears them too).
void ResetStats(ItemStore* store, ServerInfo* server);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_STATS_GROUPS_H_
