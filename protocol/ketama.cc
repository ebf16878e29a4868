#include "protocol/ketama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace herdless {

namespace {

constexpr uint32_t kPointsPerServer = 160;   // nutcracker's KETAMA_POINTS_PER_SERVER
constexpr uint32_t kPointsPerHash = 4;       // one md5 digest gives four points

struct HashName {
  RingHash hash;
  const char* name;
};
constexpr HashName kHashNames[] = {
    {RingHash::kOneAtATime, "one_at_a_time"}, {RingHash::kMd5, "md5"},
    {RingHash::kCrc32, "crc32"},              {RingHash::kCrc32a, "crc32a"},
    {RingHash::kFnv1_64, "fnv1_64"},          {RingHash::kFnv1a_64, "fnv1a_64"},
    {RingHash::kFnv1_32, "fnv1_32"},          {RingHash::kFnv1a_32, "fnv1a_32"},
    {RingHash::kMurmur, "murmur"},
};

// nutcracker reads key bytes as (signed) char and widens them: a byte >= 0x80
// sets the high bits. Its hashes depend on that, so ours do too.
uint32_t Widened32(char c) { return static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(c))); }
uint64_t Widened64(char c) { return static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(c))); }

uint32_t Rotl(uint32_t x, int c) { return (x << c) | (x >> (32 - c)); }

// The reflected CRC-32 table (polynomial 0xedb88320).
struct Crc32Table {
  uint32_t t[256];
  Crc32Table() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
  }
};
const Crc32Table kCrc32;

uint32_t LittleEndian32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint32_t Murmur2(std::string_view key) {
  constexpr uint32_t m = 0x5bd1e995;
  const uint32_t len = static_cast<uint32_t>(key.size());
  uint32_t h = (0xdeadbeefu * len) ^ len;   // nutcracker's seed
  const auto* data = reinterpret_cast<const uint8_t*>(key.data());
  size_t n = key.size();
  for (; n >= 4; data += 4, n -= 4) {
    uint32_t k = LittleEndian32(data);
    k *= m;
    k ^= k >> 24;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (n) {
    case 3: h ^= uint32_t{data[2]} << 16; [[fallthrough]];
    case 2: h ^= uint32_t{data[1]} << 8; [[fallthrough]];
    case 1: h ^= data[0]; h *= m; break;
    default: break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

}  // namespace

bool ParseRingHash(std::string_view name, RingHash* out) {
  for (const HashName& h : kHashNames) {
    if (name == h.name) {
      *out = h.hash;
      return true;
    }
  }
  return false;
}

const char* RingHashName(RingHash hash) {
  for (const HashName& h : kHashNames) {
    if (h.hash == hash) return h.name;
  }
  return "?";
}

uint32_t HashKey(RingHash h, std::string_view key) {
  switch (h) {
    case RingHash::kOneAtATime: {
      uint32_t v = 0;
      for (char c : key) {
        v += Widened32(c);
        v += v << 10;
        v ^= v >> 6;
      }
      v += v << 3;
      v ^= v >> 11;
      v += v << 15;
      return v;
    }
    case RingHash::kMd5: {
      uint8_t d[16];
      Md5(key, d);
      return LittleEndian32(d);
    }
    case RingHash::kCrc32:
    case RingHash::kCrc32a: {
      uint32_t crc = ~0u;
      for (char c : key) {
        // crc32 indexes with the widened byte, crc32a with the byte: the same low 8 bits.
        crc = kCrc32.t[(crc ^ static_cast<uint8_t>(c)) & 0xff] ^ (crc >> 8);
      }
      crc = ~crc;
      return h == RingHash::kCrc32 ? (crc >> 16) & 0x7fff : crc;
    }
    case RingHash::kFnv1_64: {
      uint64_t v = 0xcbf29ce484222325ull;
      for (char c : key) {
        v *= 0x100000001b3ull;
        v ^= Widened64(c);
      }
      return static_cast<uint32_t>(v);
    }
    case RingHash::kFnv1a_64: {
      // nutcracker keeps only the low 32 bits of the 64-bit basis and prime.
      uint32_t v = static_cast<uint32_t>(0xcbf29ce484222325ull);
      for (char c : key) {
        v ^= Widened32(c);
        v *= static_cast<uint32_t>(0x100000001b3ull);
      }
      return v;
    }
    case RingHash::kFnv1_32:
    case RingHash::kFnv1a_32: {
      uint32_t v = 2166136261u;
      for (char c : key) {
        if (h == RingHash::kFnv1_32) {
          v *= 16777619u;
          v ^= Widened32(c);
        } else {
          v ^= Widened32(c);
          v *= 16777619u;
        }
      }
      return v;
    }
    case RingHash::kMurmur:
      return Murmur2(key);
  }
  return 0;
}

void Md5(std::string_view data, uint8_t digest[16]) {
  static constexpr int kShift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                     5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                     4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                     6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
  static const auto kSine = [] {
    std::vector<uint32_t> k(64);
    for (int i = 0; i < 64; i++) k[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
    return k;
  }();
  uint32_t s[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  // The message, a 0x80 byte, zeros to 56 mod 64, then its length in bits.
  std::string msg(data);
  const uint64_t bits = uint64_t{data.size()} * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 0; i < 8; i++) msg.push_back(static_cast<char>(bits >> (8 * i)));
  for (size_t off = 0; off < msg.size(); off += 64) {
    const auto* block = reinterpret_cast<const uint8_t*>(msg.data() + off);
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    for (int i = 0; i < 64; i++) {
      uint32_t f;
      int g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const uint32_t next = b + Rotl(a + f + kSine[i] + LittleEndian32(block + 4 * g), kShift[i]);
      a = d;
      d = c;
      c = b;
      b = next;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
  }
  for (int i = 0; i < 4; i++) {
    for (int j = 0; j < 4; j++) digest[4 * i + j] = static_cast<uint8_t>(s[i] >> (8 * j));
  }
}

KetamaContinuum::KetamaContinuum(const std::vector<Server>& servers) {
  uint32_t live = 0;
  uint32_t total_weight = 0;
  for (const Server& s : servers) {
    if (!s.live) continue;
    live++;
    total_weight += s.weight;
  }
  if (servers.size() == 1) {
    only_ = servers[0].live ? 0 : -1;
    return;
  }
  if (live == 0) return;
  for (uint32_t i = 0; i < servers.size(); i++) {
    const Server& s = servers[i];
    if (!s.live) continue;
    // nutcracker's arithmetic, in float as it does it.
    const float pct = static_cast<float>(s.weight) / static_cast<float>(total_weight);
    const auto points = static_cast<uint32_t>(
        std::floor(static_cast<float>(pct * kPointsPerServer / 4 * static_cast<float>(live) + 0.0000000001)) * 4);
    for (uint32_t n = 0; n < points / kPointsPerHash; n++) {
      uint8_t d[16];
      Md5(s.name + "-" + std::to_string(n), d);
      for (uint32_t x = 0; x < kPointsPerHash; x++) points_.push_back({LittleEndian32(d + 4 * x), i});
    }
  }
  std::stable_sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.value < b.value; });
}

int KetamaContinuum::Owner(uint32_t hash) const {
  if (only_ >= 0 || points_.empty()) return only_;
  auto it = std::lower_bound(points_.begin(), points_.end(), hash,
                             [](const Point& p, uint32_t h) { return p.value < h; });
  if (it == points_.end()) it = points_.begin();
  return static_cast<int>(it->server);
}

}  // namespace herdless
