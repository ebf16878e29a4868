// Metadump: memcached's `lru_crawler metadump`, one line per live item,
//
//   key=<uri-encoded key> exp=<unix time, -1 = never> la=<unix time of last access>
//   cas=<n> fetch=<yes|no> cls=<size class> size=<bytes> stale=<yes|no> lease=<yes|no>
//
// (one line, "\n"-terminated as memcached's), then "END\r\n". The first seven
// fields are memcached's; stale and lease are herdless's (docs/operations.md).
// In the mgdump format (memcached 1.6.22+'s `lru_crawler mgdump`) each line is
// `mg <key>\r\n` (`mg <base64 key> b\r\n` for a binary key), then "EN\r\n";
// the command writes its leading "OK\r\n" before the stream starts.
// MetadumpStream walks the store a few index buckets at a time
// (ItemStore::Walk: one shard lock per step, lines formatted under it into a
// scratch buffer and appended after), so a connection sends the dump as it
// is produced with a bounded amount buffered, and the store keeps serving
// everyone else. An item present during the whole dump is listed exactly once.
#ifndef HERDLESS_PROTOCOL_METADUMP_H_
#define HERDLESS_PROTOCOL_METADUMP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/reply.h"
#include "storage/item_store.h"

namespace herdless {

// memcached's lru_crawler class argument: "all", or class ids separated by
// commas (each 1..63, safe_strtoul; empty pieces skipped). Sets bit c of
// *classes for class c. False on a bad id (memcached's BADCLASS).
bool ParseCrawlerClasses(std::string_view arg, uint64_t* classes);
inline constexpr uint64_t kAllCrawlerClasses = ~uint64_t{1};   // classes 1..63

// Appends one dump line (with its "\n") for `item` to *out; `unix_offset`
// turns store seconds into Unix seconds (ItemStore::ToUnixTime(0), read once
// per dump so that every line of it uses the same).
// `with_flags` (-o compat=1.6.45): 1.6.45's `flags=<client flags> ` after size.
void AppendMetadumpLine(int64_t unix_offset, const WalkedItem& item, std::string* out,
                        bool with_flags = false);

// The line of an item in mgdump format, with its "\r\n".
void AppendMgdumpLine(const WalkedItem& item, std::string* out);

class MetadumpStream {
 public:
  enum class Format : uint8_t { kMetadump, kMetadumpWithFlags, kMgdump };
  // Dumps the items whose size class has its bit set in `classes`.
  MetadumpStream(ItemStore* store, uint64_t classes, Format format = Format::kMetadump);

  // Appends dump lines to *out until it holds at least `max_pending` bytes
  // or `max_steps` walk steps were taken, and "END\r\n" ("EN\r\n" for
  // mgdump) once the walk is over. Returns true when the dump is complete (END appended).
  bool Fill(ReplyBuffer* out, size_t max_pending, int max_steps);

  bool done() const { return done_; }
  uint64_t items() const { return items_; }

 private:
  ItemStore* store_;
  const uint64_t classes_;
  const Format format_;
  const int64_t unix_offset_;
  WalkCursor cursor_;
  std::string scratch_;   // one step's lines, formatted under the shard lock
  uint64_t items_ = 0;
  bool done_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_METADUMP_H_
