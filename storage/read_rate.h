// ReadRate: how often a key is read, estimated from its reads alone, in two
// bytes that only hot items carry (storage/item.h, kFmtReadRate).
//
// The estimate is an exponentially decayed count of the key's reads, kept
// "as of" the item's last access second: on each read the count is decayed
// by a = exp(-1/tau) per whole second since the last access, then the read
// is added. In steady state at rate lambda its expected value just before a
// read is lambda * (a/(1-a) + 1/2) ~= lambda * tau, so the rate is the
// count divided by that. tau = 16 s: at 5 reads/s the estimate's relative
// deviation is about 1/sqrt(2 * lambda * tau) = 8%; it follows a change of
// rate within a few tau.
//
// The count is a 16-bit float in units of 1/16 read (4-bit exponent,
// 12-bit mantissa: 1/4096 relative precision, up to 8.4 million reads, i.e.
// half a million reads a second). Updates round stochastically (the caller
// gives 32 random bits), so that neither a decay nor a read is lost to
// rounding at any count.
//
// A third byte holds the item's TTL on a log scale (the refresh-ahead window
// is bounded by a fraction of it; the item itself only knows its expiry) and
// one bit saying whether the store counts the key as hot (`stats` hot_keys).
// Pure functions; thread-compatible.
#ifndef HERDLESS_STORAGE_READ_RATE_H_
#define HERDLESS_STORAGE_READ_RATE_H_

#include <cstdint>

namespace herdless {

// The field as stored: count == 0 means "no estimate" (the field may still be
// there, in a full header).
struct ReadRateState {
  uint16_t count = 0;   // encoded decayed read count (ReadRate::CountOf)
  uint8_t aux = 0;      // bit 7: counted hot; bits 6..0: TTL code (0 = none)
  bool present() const { return count != 0; }
  bool hot() const { return (aux & 0x80) != 0; }
  uint8_t ttl_code() const { return aux & 0x7f; }
  void set_hot(bool hot) { aux = static_cast<uint8_t>((aux & 0x7f) | (hot ? 0x80 : 0)); }
  void set_ttl_code(uint8_t code) { aux = static_cast<uint8_t>((aux & 0x80) | (code & 0x7f)); }
};

class ReadRate {
 public:
  static constexpr double kTimeConstantS = 16.0;
  // A key is tracked from its second read within one second: its count
  // starts at the read before it (the read itself is then added as any).
  static constexpr double kTrackedAfterReads = 1.0;
  // Below this many decayed reads (a rate under ~1/16 reads/s) the estimate
  // is dropped when the item is rewritten: the key is cold again.
  static constexpr double kDropBelowReads = 1.0;

  // The decayed read count a state stands for, and the state closest to a
  // count (rounded down: for tests and restore; updates round stochastically).
  static double CountOf(uint16_t count);
  static uint16_t Encode(double reads);

  // The count after `elapsed_s` seconds without a read.
  static uint16_t Decayed(uint16_t count, int64_t elapsed_s, uint32_t random);
  // The count after one read `elapsed_s` seconds after the last access.
  static uint16_t AfterRead(uint16_t count, int64_t elapsed_s, uint32_t random);
  // Reads per second estimated `elapsed_s` seconds after the last access,
  // not counting a read happening now.
  static double PerSecond(uint16_t count, int64_t elapsed_s);

  // TTL on a log scale in 7 bits (8 steps per doubling: within 9%, up to
  // about 60 000 s; longer TTLs saturate). 0 = no TTL.
  static uint8_t TtlCode(int64_t ttl_s);
  static int64_t TtlOfCode(uint8_t code);
};

}  // namespace herdless

#endif  // HERDLESS_STORAGE_READ_RATE_H_
