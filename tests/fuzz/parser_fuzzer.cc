// libFuzzer target for ParseRequest. The first two input bytes pick the
// limits (and compat=1.6.45's parse) and how the rest of the input is cut into chunks; the rest is a
// client's byte stream. It is fed twice, whole and chunk by chunk, the way a
// connection would (append, parse until kNeedMore, drop consumed and
// swallowed bytes). Checked:
//   - kNeedMore consumes nothing; other results consume 1..len bytes;
//   - every view in the Request points into the parsed bytes (or decoded_key);
//   - the chunked run answers exactly as the whole run does, except that it
//     may close early on an over-long line (as memcached may, depending on
//     how the bytes arrive);
//   - the parse without ParseRequest's shortcuts answers the same, and
//     leaves the same request;
//   - ASan/UBSan: no read outside [buf, buf+len) — each parse gets its own
//     exactly-sized heap copy.
// Build and run by hand (not part of `make`):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/parser_fuzzer.cc protocol/numbers.cc protocol/key.cc \
//     protocol/meta_parser.cc protocol/text_parser.cc -o /tmp/parser_fuzzer
//   mkdir -p /tmp/parser_corpus
//   /tmp/parser_fuzzer -max_total_time=60 /tmp/parser_corpus tests/fuzz/corpus/parser
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "protocol/request.h"
#include "protocol/text_parser.h"

namespace herdless {
namespace {

size_t FuzzMaxValue(const void* ctx, size_t key_len) {
  const size_t limit = *static_cast<const size_t*>(ctx);
  return key_len >= limit ? 0 : limit - key_len;
}

struct Outcome {
  ParseStatus status;
  size_t consumed;
  uint64_t swallow;
  std::string error;
  bool suppress;
  Command command;
  std::string key, keys, value, args;
  bool noreply, too_large;
  uint8_t meta_count;

  bool operator==(const Outcome&) const = default;
};

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Inside(std::string_view v, const char* lo, const char* hi) {
  return v.empty() || (v.data() >= lo && v.data() + v.size() <= hi);
}

void CheckViews(const Request& r, const char* buf, size_t consumed) {
  const char* end = buf + consumed;
  Check(Inside(r.keys, buf, end));
  Check(Inside(r.value, buf, end));
  Check(Inside(r.args, buf, end));
  Check(Inside(r.meta_args.O, buf, end));
  if (r.key_was_base64) {
    Check(r.key.data() == r.decoded_key && r.key.size() == r.decoded_key_length);
  } else {
    Check(Inside(r.key, buf, end));
  }
  Check(r.meta.count <= kMaxMetaFlags);
  for (int i = 0; i < r.meta.count; ++i) Check(Inside(r.meta.list[i].token, buf, end));
  if (!r.value_too_large) Check(r.value.size() == r.value_length || r.value.empty());
}

// The same bytes parsed without the shortcuts (into a request of its own)
// give the same result and the same request, views pointing at the same bytes.
void CheckSameAsGeneral(const ParseResult& r, const Request& req, const char* buf, size_t len,
                        const ParserLimits& limits) {
  static Request* general = new Request();
  const ParseResult g = ParseRequest(buf, len, limits, general, /*shortcuts=*/false);
  Check(g.status == r.status && g.consumed == r.consumed && g.swallow == r.swallow && g.error == r.error &&
        g.suppress == r.suppress);
  if (r.status != ParseStatus::kRequest) return;
  auto same = [](std::string_view a, std::string_view b) { return a.data() == b.data() && a.size() == b.size(); };
  Check(general->command == req.command && general->noreply == req.noreply &&
        general->latest == req.latest && same(general->value, req.value) &&
        same(general->args, req.args) && general->client_flags == req.client_flags &&
        general->exptime == req.exptime && general->cas_unique == req.cas_unique &&
        general->value_length == req.value_length && general->value_too_large == req.value_too_large &&
        general->delta == req.delta && general->has_number == req.has_number && general->number == req.number &&
        general->meta.count == req.meta.count && general->meta.present == req.meta.present &&
        general->key_was_base64 == req.key_was_base64);
  Check(same(general->keys, req.keys));
  Check(req.key_was_base64 ? general->key == req.key : same(general->key, req.key));
}

// Feeds `stream` in chunks of the given sizes (cycled); returns the outcomes
// and whether the run ended on kClose.
std::vector<Outcome> Run(std::string_view stream, const std::vector<size_t>& chunks,
                         const ParserLimits& limits, Request* req, bool* closed) {
  std::vector<Outcome> outcomes;
  std::string buffer;
  uint64_t pending_swallow = 0;
  size_t pos = 0;
  size_t chunk_index = 0;
  *closed = false;
  while (pos < stream.size()) {
    size_t n = std::min(chunks[chunk_index++ % chunks.size()], stream.size() - pos);
    std::string_view chunk = stream.substr(pos, n);
    pos += n;
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(pending_swallow, chunk.size()));
    pending_swallow -= skip;
    buffer.append(chunk.substr(skip));
    for (;;) {
      const size_t len = buffer.size();
      std::unique_ptr<char[]> copy(new char[len == 0 ? 1 : len]);
      std::memcpy(copy.get(), buffer.data(), len);
      const ParseResult r = ParseRequest(copy.get(), len, limits, req);
      CheckSameAsGeneral(r, *req, copy.get(), len, limits);
      if (r.status == ParseStatus::kNeedMore) {
        Check(r.consumed == 0 && r.swallow == 0);
        break;
      }
      Outcome o{r.status, r.consumed, r.swallow, std::string(r.error), r.suppress,
                Command::kGet, "", "", "", "", false, false, 0};
      if (r.status == ParseStatus::kClose) {
        outcomes.push_back(o);
        *closed = true;
        return outcomes;
      }
      Check(r.consumed >= 1 && r.consumed <= len);
      if (r.status == ParseStatus::kError) {
        Check(!r.error.empty());
      } else {
        CheckViews(*req, copy.get(), r.consumed);
        o.command = req->command;
        o.key = std::string(req->key);
        o.keys = std::string(req->keys);
        o.value = std::string(req->value);
        o.args = std::string(req->args);
        o.noreply = req->noreply;
        o.too_large = req->value_too_large;
        o.meta_count = req->meta.count;
      }
      outcomes.push_back(o);
      buffer.erase(0, r.consumed);
      const size_t drop = static_cast<size_t>(std::min<uint64_t>(r.swallow, buffer.size()));
      buffer.erase(0, drop);
      pending_swallow = r.swallow - drop;
    }
  }
  return outcomes;
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size < 2) return 0;
  const uint32_t seed = data[0] | (uint32_t{data[1]} << 8);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  size_t max_value = 8 + (seed & 0x7f);
  ParserLimits limits;
  limits.max_value_length = &FuzzMaxValue;
  limits.ctx = &max_value;
  limits.max_line_length = (seed & 0x100) ? 2048 : 24 + ((seed >> 9) & 0x3f);
  limits.latest = (seed & 0x80) != 0;   // -o compat=1.6.45's parse

  std::vector<size_t> chunks;
  uint32_t x = seed * 2654435761u + 1;
  for (int i = 0; i < 16; ++i) {
    x = x * 1103515245u + 12345u;
    chunks.push_back(1 + (x >> 16) % (1 + (seed >> 12) * 9));
  }

  static Request* req = new Request();
  bool whole_closed, split_closed;
  const std::vector<Outcome> whole = Run(stream, {stream.size()}, limits, req, &whole_closed);
  const std::vector<Outcome> split = Run(stream, chunks, limits, req, &split_closed);

  if (split_closed) {
    // The chunked run may hang up earlier, on a line whose '\n' had not come;
    // everything before agrees with the whole run.
    for (size_t i = 0; i + 1 < split.size(); ++i) Check(i < whole.size() && split[i] == whole[i]);
  } else {
    Check(split == whole);
  }
  return 0;
}
