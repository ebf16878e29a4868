// The binary protocol's wire format (memcached 1.6.18's protocol_binary.h):
// opcodes, status codes and their messages, and the response header.
#ifndef HERDLESS_PROTOCOL_BINARY_WIRE_H_
#define HERDLESS_PROTOCOL_BINARY_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/reply.h"

namespace herdless {
namespace binary {

inline constexpr uint8_t kRequestMagic = 0x80;
inline constexpr uint8_t kResponseMagic = 0x81;
inline constexpr size_t kHeaderSize = 24;

// The opcodes memcached 1.6.18 knows (quiet variants end in Q).
enum Opcode : uint8_t {
  kGet = 0x00, kSet = 0x01, kAdd = 0x02, kReplace = 0x03, kDelete = 0x04,
  kIncrement = 0x05, kDecrement = 0x06, kQuit = 0x07, kFlush = 0x08, kGetQ = 0x09,
  kNoop = 0x0a, kVersion = 0x0b, kGetK = 0x0c, kGetKQ = 0x0d, kAppend = 0x0e,
  kPrepend = 0x0f, kStat = 0x10, kSetQ = 0x11, kAddQ = 0x12, kReplaceQ = 0x13,
  kDeleteQ = 0x14, kIncrementQ = 0x15, kDecrementQ = 0x16, kQuitQ = 0x17,
  kFlushQ = 0x18, kAppendQ = 0x19, kPrependQ = 0x1a, kTouch = 0x1c, kGat = 0x1d,
  kGatQ = 0x1e, kSaslListMechs = 0x20, kSaslAuth = 0x21, kSaslStep = 0x22,
  kGatK = 0x23, kGatKQ = 0x24,
};

enum Status : uint16_t {
  kSuccess = 0x00,
  kKeyNotFound = 0x01,
  kKeyExists = 0x02,
  kTooLarge = 0x03,
  kInvalidArguments = 0x04,
  kNotStored = 0x05,
  kNonNumeric = 0x06,
  kAuthError = 0x20,
  kAuthContinue = 0x21,
  kUnknownCommand = 0x81,
  kOutOfMemory = 0x82,
};

// Incr/Decr's expiration that means "do not create a missing counter".
inline constexpr uint32_t kNoAutoCreate = 0xffffffff;

// The wire's numbers are big-endian. (Written byte by byte, which the
// compiler turns into one swap and one load or store.)
inline uint16_t LoadBig16(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((b[0] << 8) | b[1]);
}
inline uint32_t LoadBig32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}
inline uint64_t LoadBig64(const char* p) { return (uint64_t{LoadBig32(p)} << 32) | LoadBig32(p + 4); }
inline void StoreBig16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
inline void StoreBig32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}
inline void StoreBig64(char* p, uint64_t v) {
  StoreBig32(p, static_cast<uint32_t>(v >> 32));
  StoreBig32(p + 4, static_cast<uint32_t>(v));
}

}  // namespace binary

// The message memcached sends with an error status ("Not found", ...).
std::string_view BinaryStatusMessage(uint16_t status);

// Writes a response header (memcached's add_bin_header) into h[0..24): magic
// 0x81, the opcode, key/extras/body lengths, status, the raw opaque and the CAS.
void FormatBinaryHeader(char* h, uint8_t opcode, uint16_t status, uint8_t extlen, uint16_t keylen,
                        uint32_t bodylen, uint32_t opaque, uint64_t cas);
// Appends that header.
void AppendBinaryHeader(ReplyBuffer* out, uint8_t opcode, uint16_t status, uint8_t extlen,
                        uint16_t keylen, uint32_t bodylen, uint32_t opaque, uint64_t cas);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_BINARY_WIRE_H_
