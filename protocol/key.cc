#include "protocol/key.h"

#include <cstdint>

#include "protocol/request.h"

namespace herdless {

bool IsValidKey(std::string_view key) {
  if (key.empty() || key.size() > static_cast<size_t>(kMaxKeyLength)) return false;
  for (char c : key) {
    if (c == ' ' || c == '\n' || c == '\0') return false;
  }
  return true;
}

namespace {

constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr uint8_t kNotBase64 = 0x80;

// Symbol value of each byte; '=' counts as a symbol of value 0.
struct DecodeTable {
  uint8_t value[256];
  constexpr DecodeTable() : value() {
    for (int i = 0; i < 256; ++i) value[i] = kNotBase64;
    for (int i = 0; i < 64; ++i) value[static_cast<uint8_t>(kAlphabet[i])] = static_cast<uint8_t>(i);
    value[static_cast<uint8_t>('=')] = 0;
  }
};

constexpr DecodeTable kDecode;

}  // namespace

size_t Base64Decode(std::string_view in, char* out, size_t cap) {
  size_t symbols = 0;
  for (char c : in) {
    if (kDecode.value[static_cast<uint8_t>(c)] != kNotBase64) ++symbols;
  }
  if (symbols == 0 || symbols % 4 != 0 || symbols / 4 * 3 > cap) return 0;

  size_t n = 0;
  uint8_t block[4];
  int filled = 0;
  int padding = 0;
  for (char c : in) {
    const uint8_t v = kDecode.value[static_cast<uint8_t>(c)];
    if (v == kNotBase64) continue;
    if (c == '=') ++padding;
    block[filled++] = v;
    if (filled < 4) continue;
    out[n++] = static_cast<char>((block[0] << 2) | (block[1] >> 4));
    out[n++] = static_cast<char>((block[1] << 4) | (block[2] >> 2));
    out[n++] = static_cast<char>((block[2] << 6) | block[3]);
    filled = 0;
    if (padding > 0) {
      // A padded block ends the input: "xx==" holds one byte, "xxx=" two.
      if (padding > 2) return 0;
      n -= static_cast<size_t>(padding);
      break;
    }
  }
  return n;
}

size_t Base64Encode(std::string_view in, char* out, size_t cap) {
  const size_t need = (in.size() + 2) / 3 * 4;
  if (need > cap) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  size_t left = in.size();
  char* o = out;
  for (; left >= 3; left -= 3, p += 3) {
    *o++ = kAlphabet[p[0] >> 2];
    *o++ = kAlphabet[((p[0] & 0x03) << 4) | (p[1] >> 4)];
    *o++ = kAlphabet[((p[1] & 0x0f) << 2) | (p[2] >> 6)];
    *o++ = kAlphabet[p[2] & 0x3f];
  }
  if (left > 0) {
    *o++ = kAlphabet[p[0] >> 2];
    if (left == 1) {
      *o++ = kAlphabet[(p[0] & 0x03) << 4];
      *o++ = '=';
    } else {
      *o++ = kAlphabet[((p[0] & 0x03) << 4) | (p[1] >> 4)];
      *o++ = kAlphabet[(p[1] & 0x0f) << 2];
    }
    *o++ = '=';
  }
  return static_cast<size_t>(o - out);
}

size_t UriEncode(std::string_view key, char* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  char* p = out;
  for (char ch : key) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~';
    if (plain) {
      *p++ = static_cast<char>(c);
    } else {
      *p++ = '%';
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
    }
  }
  return static_cast<size_t>(p - out);
}

}  // namespace herdless
