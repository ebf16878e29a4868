// The operator console of the text protocol: `stats` with its sub-commands
// (reset, detail, cachedump, conns, and stats_groups.h's groups),
// lru_crawler, slabs, lru, extstore and watch, with memcached 1.6.18's replies
// (docs/operations.md). A command's arguments are the words in
// Request::args. Commands that turn the connection into a stream
// (lru_crawler metadump, watch) only say so in ProcessOutcome::stream; the
// connection runs the stream. They refuse to start one when `pipelined`
// (replies of earlier requests of this pass are pending: a stream must start
// the connection's output) or over a `datagram` socket.
#ifndef HERDLESS_PROTOCOL_OPERATOR_COMMANDS_H_
#define HERDLESS_PROTOCOL_OPERATOR_COMMANDS_H_

#include "protocol/reply.h"
#include "protocol/request.h"
#include "protocol/request_loop.h"
#include "protocol/server_info.h"
#include "storage/item_store.h"

namespace herdless {

void StatsCommand(ItemStore* store, ServerInfo* server, const Request& req, ReplyBuffer* out);
void LruCrawlerCommand(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
                       ReplyBuffer* out, ProcessOutcome* outcome);
void SlabsCommand(ServerInfo* server, const Request& req, ReplyBuffer* out);
// lru tune|mode|temp_ttl: memcached's segmented-LRU settings, kept and shown.
void LruCommand(ServerInfo* server, const Request& req, ReplyBuffer* out);
// extstore item_size|item_age|low_ttl|recache_rate|compact_under|drop_under|
// max_sleep|max_frag|drop_unread <value>: the flash tier's run-time settings
// (OperatorSettings::flash); free_memchunks <class> <limit> is checked and ignored.
void ExtstoreCommand(ServerInfo* server, const Request& req, ReplyBuffer* out);
// ring (herdless, -o ring): the pool's servers; `ring owner <key>...` the owner of each key;
// `ring foreign <server>` (from a ring member only) its foreign list; `ring forget <key>` (also
// without a ring) a warm peer's invalidation: a delete that is no client change here. `client_fd` is the
// connection's descriptor (-1 for a datagram).
void RingCommand(ServerInfo* server, ItemStore* store, const Request& req, int client_fd, ReplyBuffer* out);
// warm on|off (herdless): resume or stop warm-up from the peers now.
void WarmCommand(ServerInfo* server, const Request& req, ReplyBuffer* out);
void WatchCommand(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
                  ReplyBuffer* out, ProcessOutcome* outcome);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_OPERATOR_COMMANDS_H_
