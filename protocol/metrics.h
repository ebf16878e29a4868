// Prometheus metrics: what `GET /metrics` answers (-o metrics), in the text
// exposition format (version 0.0.4), with a HELP and a TYPE line per family.
// memcached's counters carry memcached_exporter's names and labels, read from
// the same `stats`, `stats settings`, `stats items` and `stats slabs` output
// the exporter parses; herdless's own counters are `herdless_*` series, one
// per row of the counter lists (storage/store_stats.h, protocol/thread_stats.h).
// Takes the locks a `stats` takes, nothing more. Knows no sockets.
#ifndef HERDLESS_PROTOCOL_METRICS_H_
#define HERDLESS_PROTOCOL_METRICS_H_

#include <string>

#include "protocol/server_info.h"
#include "storage/item_store.h"

namespace herdless {

// The content type of WriteMetrics' output.
inline constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Appends every metric to *out.
void WriteMetrics(ItemStore* store, ServerInfo* server, std::string* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_METRICS_H_
