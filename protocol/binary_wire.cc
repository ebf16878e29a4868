#include "protocol/binary_wire.h"

#include <cstring>

namespace herdless {

void FormatBinaryHeader(char* h, uint8_t opcode, uint16_t status, uint8_t extlen, uint16_t keylen,
                        uint32_t bodylen, uint32_t opaque, uint64_t cas) {
  h[0] = static_cast<char>(binary::kResponseMagic);
  h[1] = static_cast<char>(opcode);
  binary::StoreBig16(h + 2, keylen);
  h[4] = static_cast<char>(extlen);
  h[5] = 0;   // data type: raw bytes
  binary::StoreBig16(h + 6, status);
  binary::StoreBig32(h + 8, bodylen);
  std::memcpy(h + 12, &opaque, sizeof(opaque));
  binary::StoreBig64(h + 16, cas);
}

void AppendBinaryHeader(ReplyBuffer* out, uint8_t opcode, uint16_t status, uint8_t extlen,
                        uint16_t keylen, uint32_t bodylen, uint32_t opaque, uint64_t cas) {
  char h[binary::kHeaderSize];
  FormatBinaryHeader(h, opcode, status, extlen, keylen, bodylen, opaque, cas);
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
