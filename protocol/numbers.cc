#include "protocol/numbers.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "storage/decimal.h"   // IsSpace

namespace herdless {

namespace {

// The shared front half of strtoull/strtoll: whitespace, sign, digits, and
// memcached's rule for what may follow the digits. Fails when there is no
// digit, when the magnitude overflows 64 bits, or on junk after the digits.
bool ScanDecimal(std::string_view s, uint64_t* magnitude, bool* negative) {
  size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  *negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    *negative = s[i] == '-';
    ++i;
  }
  const size_t first_digit = i;
  uint64_t value = 0;
  bool overflow = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) overflow = true;
    value = value * 10 + digit;
  }
  if (i == first_digit || overflow) return false;
  if (i < s.size() && !IsSpace(s[i])) return false;
  *magnitude = value;
  return true;
}

}  // namespace

bool ParseUint64(std::string_view s, uint64_t* out) {
  uint64_t magnitude;
  bool negative;
  if (!ScanDecimal(s, &magnitude, &negative)) return false;
  // strtoull negates in unsigned arithmetic; memcached then refuses a '-'
  // only when the result looks negative as a signed number.
  const uint64_t value = negative ? (~magnitude + 1) : magnitude;
  if (static_cast<int64_t>(value) < 0 && s.find('-') != std::string_view::npos) return false;
  *out = value;
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  uint64_t magnitude;
  bool negative;
  if (!ScanDecimal(s, &magnitude, &negative)) return false;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) return false;   // strtoll's ERANGE
  *out = negative ? static_cast<int64_t>(~magnitude + 1) : static_cast<int64_t>(magnitude);
  return true;
}

bool ParseUint32(std::string_view s, uint32_t* out) {
  uint64_t value;
  if (!ParseUint64(s, &value)) return false;
  *out = static_cast<uint32_t>(value);
  return true;
}

bool ParseInt32(std::string_view s, int32_t* out) {
  int64_t value;
  if (!ParseInt64(s, &value)) return false;
  *out = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value)));
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  // from_chars also takes "inf", "nan" and "1e"; insist on a digit first
  // (after an optional '-') and reject non-finite results.
  const size_t digit = s[0] == '-' ? 1 : 0;
  if (digit >= s.size() || s[digit] < '0' || s[digit] > '9') return false;
  double value;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value, std::chars_format::general);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

bool ParseStrtod(std::string_view s, double* out) {
  const std::string text(s);   // strtod wants the NUL memcached's tokenizer wrote
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || end == text.c_str()) return false;
  if (*end != '\0' && !IsSpace(*end)) return false;
  *out = value;
  return true;
}

namespace {

constexpr size_t kMaxTokenDigits = 11;   // mcmc's MCMC_TOKTO32_MAX

// The magnitude of s's digits, if there are only digits and it is at most `limit`.
bool TokenMagnitude(std::string_view s, uint64_t limit, uint64_t* out) {
  if (s.size() > kMaxTokenDigits) return false;
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > limit) return false;
  }
  *out = value;
  return true;
}

}  // namespace

bool ParseTokenUint32(std::string_view s, uint32_t* out) {
  uint64_t value;
  if (!TokenMagnitude(s, UINT32_MAX, &value)) return false;
  *out = static_cast<uint32_t>(value);
  return true;
}

bool ParseTokenUint64(std::string_view s, uint64_t* out) {
  constexpr size_t kMaxToken64 = 22;   // mcmc's MCMC_TOKTO64_MAX
  if (s.size() > kMaxToken64) return false;
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

bool ParseUint32As(std::string_view s, bool latest, uint32_t* out) {
  return latest ? ParseTokenUint32(s, out) : ParseUint32(s, out);
}
bool ParseInt32As(std::string_view s, bool latest, int32_t* out) {
  return latest ? ParseTokenInt32(s, out) : ParseInt32(s, out);
}
bool ParseUint64As(std::string_view s, bool latest, uint64_t* out) {
  return latest ? ParseTokenUint64(s, out) : ParseUint64(s, out);
}
bool ParseStrtodAs(std::string_view s, bool latest, double* out) {
  constexpr size_t kMaxDoubleToken = 31;
  return (!latest || s.size() <= kMaxDoubleToken) && ParseStrtod(s, out);
}

bool ParseTokenInt32(std::string_view s, int32_t* out) {
  const bool negative = !s.empty() && s[0] == '-';
  if (s.size() > kMaxTokenDigits) return false;
  uint64_t value;
  if (!TokenMagnitude(s.substr(negative ? 1 : 0), negative ? uint64_t{1} << 31 : INT32_MAX, &value)) {
    return false;
  }
  *out = negative ? static_cast<int32_t>(-static_cast<int64_t>(value)) : static_cast<int32_t>(value);
  return true;
}

char* FormatUint64(uint64_t v, char* out) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  // Most numbers here (flags, value lengths) have one to four digits: those
  // take a comparison or two and at most one division by 100, where counting
  // the digits first cost as much again.
  if (v < 100) {
    if (v < 10) {
      *out = static_cast<char>('0' + v);
      return out + 1;
    }
    std::memcpy(out, kPairs + v * 2, 2);
    return out + 2;
  }
  if (v < 10000) {
    const unsigned high = static_cast<unsigned>(v / 100), low = static_cast<unsigned>(v % 100);
    if (high < 10) {
      *out++ = static_cast<char>('0' + high);
    } else {
      std::memcpy(out, kPairs + high * 2, 2);
      out += 2;
    }
    std::memcpy(out, kPairs + low * 2, 2);
    return out + 2;
  }
  // The rest are written from the last digit back, in place.
  int digits = 1;
  for (uint64_t rest = v; rest >= 10; rest /= 10) ++digits;
  char* const end = out + digits;
  char* p = end;
  while (v >= 100) {
    const unsigned pair = static_cast<unsigned>(v % 100) * 2;
    v /= 100;
    *--p = kPairs[pair + 1];
    *--p = kPairs[pair];
  }
  if (v >= 10) {
    const unsigned pair = static_cast<unsigned>(v) * 2;
    *--p = kPairs[pair + 1];
    *--p = kPairs[pair];
  } else {
    *--p = static_cast<char>('0' + v);
  }
  return end;
}

char* FormatInt64(int64_t v, char* out) {
  uint64_t magnitude = static_cast<uint64_t>(v);
  if (v < 0) {
    *out++ = '-';
    magnitude = 0 - magnitude;   // well defined for INT64_MIN too
  }
  return FormatUint64(magnitude, out);
}

char* FormatReadRate(double reads_per_s, char* out) {
  // Two decimals, rounded; at most 20 integer digits (rates are far below).
  const double v = reads_per_s > 0 ? reads_per_s : 0;
  const uint64_t hundredths = v < 1e17 ? static_cast<uint64_t>(v * 100 + 0.5) : UINT64_MAX / 10;
  out = FormatUint64(hundredths / 100, out);
  *out++ = '.';
  *out++ = static_cast<char>('0' + hundredths / 10 % 10);
  *out++ = static_cast<char>('0' + hundredths % 10);
  return out;
}

}  // namespace herdless
