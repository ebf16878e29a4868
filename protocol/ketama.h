// Ketama as nutcracker (twemproxy 0.5) computes it: the key hashes of its
// hashkit (`hash:` in its YAML) and the continuum of 160 md5 points per server,
// scaled by weight, that a key's hash is looked up in. Pure functions and one
// immutable value: thread-safe once built.
#ifndef HERDLESS_PROTOCOL_KETAMA_H_
#define HERDLESS_PROTOCOL_KETAMA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herdless {

enum class RingHash : uint8_t {
  kOneAtATime, kMd5, kCrc32, kCrc32a, kFnv1_64, kFnv1a_64, kFnv1_32, kFnv1a_32, kMurmur
};

// nutcracker's name of a hash ("fnv1a_64"); false for one herdless lacks.
bool ParseRingHash(std::string_view name, RingHash* out);
const char* RingHashName(RingHash h);

// The 32-bit hash nutcracker dispatches `key` by.
uint32_t HashKey(RingHash h, std::string_view key);

// RFC 1321's digest (ketama's points and the md5 key hash).
void Md5(std::string_view data, uint8_t digest[16]);

// The points of the live servers, sorted; Owner() is the server a hash maps
// to: the first point at or after it, wrapping round.
class KetamaContinuum {
 public:
  struct Server {
    std::string name;     // what the points hash: `name` or "host[:port]"
    uint32_t weight = 1;
    bool live = true;     // false: left out, as nutcracker leaves an ejected server
  };
  explicit KetamaContinuum(const std::vector<Server>& servers);

  bool empty() const { return points_.empty(); }
  // The index (in `servers`) of the server owning `hash`; -1 when none is live.
  int Owner(uint32_t hash) const;

 private:
  struct Point {
    uint32_t value;
    uint32_t server;
  };
  std::vector<Point> points_;
  int only_ = -1;   // the one live server when there is one (nutcracker skips hashing)
};

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_KETAMA_H_
