// BinaryParser: a pure function from a byte buffer to one request of
// memcached's binary protocol (protocol_binary.h), beside text_parser.h for
// the text protocols. It never touches a socket, allocates nothing and reads
// only [buf, buf+len). What it accepts, refuses, and when the connection is
// closed are memcached 1.6.18's (proto_bin.c try_read_command_binary and
// dispatch_bin_command).
#ifndef HERDLESS_PROTOCOL_BINARY_PARSER_H_
#define HERDLESS_PROTOCOL_BINARY_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/binary_wire.h"
#include "protocol/text_parser.h"

namespace herdless {

// One binary request. Every string_view points into the parsed buffer.
struct BinaryRequest {
  uint8_t opcode = 0;        // as sent: the reply echoes it
  uint8_t command = 0;       // the opcode with the quiet variants folded (GetQ -> Get)
  bool quiet = false;        // a quiet variant: silent on success (GetQ: on a miss)
  uint8_t extlen = 0;
  uint16_t keylen = 0;
  uint32_t bodylen = 0;
  uint32_t opaque = 0;       // raw bytes, echoed unchanged
  uint64_t cas = 0;
  std::string_view key;
  std::string_view value;    // Set/Add/Replace/Append/Prepend, SASL auth data
  bool value_too_large = false;  // the value is being swallowed, not in `value`
  // Extras, decoded (each meaningful for the opcodes that carry it).
  uint32_t flags = 0;        // Set/Add/Replace
  uint32_t exptime = 0;      // Set/Add/Replace, Incr/Decr, Touch/GAT, Flush
  bool has_exptime = false;  // Flush: whether the 4-byte extras were sent
  uint64_t delta = 0;        // Incr/Decr
  uint64_t initial = 0;      // Incr/Decr
};

struct BinaryParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  size_t consumed = 0;
  // Input bytes to discard after `consumed`: an unknown opcode's body, or the
  // value of a store refused as too large (memcached's conn_swallow). May
  // exceed what the buffer holds.
  uint64_t swallow = 0;
  // kError: reply this status with its message, for the opcode in `opcode`
  // and the request's opaque; close after the reply when `close` is set.
  uint16_t error = binary::kSuccess;
  bool close = false;
  uint8_t opcode = 0;
  uint32_t opaque = 0;
};

// Parses the first request in [buf, buf+len). kClose (no reply) for a
// request that does not start with magic 0x80. A header whose key and extras
// do not fit its body length is kError "Unknown command" with close; a key
// over 250 bytes or extras/key/body lengths the opcode does not allow are
// kError "Invalid arguments" with close; an unknown opcode is kError "Unknown
// command", swallowing its body length after the header, extras and key (as
// memcached does). Stores wait for their whole value, unless its length is
// over limits.max_value_length: then kRequest with value_too_large, `swallow`
// the value's length. Other requests consume header, extras and key only:
// memcached reads whatever body they declare beyond those as the next request.
// *out holds the request on kRequest; otherwise it may be partly written.
BinaryParseResult ParseBinaryRequest(const char* buf, size_t len, const ParserLimits& limits,
                                     BinaryRequest* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_BINARY_PARSER_H_
