// TextParser: a pure function from a byte buffer to one Request, for the
// classic text protocol, the meta protocol and mcrouter's lease commands. It
// never touches a socket, allocates nothing and reads only [buf, buf+len):
// it answers "need more bytes", "here is a request", or "error, reply this".
// Byte-for-byte the reply strings are memcached 1.6.18's (proto_text.c), or
// with ParserLimits::latest 1.6.45's where the two differ (docs/protocol.md).
#ifndef HERDLESS_PROTOCOL_TEXT_PARSER_H_
#define HERDLESS_PROTOCOL_TEXT_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/request.h"

namespace herdless {

struct ParserLimits {
  // Largest acceptable value length for a given key length (memcached's
  // item_size_max rule). Longer declared blocks yield value_too_large.
  size_t (*max_value_length)(const void* ctx, size_t key_len) = nullptr;
  const void* ctx = nullptr;
  size_t max_line_length = 2048;   // memcached: a line without '\n' past 2048
                                   // bytes closes the connection unless it is a get
  bool latest = false;             // -o compat=1.6.45: 1.6.45's answers where they
                                   // differ (Request::latest tells the executors)
};

enum class ParseStatus : uint8_t {
  kNeedMore,   // nothing consumed; call again with more bytes
  kRequest,    // *out holds a request; `consumed` bytes are used
  kError,      // reply `error` + "\r\n"; drop `consumed` bytes (then `swallow`)
  kClose,      // close the connection without a reply (memcached does so for
               // an over-long line, and for an unknown command whose last
               // word starts with "HTTP/"); `consumed` is meaningless
};

struct ParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  size_t consumed = 0;
  // Bytes of the input stream to discard after `consumed` (the data block of
  // a too-large or refused storage command, plus its "\r\n"). May exceed what
  // the buffer holds: the connection discards the rest as it arrives.
  uint64_t swallow = 0;
  std::string_view error;   // static string, e.g. "CLIENT_ERROR bad data chunk"
  // kError only: send nothing. Classic commands with a trailing `noreply`
  // hide their errors too (memcached's out_string); meta errors never are.
  bool suppress = false;
};

// Parses the first request in [buf, buf+len). Storage commands (set..cas,
// ms, lease-set) wait for the whole data block. A block whose last two bytes
// are not "\r\n" is kError "CLIENT_ERROR bad data chunk" consuming line +
// <bytes> + 2 (memcached parses what follows as the next command). A declared
// length over max_value_length is kRequest with value_too_large, consuming
// only the line, swallow = <bytes> + 2: the executor answers
// "SERVER_ERROR object too large for cache" (for set and ms, any mode, after
// unlinking the key; classic noreply hides it, ms's q does not).
//
// The commonest line, a get or gets of one key of printable bytes, is read
// without splitting it into words; `shortcuts` false parses it the general
// way (tests and the fuzzer check that both give the same).
ParseResult ParseRequest(const char* buf, size_t len, const ParserLimits& limits, Request* out,
                         bool shortcuts = true);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_TEXT_PARSER_H_
