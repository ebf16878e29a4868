// RingConfig: the pools of a nutcracker (twemproxy) YAML configuration, as
// far as key ownership goes: each pool's hash, hash_tag, distribution and
// servers ("host:port:weight [name]" or "/unix/path:weight [name]"). Reads
// only the YAML nutcracker configs use: "pool:" lines at column 0, indented
// "key: value" lines, and "- item" lists; other keys are skipped. Pure.
#ifndef HERDLESS_PROTOCOL_RING_CONFIG_H_
#define HERDLESS_PROTOCOL_RING_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/ketama.h"

namespace herdless {

struct RingServer {
  std::string listed;   // "host:port" or "/path", as listed (without weight and name)
  std::string host;     // "" for a unix socket
  int port = 0;
  uint32_t weight = 1;
  std::string name;     // what ketama hashes: `name`, else "host:port" ("host" for port 11211)
};

struct RingPool {
  std::string name;
  RingHash hash = RingHash::kFnv1a_64;   // nutcracker's default
  std::string hash_tag;                  // "" or two bytes, e.g. "{}"
  std::string distribution = "ketama";
  std::vector<RingServer> servers;
};

// False with *error (naming the line) on what nutcracker would refuse or
// herdless cannot compute (a hash it lacks).
bool ParseRingConfig(std::string_view text, std::vector<RingPool>* pools, std::string* error);

// The part of `key` a pool hashes: the bytes between the hash_tag's two
// bytes when both are there with something between them, else the key.
std::string_view HashedPart(std::string_view key, std::string_view hash_tag);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_RING_CONFIG_H_
