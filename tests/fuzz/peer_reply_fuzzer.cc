// libFuzzer target for protocol/peer_reply.cc, the warm peer's reply parser
// (-o warm_peer). The input is what a peer sent, parsed reply after reply as
// the client does. Checked: no crash or undefined behaviour; a parsed reply
// uses at least 2 bytes and no more than were given; a hit's value is at
// most max_value bytes and appears (as any value kept: a stale one too) in
// the input right after its line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/peer_reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly-sized heap copy: ASan sees any read past the end.
  char* copy = static_cast<char*>(std::malloc(size == 0 ? 1 : size));
  for (size_t i = 0; i < size; ++i) copy[i] = static_cast<char>(data[i]);
  std::string_view in(copy, size);
  constexpr size_t kMaxValue = 4096;
  while (!in.empty()) {
    herdless::PeerReply reply;
    size_t used = 0;
    const herdless::PeerParse p = herdless::ParsePeerReply(in, kMaxValue, &reply, &used);
    if (p != herdless::PeerParse::kDone) break;
    if (used < 2 || used > in.size()) std::abort();
    if (reply.value.size() > kMaxValue) std::abort();
    if (reply.kind == herdless::PeerReply::Kind::kHit || !reply.value.empty()) {
      const size_t eol = in.find("\r\n");
      if (in.substr(eol + 2, reply.value.size()) != reply.value) std::abort();
    }
    in.remove_prefix(used);
  }
  std::free(copy);
  return 0;
}
