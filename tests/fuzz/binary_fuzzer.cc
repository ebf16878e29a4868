// libFuzzer target for ParseBinaryRequest. The first input byte picks the
// value limit and how the rest is cut into chunks, the second is unused (the
// seeds are shared with executor_fuzzer.cc, which reads two); the rest is a
// binary client's byte stream. It is fed twice, whole and chunk by chunk, the way a
// connection would (append, parse until kNeedMore, drop consumed and
// swallowed bytes, stop at a close). Checked:
//   - kNeedMore consumes nothing; other results consume at least a header
//     and never more than the buffer;
//   - key and value lie inside the parsed bytes, with the lengths the header
//     declares (key <= 250 bytes), and a value is present unless too large;
//   - the chunked run answers exactly as the whole run does;
//   - ASan/UBSan: no read outside [buf, buf+len): each parse gets its own
//     exactly-sized heap copy.
// Built and run by scripts/fuzz.sh (target "binary").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "protocol/binary_parser.h"

namespace herdless {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

size_t FuzzMaxValue(const void* ctx, size_t) { return *static_cast<const size_t*>(ctx); }

struct Outcome {
  ParseStatus status;
  size_t consumed;
  uint64_t swallow;
  uint16_t error;
  bool close;
  uint8_t command;
  std::string key, value;
  bool operator==(const Outcome& o) const {
    return status == o.status && consumed == o.consumed && swallow == o.swallow &&
           error == o.error && close == o.close && command == o.command && key == o.key &&
           value == o.value;
  }
};

// Parses requests from `buffer` until it needs more bytes or the stream ends.
void Drain(std::string* buffer, uint64_t* swallow, bool* closed, const ParserLimits& limits,
           std::vector<Outcome>* out) {
  while (!*closed && !buffer->empty()) {
    const size_t len = buffer->size();
    std::unique_ptr<char[]> copy(new char[len]);
    std::memcpy(copy.get(), buffer->data(), len);
    BinaryRequest req;
    const BinaryParseResult r = ParseBinaryRequest(copy.get(), len, limits, &req);
    if (r.status == ParseStatus::kNeedMore) {
      Check(r.consumed == 0);
      return;
    }
    if (r.status == ParseStatus::kClose) {
      out->push_back(Outcome{r.status, 0, 0, 0, true, 0, {}, {}});
      *closed = true;
      return;
    }
    Check(r.consumed >= binary::kHeaderSize && r.consumed <= len);
    Outcome o{r.status, r.consumed, r.swallow, r.error, r.close, 0, {}, {}};
    if (r.status == ParseStatus::kRequest) {
      const char* begin = copy.get();
      const char* end = begin + r.consumed;
      Check(req.key.size() == req.keylen && req.keylen <= 250);
      Check(req.key.empty() || (req.key.data() >= begin && req.key.data() + req.key.size() <= end));
      Check(req.value.empty() ||
            (req.value.data() >= begin && req.value.data() + req.value.size() <= end));
      Check(!req.value_too_large || (req.value.empty() && r.swallow > 0));
      o.command = req.command;
      o.key.assign(req.key);
      o.value.assign(req.value);
    }
    out->push_back(o);
    buffer->erase(0, r.consumed);
    if (r.close) {
      *closed = true;
      return;
    }
    const size_t drop = static_cast<size_t>(std::min<uint64_t>(r.swallow, buffer->size()));
    buffer->erase(0, drop);
    *swallow = r.swallow - drop;
    if (*swallow > 0) return;
  }
}

std::vector<Outcome> Run(std::string_view stream, size_t chunk_seed, const ParserLimits& limits) {
  std::vector<Outcome> out;
  std::string buffer;
  uint64_t swallow = 0;
  bool closed = false;
  size_t pos = 0;
  uint32_t x = static_cast<uint32_t>(chunk_seed) * 2654435761u + 1;
  while (pos < stream.size() && !closed) {
    size_t n = stream.size() - pos;
    if (chunk_seed != 0) {
      x = x * 1103515245u + 12345u;
      n = std::min<size_t>(1 + (x >> 16) % 40, n);
    }
    std::string_view chunk = stream.substr(pos, n);
    pos += n;
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(swallow, chunk.size()));
    swallow -= skip;
    buffer.append(chunk.substr(skip));
    Drain(&buffer, &swallow, &closed, limits, &out);
  }
  return out;
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size < 2) return 0;
  size_t max_value = (data[0] & 1) ? 16 : 4096;
  ParserLimits limits;
  limits.max_value_length = &FuzzMaxValue;
  limits.ctx = &max_value;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::vector<Outcome> whole = Run(stream, 0, limits);
  const std::vector<Outcome> chunked = Run(stream, data[0] | 1, limits);
  Check(whole == chunked);
  return 0;
}
