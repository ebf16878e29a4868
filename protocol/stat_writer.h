// StatWriter: writes `stats` output, one name/value pair at a time, in the
// text protocol's form ("STAT <name> <value>\r\n" lines, "END\r\n") or the
// binary protocol's (one Stat response packet per pair with the request's
// opaque, an empty packet to end), as memcached's append_stats does, or
// into a list of pairs (the Prometheus endpoint reads `stats` that way). The
// stats groups are written once, for every form.
#ifndef HERDLESS_PROTOCOL_STAT_WRITER_H_
#define HERDLESS_PROTOCOL_STAT_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/reply.h"

namespace herdless {

// `stats` as name/value pairs, in the order written.
using StatPairs = std::vector<std::pair<std::string, std::string>>;

class StatWriter {
 public:
  // Text form.
  explicit StatWriter(ReplyBuffer* out) : out_(out) {}
  // Binary form: packets for opcode Stat echoing `opaque` (raw bytes).
  StatWriter(ReplyBuffer* out, uint32_t opaque) : out_(out), binary_(true), opaque_(opaque) {}
  // Pairs form: appends each pair to *pairs; End() writes nothing.
  explicit StatWriter(StatPairs* pairs) : pairs_(pairs) {}

  void Add(std::string_view name, uint64_t value);
  void AddSigned(std::string_view name, int64_t value);
  void Add(std::string_view name, std::string_view value);
  void Add(std::string_view name, const char* value) { Add(name, std::string_view(value)); }
  void AddBool(std::string_view name, bool value) { Add(name, value ? "yes" : "no"); }
  // printf-style "%.<decimals>f", as memcached prints factors and rusage.
  void AddFixed(std::string_view name, double value, int decimals);
  // "END\r\n", or the binary protocol's empty terminating packet.
  void End();

  bool binary() const { return binary_; }

 private:
  ReplyBuffer* out_ = nullptr;
  StatPairs* pairs_ = nullptr;
  bool binary_ = false;
  uint32_t opaque_ = 0;
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_STAT_WRITER_H_
