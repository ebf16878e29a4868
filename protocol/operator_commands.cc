// The operator console, with memcached 1.6.18's replies (proto_text.c
// process_stat, process_lru_crawler_command, process_slabs_command,
// process_extstore_command, process_watch_command).
#include "protocol/operator_commands.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <utility>
#include <span>
#include <string>
#include <string_view>

#include "protocol/cachedump.h"
#include "protocol/meta_parser.h"
#include "protocol/metadump.h"
#include "protocol/numbers.h"
#include "protocol/cluster_ring.h"
#include "protocol/foreign_log.h"
#include "protocol/stat_writer.h"
#include "protocol/stats_groups.h"
#include "protocol/watch.h"

namespace herdless {

namespace {

// metadump and watch over UDP. memcached 1.6.18 starts the stream anyway and
// writes it to the unconnected UDP socket, where it is lost: the client gets
// no reply at all. herdless says why instead.
constexpr std::string_view kNoStreamOverUdp = "SERVER_ERROR streams not supported over UDP\r\n";
// memcached's MAX_NUMBER_OF_SLAB_CLASSES: class ids a command may name.
constexpr uint32_t kMaxSlabClassIds = 64;

// The words of a command's arguments (memcached's tokens after the command).
struct Words {
  static constexpr int kMax = 8;
  std::string_view word[kMax];
  int count = 0;
  explicit Words(std::string_view args) {
    WordIterator it(args);
    std::string_view w;
    while (it.Next(&w)) {
      if (count == kMax) {
        count = kMax + 1;   // more than any operator command takes
        break;
      }
      word[count++] = w;
    }
  }
};

// The word of `words` that `given` names: itself, or with `prefix` (1.6.45)
// the first word it is a prefix of.
std::string_view NamedWord(std::string_view given, std::span<const std::string_view> words,
                           bool prefix) {
  for (std::string_view word : words) {
    if (WordMatches(given, word, prefix)) return word;
  }
  return given;
}

// First space-separated word of `args` and what follows it.
std::string_view FirstWord(std::string_view args, std::string_view* rest) {
  WordIterator words(args);
  std::string_view word;
  if (!words.Next(&word)) word = {};
  const size_t end = word.empty() ? args.size() : (word.data() - args.data()) + word.size();
  *rest = args.substr(end);
  return word;
}

// stats detail on|off|dump (process_stats_detail); extra words are ignored.
// 1.6.45 refuses it with -X, as it refuses cachedump.
void StatsDetail(ServerInfo* server, std::string_view args, ReplyBuffer* out) {
  const bool latest = server->Settings().latest();
  if (latest && !server->Settings().dump_enabled) {
    out->Append("CLIENT_ERROR stats detail not allowed\r\n");
    return;
  }
  std::string_view ignored;
  const std::string_view mode = FirstWord(args, &ignored);
  PrefixStats& prefixes = server->prefix_stats();
  if (WordMatches(mode, "on", latest) || WordMatches(mode, "off", latest)) {
    prefixes.set_enabled(WordMatches(mode, "on", latest));
    out->Append("OK\r\n");
  } else if (WordMatches(mode, "dump", latest)) {
    out->Append(prefixes.Dump());
  } else {
    out->Append("CLIENT_ERROR usage: stats detail on|off|dump\r\n");
  }
}

// stats cachedump <class> <limit> (process_stat): memcached's checks in its
// order; extra words are ignored. Class ids 0 and 40..63 are valid and empty.
void StatsCachedump(ItemStore* store, ServerInfo* server, std::string_view args,
                    ReplyBuffer* out) {
  if (!server->Settings().dump_enabled) {
    out->Append("CLIENT_ERROR stats cachedump not allowed\r\n");
    return;
  }
  const Words w(args);
  if (w.count < 2) {
    out->Append("CLIENT_ERROR bad command line\r\n");
    return;
  }
  uint32_t id, limit;
  const bool latest = server->Settings().latest();
  if (!ParseUint32As(w.word[0], latest, &id) || !ParseUint32As(w.word[1], latest, &limit)) {
    out->Append("CLIENT_ERROR bad command line format\r\n");
    return;
  }
  if (id >= kMaxSlabClassIds) {
    out->Append("CLIENT_ERROR Illegal slab id\r\n");
    return;
  }
  std::string reply;
  Cachedump(store, static_cast<int>(id), limit, &reply);
  out->Append(reply);
}

// lru_crawler metadump|mgdump <classes|all|hash>: the connection becomes a
// stream of the dump. mgdump (1.6.22+) has its own refusals, and its "OK".
void LruCrawlerDump(ServerInfo* server, std::string_view kind, std::string_view arg,
                    bool pipelined, bool datagram, ReplyBuffer* out, ProcessOutcome* outcome) {
  const bool mgdump = kind == "mgdump";
  if (!server->Settings().dump_enabled) {
    out->Append(mgdump ? "ERROR key dump not allowed\r\n" : "ERROR metadump not allowed\r\n");
    return;
  }
  if (pipelined) {
    out->Append(mgdump ? "ERROR cannot pipeline other commands before mgdump\r\n"
                       : "ERROR cannot pipeline other commands before metadump\r\n");
    return;
  }
  uint64_t classes = kAllCrawlerClasses;
  // "hash" walks the hash table in memcached: herdless's dump always does.
  if (arg != "hash" && !ParseCrawlerClasses(arg, &classes)) {
    out->Append("BADCLASS invalid class id\r\n");
    return;
  }
  if (datagram) {
    out->Append(kNoStreamOverUdp);
    return;
  }
  // 1.6.45 starts both dumps with OK (1.6.18's metadump does not).
  const bool latest = server->Settings().latest();
  if (mgdump || latest) out->Append("OK\r\n");
  outcome->stream = mgdump ? ProcessOutcome::Stream::kMgdump : ProcessOutcome::Stream::kMetadump;
  outcome->stream_arg = classes;
  outcome->stream_latest = latest;
}

}  // namespace

// lru_crawler <crawl|metadump|mgdump|tocrawl|sleep> <arg> | <enable|disable>,
// with memcached's replies (process_lru_crawler_command). crawl runs in the
// background (ServerInfo::StartCrawl); metadump and mgdump turn the
// connection into a stream (ProcessOutcome::stream).
void LruCrawlerCommand(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
                       ReplyBuffer* out, ProcessOutcome* outcome) {
  const Words w(req.args);
  OperatorSettings& ops = server->operators();
  const bool enabled = ops.lru_crawler.load(std::memory_order_relaxed);
  constexpr std::string_view kWithArgument[] = {"crawl", "metadump", "mgdump", "tocrawl", "sleep"};
  constexpr std::string_view kAlone[] = {"enable", "disable"};
  // The subcommand (1.6.45 takes a prefix of it, the first in its order).
  const bool latest = server->Settings().latest();
  std::string_view sub;
  if (w.count == 2) sub = NamedWord(w.word[0], kWithArgument, latest);
  if (w.count == 1) sub = NamedWord(w.word[0], kAlone, latest);
  if (w.count == 2 && (sub == "crawl" || sub == "metadump" || sub == "mgdump")) {
    if (!enabled) {
      out->Append("CLIENT_ERROR lru crawler disabled\r\n");
      return;
    }
    if (sub != "crawl") {
      LruCrawlerDump(server, sub, w.word[1], pipelined, datagram, out, outcome);
      return;
    }
    uint64_t classes = 0;
    if (w.word[1] == "hash") {
      // memcached walks the hash table only for a dump: a crawl of it fails
      // (lru_crawler_start's -2), unless a crawl is running.
      out->Append(server->CrawlRunning() ? "BUSY currently processing crawler request\r\n"
                                         : "ERROR an unknown error happened\r\n");
      return;
    }
    if (!ParseCrawlerClasses(w.word[1], &classes)) {
      out->Append("BADCLASS invalid class id\r\n");
      return;
    }
    switch (server->StartCrawl(classes, ops.lru_crawler_tocrawl.load(std::memory_order_relaxed))) {
      case CrawlStart::kOk: out->Append("OK\r\n"); return;
      case CrawlStart::kRunning: out->Append("BUSY currently processing crawler request\r\n"); return;
      case CrawlStart::kError: break;
    }
    out->Append("ERROR an unknown error happened\r\n");
    return;
  }
  if (w.count == 2 && (sub == "tocrawl" || sub == "sleep")) {
    uint32_t n;
    if (!ParseUint32As(w.word[1], latest, &n)) {
      out->Append("CLIENT_ERROR bad command line format\r\n");
      return;
    }
    if (sub == "tocrawl") {
      ops.lru_crawler_tocrawl.store(n, std::memory_order_relaxed);
    } else if (n > 1000000) {
      out->Append("CLIENT_ERROR sleep must be one second or less\r\n");
      return;
    } else {
      ops.lru_crawler_sleep.store(n, std::memory_order_relaxed);
    }
    out->Append("OK\r\n");
    return;
  }
  if (w.count == 1 && (sub == "enable" || sub == "disable")) {
    // memcached fails to start a running crawler thread; stopping a stopped one is OK.
    const bool on = sub == "enable";
    if (ops.lru_crawler.exchange(on, std::memory_order_relaxed) && on) {
      out->Append("ERROR failed to start lru crawler thread\r\n");
    } else {
      out->Append("OK\r\n");
    }
    return;
  }
  out->Append("ERROR\r\n");
}

// slabs automove <0|1|2> | automove ratio|freeratio <r> | automove window
// <3..1800> | reassign <src> <dst>
// (process_slabs_command). herdless has no slabs to move: every segment
// returns to one free pool that every class takes from, which is what
// automove asks for; the setting is kept and shown. reassign is answered as
// memcached answers a source class with no spare page, which is always true
// here (a class never holds a free segment).
void SlabsCommand(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  const Words w(req.args);
  OperatorSettings& ops = server->operators();
  // 1.6.45 takes a prefix of each word, and reads numbers with its token readers.
  const bool prefix = server->Settings().latest();
  auto is = [&](int i, std::string_view word) { return WordMatches(w.word[i], word, prefix); };
  const bool noreply = w.count > 0 && w.count <= Words::kMax && w.word[w.count - 1] == "noreply";
  auto reply = [&](std::string_view line) {
    if (!noreply) out->Append(line);
  };
  if (w.count == 3 && is(0, "reassign")) {
    int32_t src, dst;
    if (!server->Settings().machinery.slab_reassign) {   // -o no_modern
      out->Append("CLIENT_ERROR slab reassignment disabled\r\n");
    } else if (!ParseInt32As(w.word[1], prefix, &src) || !ParseInt32As(w.word[2], prefix, &dst)) {
      out->Append("CLIENT_ERROR bad command line format\r\n");
    } else if (src == dst) {
      out->Append("SAME src and dst class are identical\r\n");
    } else if (src < -1 || src > kMemcachedClasses || dst < 0 || dst > kMemcachedClasses) {
      out->Append("BADCLASS invalid src or dst class id\r\n");
    } else {
      out->Append("NOSPARE source class has no spare pages\r\n");
    }
    return;
  }
  if (w.count >= 2 && w.count <= Words::kMax && is(0, "automove")) {
    if (is(1, "ratio") || is(1, "freeratio")) {
      double ratio;
      if (w.count < 3 || !ParseStrtodAs(w.word[2], prefix, &ratio)) {
        reply("ERROR\r\n");
        return;
      }
      (is(1, "ratio") ? ops.slab_automove_ratio : ops.slab_automove_freeratio)
          .store(ratio, std::memory_order_relaxed);
    } else if (is(1, "window")) {   // 1.6.20+
      uint32_t window;
      if (w.count < 3 || !ParseUint32As(w.word[2], prefix, &window)) {
        reply("CLIENT_ERROR bad command line format\r\n");
        return;
      }
      if (window < 3 || window > 1800) {
        reply("CLIENT_ERROR automove window too low or too high\r\n");
        return;
      }
      ops.slab_automove_window.store(window, std::memory_order_relaxed);
    } else {
      uint32_t level;
      if (!ParseUint32As(w.word[1], prefix, &level)) {
        reply("CLIENT_ERROR bad command line format\r\n");
        return;
      }
      if (level > 2) {
        reply("ERROR\r\n");
        return;
      }
      ops.slab_automove.store(level, std::memory_order_relaxed);
    }
    reply("OK\r\n");
    return;
  }
  out->Append("ERROR\r\n");
}

// lru tune <hot pct> <warm pct> <hot max factor> <warm max factor> | mode
// flat|segmented | temp_ttl <ttl> (process_lru_command), memcached's checks
// and replies in its order; extra words are ignored. mode and temp_ttl need
// memcached's LRU maintainer (gone with -o no_lru_maintainer or no_modern).
// 1.6.18 counts a trailing noreply among the words and hides every reply;
// 1.6.45 takes a prefix of each word (its parser took the noreply off).
void LruCommand(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  const Words w(req.args);
  OperatorSettings& ops = server->operators();
  const bool latest = server->Settings().latest();
  const bool maintainer = server->Settings().machinery.lru_maintainer;
  const bool noreply =
      !latest && w.count > 0 && w.count <= Words::kMax && w.word[w.count - 1] == "noreply";
  auto reply = [&](std::string_view line) {
    if (!noreply) out->Append(line);
  };
  auto is = [&](int i, std::string_view word) {
    return w.count > i && WordMatches(w.word[i], word, latest);
  };
  if (is(0, "tune") && w.count >= 5) {
    uint32_t hot, warm;
    double hot_factor, warm_factor;
    if (!ParseUint32As(w.word[1], latest, &hot) || !ParseUint32As(w.word[2], latest, &warm) ||
        !ParseStrtodAs(w.word[3], latest, &hot_factor) ||
        !ParseStrtodAs(w.word[4], latest, &warm_factor)) {
      reply("ERROR\r\n");
    } else if (hot + warm > 80) {   // memcached's unsigned sum
      reply("ERROR hot and warm pcts must not exceed 80\r\n");
    } else if (warm_factor <= 0 || hot_factor <= 0) {
      reply("ERROR hot/warm age factors must be greater than 0\r\n");
    } else {
      ops.hot_lru_pct.store(hot, std::memory_order_relaxed);
      ops.warm_lru_pct.store(warm, std::memory_order_relaxed);
      ops.hot_max_factor.store(hot_factor, std::memory_order_relaxed);
      ops.warm_max_factor.store(warm_factor, std::memory_order_relaxed);
      reply("OK\r\n");
    }
  } else if (is(0, "mode") && w.count >= 2 && maintainer) {
    if (is(1, "flat") || is(1, "segmented")) {
      ops.lru_segmented.store(is(1, "segmented"), std::memory_order_relaxed);
      reply("OK\r\n");
    } else {
      reply("ERROR\r\n");
    }
  } else if (is(0, "temp_ttl") && w.count >= 2 && maintainer) {
    int32_t ttl;
    if (!ParseInt32As(w.word[1], latest, &ttl)) {
      reply("ERROR\r\n");
      return;
    }
    ops.temp_lru.store(ttl >= 0, std::memory_order_relaxed);
    if (ttl >= 0) ops.temporary_ttl.store(ttl, std::memory_order_relaxed);
    reply("OK\r\n");
  } else {
    reply("ERROR\r\n");
  }
}

// extstore <setting> <value>: memcached's process_extstore_command, in its
// order (1.6.45 takes a prefix of the setting's name, so "max" is max_sleep).
// It answers the same with or without ext_path.
void ExtstoreCommand(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  const Words w(req.args);
  if (w.count == 0) {   // WANT_TOKENS_MIN, before noreply is looked at
    out->Append("ERROR\r\n");
    return;
  }
  const bool latest = server->Settings().latest();
  FlashTunables& live = server->operators().flash;
  using Field = std::atomic<uint32_t> FlashTunables::*;
  static constexpr std::pair<std::string_view, Field> kNumbers[] = {
      {"item_size", &FlashTunables::item_size},         {"item_age", &FlashTunables::item_age},
      {"low_ttl", &FlashTunables::low_ttl},             {"recache_rate", &FlashTunables::recache_rate},
      {"compact_under", &FlashTunables::compact_under}, {"drop_under", &FlashTunables::drop_under},
      {"max_sleep", &FlashTunables::max_sleep_us}};
  auto is = [&](std::string_view name) { return WordMatches(w.word[0], name, latest); };
  bool ok = false;
  uint32_t n = 0;
  if (w.count < 2) {
    ok = false;
  } else if (is("free_memchunks") && w.count > 2) {   // deprecated: checked, then ignored
    uint32_t limit = 0;
    ok = ParseUint32As(w.word[1], latest, &n) && ParseUint32As(w.word[2], latest, &limit) &&
         n < kMaxSlabClassIds;
  } else if (auto it = std::find_if(std::begin(kNumbers), std::end(kNumbers),
                                    [&](const auto& row) { return is(row.first); });
             it != std::end(kNumbers)) {
    ok = ParseUint32As(w.word[1], latest, &n);
    // 1.6.18's safe_strtoul zeroes the setting before it fails.
    if (ok || !latest) (live.*(it->second)).store(ok ? n : 0, std::memory_order_relaxed);
  } else if (is("max_frag")) {
    double frag = 0;
    ok = ParseStrtodAs(w.word[1], latest, &frag);
    live.max_frag.store(ok ? frag : 0, std::memory_order_relaxed);   // safe_strtod's zero, both versions
  } else if (is("drop_unread")) {
    ok = ParseUint32As(w.word[1], latest, &n);
    if (ok) live.drop_unread.store(n != 0, std::memory_order_relaxed);
  }
  if (!req.noreply) out->Append(ok ? "OK\r\n" : "ERROR\r\n");
}

// watch [kinds]: memcached's process_watch_command.
// Taking a foreign list clears it, so not anyone may: only a connection from
// a ring member's address, or over a unix socket (its file mode guards it).
// The trade: any process on a member's host passes, and a member that
// connects from an address the ring does not list is refused (its return then
// keeps its snapshot's copies of the keys changed while it was away).
static bool FromRingMember(const ClusterRing& ring, int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  if (peer.ss_family == AF_UNIX) return true;
  char text[INET6_ADDRSTRLEN] = "";
  const void* where = peer.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr)
                                                 : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr);
  if (inet_ntop(peer.ss_family, where, text, sizeof text) == nullptr) return false;
  std::string_view numeric = text;
  if (numeric.starts_with("::ffff:") && numeric.find('.') != std::string_view::npos) numeric.remove_prefix(7);
  return ring.IsMemberAddress(numeric);
}

void RingCommand(ServerInfo* server, ItemStore* store, const Request& req, int client_fd, ReplyBuffer* out) {
  std::string_view args = req.args;
  const auto next_word = [&args] {
    while (!args.empty() && args.front() == ' ') args.remove_prefix(1);
    const size_t end = std::min(args.find(' '), args.size());
    const std::string_view w = args.substr(0, end);
    args.remove_prefix(end);
    return w;
  };
  const std::string_view sub = next_word();
  if (sub == "forget") {
    // A warm peer's invalidation (daemon/warm_invalidations.h), with or
    // without a ring: a delete that is no change of this node's (the peer
    // made it), so not logged as foreign nor sent on to this node's own
    // warm peers (two nodes warming from each other would echo it forever).
    const std::string_view key = next_word();
    if (key.empty() || !next_word().empty()) {
      out->Append("CLIENT_ERROR bad command line format\r\n");
      return;
    }
    DeleteRequest del;
    del.key = key;
    del.client = false;
    out->Append(store->Delete(del) == DeleteStatus::kDeleted ? "DELETED\r\n" : "NOT_FOUND\r\n");
    return;
  }
  const ClusterRing* ring = server->ring();
  if (ring == nullptr) {
    out->Append("SERVER_ERROR no ring (-o ring)\r\n");
    return;
  }
  const std::vector<RingServer>& servers = ring->pool().servers;
  if (sub.empty()) {
    for (size_t i = 0; i < servers.size(); i++) {
      out->Append("SERVER " + servers[i].listed + " " + std::to_string(servers[i].weight) + " " + servers[i].name +
                  (static_cast<int>(i) == ring->self() ? " self" : "") + "\r\n");
    }
  } else if (sub == "owner") {
    for (std::string_view key = next_word(); !key.empty(); key = next_word()) {
      out->Append("OWNER " + std::string(key) + " " + servers[ring->Owner(key)].listed + "\r\n");
    }
  } else if (sub == "foreign") {
    // The keys changed here for that server while it was away, handed over once.
    const std::string_view who = next_word();
    int owner = -1;
    for (size_t i = 0; i < servers.size(); i++) {
      if (servers[i].listed == who || servers[i].name == who) owner = static_cast<int>(i);
    }
    if (owner < 0 || server->foreign_log() == nullptr) {
      out->Append("CLIENT_ERROR no such server in the ring\r\n");
      return;
    }
    if (!FromRingMember(*ring, client_fd)) {
      out->Append("CLIENT_ERROR not a ring member\r\n");
      return;
    }
    bool overflowed = false;
    for (const std::string& key : server->foreign_log()->Take(owner, &overflowed)) {
      out->Append("KEY " + key + "\r\n");
    }
    if (overflowed) out->Append("OVERFLOW\r\n");
  } else {
    out->Append("CLIENT_ERROR bad command line format\r\n");
    return;
  }
  out->Append("END\r\n");
}

void WarmCommand(ServerInfo* server, const Request& req, ReplyBuffer* out) {
  if (!server->Settings().warm_enabled()) {
    out->Append("SERVER_ERROR no warm peers (-o warm_peer or -o ring)\r\n");
  } else if (req.args == "on" || req.args == "off") {
    server->SetWarmStopped(req.args == "off");
    out->Append("OK\r\n");
  } else {
    out->Append("CLIENT_ERROR bad command line format\r\n");
  }
}

void WatchCommand(ServerInfo* server, const Request& req, bool pipelined, bool datagram,
                  ReplyBuffer* out, ProcessOutcome* outcome) {
  if (!server->Settings().watch_enabled) {
    out->Append("CLIENT_ERROR watch commands not allowed\r\n");
    return;
  }
  if (pipelined) {
    out->Append("ERROR cannot pipeline other commands before watch\r\n");
    return;
  }
  uint32_t kinds;
  if (!ParseWatchKinds(req.args, &kinds, server->Settings().latest())) {
    out->Append("ERROR\r\n");
    return;
  }
  if (datagram) {
    out->Append(kNoStreamOverUdp);
    return;
  }
  outcome->stream = ProcessOutcome::Stream::kWatch;
  outcome->stream_arg = kinds;
}

// stats [<group>] (process_stat): reset, detail, cachedump, conns, or one of
// stats_groups.h's groups; any other word is ERROR.
void StatsCommand(ItemStore* store, ServerInfo* server, const Request& req, ReplyBuffer* out) {
  std::string_view rest;
  std::string_view sub = FirstWord(req.args, &rest);
  // 1.6.45 takes a prefix of its own subcommands (`stats s` is settings),
  // not of the engine's groups (items, slabs, sizes).
  constexpr std::string_view kSubcommands[] = {"reset", "detail", "settings", "cachedump", "conns"};
  sub = NamedWord(sub, kSubcommands, server->Settings().latest());
  StatWriter w(out);
  if (sub == "reset") {
    ResetStats(store, server);
    out->Append("RESET\r\n");
  } else if (sub == "detail") {
    StatsDetail(server, rest, out);
  } else if (sub == "cachedump") {
    StatsCachedump(store, server, rest, out);
  } else if (sub == "conns") {
    ConnsStats(server, &w);
    w.End();
  } else if (!WriteStatsGroup(store, server, sub, &w)) {
    out->Append("ERROR\r\n");
  }
}

}  // namespace herdless
