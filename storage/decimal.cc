#include "storage/decimal.h"

namespace herdless {

bool ParseCounter(std::string_view v, uint64_t* out) {
  size_t i = 0;
  while (i < v.size() && IsSpace(v[i])) i++;
  bool negative = false;
  if (i < v.size() && (v[i] == '+' || v[i] == '-')) {
    negative = v[i] == '-';
    i++;
  }
  const size_t digits_start = i;
  uint64_t value = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(v[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;  // ERANGE
    value = value * 10 + digit;
    i++;
  }
  if (i == digits_start) return false;
  if (i < v.size() && !IsSpace(v[i])) return false;
  if (negative) {
    value = 0 - value;
    if (static_cast<int64_t>(value) < 0) return false;
  }
  *out = value;
  return true;
}

}  // namespace herdless
