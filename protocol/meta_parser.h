// MetaParser: the meta commands (mg ms md ma mn me) of memcached 1.6.18, as
// one step of ParseRequest (text_parser.h). Also home of the command-line
// tokenizer both parsers and the text executor share, so they split lines
// identically.
//
// Flags follow memcached, which checks one flag table for every meta command:
//   b c f h k l q s t u v O P L I   (no token, or a token that is ignored)
//   N R T (int32 TTLs)  C (uint64)  F (uint32)  D J (uint64)  M (one char)
// plus the flags 1.6.19+ added, always accepted (a 1.6.18 client never sends
// them): `E<cas>` (uint64: the CAS the command gives the item) and `x` (md:
// empty the value). On mg only, herdless's own `Y<beta>` (a positive
// decimal), `Yr` or `Yr<beta>` (refresh-ahead, with or without XFetch) and `r`
// (return the read rate); no memcached up to 1.6.45 uses Y or r. The executor
// ignores flags that do not apply to its command, as memcached does.
#ifndef HERDLESS_PROTOCOL_META_PARSER_H_
#define HERDLESS_PROTOCOL_META_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/request.h"

namespace herdless {

// One request line (without "\r\n", cut at the first NUL) split on ' ' as
// memcached's tokenize_command splits it: runs of spaces separate tokens,
// nothing else does (a tab belongs to its token). At most kMaxTokens tokens
// are split off; the remainder of a longer line is left unsplit (only `get`
// reads past it, through `line`).
struct CommandLine {
  static constexpr int kMaxTokens = 23;   // memcached MAX_TOKENS 24, minus the terminal
  // token[count..] are left unset: a line is split on every request, and
  // readers check `count` before they read a token.
  CommandLine() {}
  std::string_view line;
  union {
    std::string_view token[kMaxTokens];
  };
  int count = 0;
  bool latest = false;   // -o compat=1.6.45: parse as 1.6.45 where it differs

  // memcached's `ntokens`: the tokens plus its terminal token.
  int ntokens() const { return count + 1; }
  // The line from the start of token i to its end (i < count).
  std::string_view From(int i) const {
    return line.substr(static_cast<size_t>(token[i].data() - line.data()));
  }
};

void SplitCommandLine(std::string_view line, CommandLine* out);

// The index of the first byte of `s` at or after `from` that `marks` flags,
// or s.size(). Request lines are scanned on every request, so eight bytes at
// a time: marks(x) sets the high bit of the bytes of the 8-byte word x it
// flags, and exactly at the lowest one (a borrow may flag bytes above it);
// `is_marked` says the same of a single byte, for the tail.
template <typename Marks, typename IsMarked>
size_t FindFirstMarked(std::string_view s, size_t from, Marks marks, IsMarked is_marked) {
  size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    const uint64_t flagged = marks(x);
    // Little-endian: the lowest byte is the first in memory.
    if (flagged != 0) return i + static_cast<size_t>(__builtin_ctzll(flagged) >> 3);
  }
  while (i < s.size() && !is_marked(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

inline constexpr uint64_t kEveryByte = 0x0101010101010101ull;
inline constexpr uint64_t kEveryHighBit = 0x8080808080808080ull;

// The index of the first ' ' in `s` at or after `from`, or s.size().
inline size_t FindSpace(std::string_view s, size_t from) {
  return FindFirstMarked(
      s, from,
      [](uint64_t x) {
        x ^= kEveryByte * ' ';   // a space is now a zero byte
        return (x - kEveryByte) & ~x & kEveryHighBit;
      },
      [](unsigned char c) { return c == ' '; });
}

// The index of the first byte at or below ' ' (a space, '\r', '\n', any
// control byte) in `s` at or after `from`, or s.size().
inline size_t FindSpaceOrControl(std::string_view s, size_t from) {
  return FindFirstMarked(
      s, from, [](uint64_t x) { return (x - kEveryByte * 0x21) & ~x & kEveryHighBit; },
      [](unsigned char c) { return c <= ' '; });
}

// The words of a space-separated list one at a time, split as
// SplitCommandLine splits (for lists of any length: a get's keys, an
// operator command's arguments).
class WordIterator {
 public:
  explicit WordIterator(std::string_view words) : rest_(words) {}
  bool Next(std::string_view* word) {
    while (!rest_.empty() && rest_.front() == ' ') rest_.remove_prefix(1);
    if (rest_.empty()) return false;
    const size_t end = FindSpace(rest_, 0);
    *word = rest_.substr(0, end);
    rest_.remove_prefix(end);
    return true;
  }

 private:
  std::string_view rest_;
};

// An operator command's word (`stats settings`, `slabs automove ratio`,
// `watch fetchers`): memcached 1.6.18 takes the word alone; 1.6.45's parser
// (-o compat=1.6.45) takes any prefix of it, as its strncmp over the given
// word's length does (`stats s` is `stats settings`).
inline bool WordMatches(std::string_view given, std::string_view word, bool prefix) {
  if (!prefix) return given == word;
  return !given.empty() && given.size() <= word.size() && word.substr(0, given.size()) == given;
}

// What parsing one command line decided; the data block, if any, follows.
struct LineVerdict {
  enum Kind : uint8_t { kRequest, kError, kClose };
  Kind kind = kRequest;
  std::string_view error;     // kError: reply this line (static string)
  bool suppress = false;      // kError: classic noreply hides the reply
  uint64_t swallow = 0;       // kError: bytes to discard after the line
  bool expects_data = false;  // kRequest: value_length bytes + "\r\n" follow
};

// Parses a meta command line (token[0] is a two-byte "m?" word) into *out.
// ms sets value_length and expects_data; errors found after ms's datalen
// swallow the data block, as memcached does. Meta errors are never
// suppressed: `q` is the executor's business.
LineVerdict ParseMetaLine(const CommandLine& line, Request* out);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_META_PARSER_H_
