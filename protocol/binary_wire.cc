#include "protocol/binary_wire.h"

#include <cstring>

namespace herdless {

namespace {

void Store16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}

void Store32(char* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v);
}

}  // namespace

void AppendBinaryHeader(ReplyBuffer* out, uint8_t opcode, uint16_t status, uint8_t extlen,
                        uint16_t keylen, uint32_t bodylen, uint32_t opaque, uint64_t cas) {
  char h[binary::kHeaderSize];
  h[0] = static_cast<char>(binary::kResponseMagic);
  h[1] = static_cast<char>(opcode);
  Store16(h + 2, keylen);
  h[4] = static_cast<char>(extlen);
  h[5] = 0;   // data type: raw bytes
  Store16(h + 6, status);
  Store32(h + 8, bodylen);
  std::memcpy(h + 12, &opaque, sizeof(opaque));
  Store32(h + 16, static_cast<uint32_t>(cas >> 32));
  Store32(h + 20, static_cast<uint32_t>(cas));
  out->Append(std::string_view(h, sizeof(h)));
}

std::string_view BinaryStatusMessage(uint16_t status) {
  switch (status) {
    case binary::kOutOfMemory: return "Out of memory";
    case binary::kUnknownCommand: return "Unknown command";
    case binary::kKeyNotFound: return "Not found";
    case binary::kInvalidArguments: return "Invalid arguments";
    case binary::kKeyExists: return "Data exists for key.";
    case binary::kTooLarge: return "Too large.";
    case binary::kNonNumeric: return "Non-numeric server-side value for incr or decr";
    case binary::kNotStored: return "Not stored.";
    case binary::kAuthError: return "Auth failure.";
    default: return "";
  }
}

}  // namespace herdless
