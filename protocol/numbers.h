// Number parsing and formatting for the text protocols.
//
// The parsers accept exactly what memcached 1.6.18's safe_strto* functions
// (util.c) accept on 64-bit Linux, because clients and tests depend on those
// quirks:
//   - leading whitespace (\t \n \v \f \r, space) and one '+' or '-' sign;
//   - at least one decimal digit; values whose magnitude overflows 64 bits fail;
//   - the digits must be followed by the end of the text or by whitespace
//     (anything after that whitespace is ignored, as strtol's endptr rule does);
//   - unsigned parsers reject a '-' only when the result would be >= 2^63
//     ("-5" fails, "-0" is 0);
//   - ParseUint32/ParseInt32 parse a 64-bit number and keep its low 32 bits
//     (memcached stores the long into a 32-bit slot: "4294967297" gives 1).
// None of them allocates; all leave *out unchanged on failure.
#ifndef HERDLESS_PROTOCOL_NUMBERS_H_
#define HERDLESS_PROTOCOL_NUMBERS_H_

#include <charconv>
#include <cstdint>
#include <string_view>

namespace herdless {

bool ParseUint64(std::string_view s, uint64_t* out);   // safe_strtoull
bool ParseInt64(std::string_view s, int64_t* out);     // safe_strtoll
bool ParseUint32(std::string_view s, uint32_t* out);   // safe_strtoul
bool ParseInt32(std::string_view s, int32_t* out);     // safe_strtol

// A finite decimal number: optional '-', digits, optional fraction and
// exponent ("1", "1.5", "2e-1"). No whitespace, no "inf"/"nan", no hex.
bool ParseDouble(std::string_view s, double* out);

// memcached's safe_strtod (lru tune, slabs automove ratio): strtod's whole
// syntax (leading whitespace, a sign, ".5", "1e3", hex, "inf", "nan"), then
// the end of the text or whitespace; an overflow or underflow fails.
bool ParseStrtod(std::string_view s, double* out);

// memcached 1.6.45's token numbers (mcmc_toktou32, mcmc_tokto32): decimal
// digits only (the signed one takes one leading '-'), at most 11 characters,
// and in range; nothing is skipped or ignored.
bool ParseTokenUint32(std::string_view s, uint32_t* out);
bool ParseTokenInt32(std::string_view s, int32_t* out);
bool ParseTokenUint64(std::string_view s, uint64_t* out);   // at most 22 characters

// A number as the memcached -o compat chooses reads it: 1.6.18's safe_strto*
// above, or with `latest` (compat=1.6.45) 1.6.45's token readers (its
// mc_toktod copies at most 31 characters before safe_strtod).
bool ParseUint32As(std::string_view s, bool latest, uint32_t* out);
bool ParseInt32As(std::string_view s, bool latest, int32_t* out);
bool ParseUint64As(std::string_view s, bool latest, uint64_t* out);
bool ParseStrtodAs(std::string_view s, bool latest, double* out);

// The whole of `s` as a decimal T (std::from_chars: digits, one '-' for a
// signed T, nothing skipped); false when empty, partly a number or out of
// range. For herdless's own formats (a peer's replies, a port), not a client's.
template <typename T>
bool ParseWholeNumber(std::string_view s, T* out) {
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return false;
  *out = value;
  return true;
}

// Longest decimal text of a uint64_t.
inline constexpr int kMaxUint64Digits = 20;

// Writes v in decimal at out (no terminator); returns one past the last digit.
// out must have room for kMaxUint64Digits bytes.
char* FormatUint64(uint64_t v, char* out);
// The same for a signed number: a '-' and its magnitude (room for kMaxUint64Digits + 1).
char* FormatInt64(int64_t v, char* out);

// A key's read rate as herdless shows it (mg r, lru_crawler metadump): reads
// per second with two decimals ("0.00" for a key without an estimate).
// out must have room for kMaxRateChars bytes; returns one past the last one.
inline constexpr int kMaxRateChars = 24;
char* FormatReadRate(double reads_per_s, char* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_NUMBERS_H_
