// Fixed-width integers at a byte position of a file buffer, little-endian (the
// snapshot and flash page formats). memcpy keeps unaligned access defined; the
// static_assert keeps a big-endian build from writing files others misread.
#ifndef HERDLESS_STORAGE_LE_BYTES_H_
#define HERDLESS_STORAGE_LE_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>

namespace herdless::le_bytes {

static_assert(std::endian::native == std::endian::little,
              "the file formats are little-endian and written with memcpy");

template <typename T>
inline void Put(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
inline T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void Put16(char* p, uint16_t v) { Put(p, v); }
inline void Put32(char* p, uint32_t v) { Put(p, v); }
inline void Put64(char* p, uint64_t v) { Put(p, v); }
inline uint16_t Get16(const char* p) { return Get<uint16_t>(p); }
inline uint32_t Get32(const char* p) { return Get<uint32_t>(p); }
inline uint64_t Get64(const char* p) { return Get<uint64_t>(p); }

}  // namespace herdless::le_bytes

#endif  // HERDLESS_STORAGE_LE_BYTES_H_
