// Keys: the one key validator, the base64 codec used by meta `b` keys, and
// the URI encoding of keys in dumps and log lines.
#ifndef HERDLESS_PROTOCOL_KEY_H_
#define HERDLESS_PROTOCOL_KEY_H_

#include <cstddef>
#include <string_view>

#include "storage/limits.h"   // kMaxKeyLength

namespace herdless {

// True for a key memcached's text protocol accepts: 1..250 bytes (kMaxKeyLength)
// containing no space, '\n' or NUL (the bytes its tokenizer splits or ends
// on). Other control bytes, '\r' and bytes >= 0x80 are accepted, as memcached
// 1.6.18 accepts them. Base64-decoded (`b`) keys may hold any byte and are
// not checked with this.
bool IsValidKey(std::string_view key);

// IsValidKey for a word of a command line split by SplitCommandLine, which
// holds no space, '\n' or NUL by construction: only its length is checked.
inline bool IsValidKeyWord(std::string_view word) {
  return !word.empty() && word.size() <= kMaxKeyLength;
}

// Standard base64 (RFC 4648 alphabet, '=' padding) with memcached's lenient
// decoder: bytes outside the alphabet are skipped, the remaining symbols must
// be a non-zero multiple of 4, and decoding stops after the first padded
// block. Returns the decoded length, or 0 when the input is invalid or the
// result would not fit in `cap` bytes.
size_t Base64Decode(std::string_view in, char* out, size_t cap);

// Encodes `in` with padding, no line breaks, no terminator. Returns the
// encoded length (4 * ceil(n / 3)), or 0 when it would not fit in `cap`.
size_t Base64Encode(std::string_view in, char* out, size_t cap);

// memcached's uriencode (lru_crawler metadump, watch): bytes other than
// ASCII letters, digits and "-._~" become "%XX" (upper-case hex). Writes at
// most 3 * key.size() bytes to `out` and returns how many.
inline constexpr size_t kMaxUriEncodedKey = 3 * 250;
size_t UriEncode(std::string_view key, char* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_KEY_H_
