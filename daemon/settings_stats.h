// `stats settings`: memcached 1.6.18's settings in its order, then
// herdless's, each with its value now. The option table's rows write the
// settings their options set; this file knows memcached's order and the
// settings that no option sets (memcached's machinery that herdless lacks,
// and what the operator commands change at run time).
#ifndef HERDLESS_DAEMON_SETTINGS_STATS_H_
#define HERDLESS_DAEMON_SETTINGS_STATS_H_

#include "protocol/server_info.h"
#include "protocol/stat_writer.h"

namespace herdless {

class ItemStore;
struct SettingsView;

// Writes every setting of `server` (its options, verbosity, operator switches
// and prefix stats) and `store` (its memory limit and size tracking) to `w`,
// without the end marker.
void WriteSettingsStats(ServerInfo& server, const ItemStore& store, StatWriter* w);
// The same lines from a view of them (daemon/option_table.h).
void WriteSettingLines(const SettingsView& view, StatWriter* w);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_SETTINGS_STATS_H_
