// Numbers kept as text in an item's value (incr/decr): read as memcached's
// safe_strtoull reads them, with C's white space, which the protocols'
// number parsers share (protocol/numbers.h).
#ifndef HERDLESS_STORAGE_DECIMAL_H_
#define HERDLESS_STORAGE_DECIMAL_H_

#include <cstdint>
#include <string_view>

namespace herdless {

// isspace() in the C locale: space, \t, \n, \v, \f, \r.
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// An incr/decr target, as memcached parses it with strtoull: leading white
// space, an optional sign, digits, then white space or the end of the value
// ("12 abc" is 12, "12abc" is not a number). A '-' is refused when the
// negated result would be negative as a signed number, as safe_strtoull
// does. False (and *out untouched) when the value is not a number.
bool ParseCounter(std::string_view value, uint64_t* out);

}  // namespace herdless

#endif  // HERDLESS_STORAGE_DECIMAL_H_
