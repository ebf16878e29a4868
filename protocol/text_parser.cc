// ParseRequest follows memcached 1.6.18's try_read_command_ascii and
// process_command_ascii: find the line, split it on spaces, dispatch on the
// command word with memcached's token-count checks, then (storage commands)
// wait for the data block. Words never hold a space, '\n' or NUL, so the
// key check IsValidKeyWord makes is memcached's: at most 250 bytes.
// Reading top to bottom: helpers for each command family, the dispatcher,
// then ParseRequest.
#include "protocol/text_parser.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>

#include "protocol/key.h"
#include "protocol/meta_parser.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

constexpr std::string_view kUnknown = "ERROR";
constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr std::string_view kBadExptime = "CLIENT_ERROR invalid exptime argument";

LineVerdict Ok() { return LineVerdict(); }

LineVerdict Error(std::string_view message, bool suppress = false) {
  LineVerdict v;
  v.kind = LineVerdict::kError;
  v.error = message;
  v.suppress = suppress;
  return v;
}

LineVerdict ExpectData() {
  LineVerdict v;
  v.expects_data = true;
  return v;
}

// Clears what a previous request left, without touching the large arrays
// (decoded_key, meta.list) that count/length fields guard.
void ResetRequest(Request* r) {
  r->command = Command::kGet;
  r->noreply = false;
  r->key = {};
  r->keys = {};
  r->client_flags = 0;
  r->exptime = 0;
  r->cas_unique = 0;
  r->value_length = 0;
  r->value = {};
  r->value_too_large = false;
  r->delta = 0;
  r->has_number = false;
  r->number = 0;
  r->args = {};
  r->meta.count = 0;
  r->meta.present = 0;
  r->meta_args = MetaArgs();
  r->key_was_base64 = false;
  r->decoded_key_length = 0;
}

// memcached's set_noreply_maybe: the last word is "noreply". From then on
// every reply of the command, errors included, is suppressed.
bool TrailingNoreply(const CommandLine& l) {
  return l.count > 0 && l.token[l.count - 1] == "noreply";
}

// A command's word count: memcached 1.6.18 wants exactly `min` words or one
// more (noreply); 1.6.45 (-o compat=1.6.45) wants at least `min` and ignores
// the rest.
bool WordCountOk(const CommandLine& l, int min) {
  return l.latest ? l.count >= min : (l.count == min || l.count == min + 1);
}

std::string_view TrimTrailingSpaces(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The words after the command (stats, shutdown), spaces trimmed.
std::string_view ArgsAfterCommand(const CommandLine& l) {
  return l.count >= 2 ? TrimTrailingSpaces(l.From(1)) : std::string_view();
}

// Where a store command's words stand: set add replace append prepend
// <key> <flags> <exptime> <bytes> [noreply]; cas adds <cas unique>;
// mcrouter's lease-set <key> <token> <flags> <exptime> <bytes> [noreply].
struct StoreWords {
  int count;      // without noreply
  int flags_at;   // then exptime and bytes
  int cas_at;     // the CAS or lease token; 0: none
};
constexpr StoreWords kStoreWords{5, 2, 0};
constexpr StoreWords kCasWords{6, 2, 5};
constexpr StoreWords kLeaseSetWords{6, 3, 2};

// A store command's words, their count checked. A word where noreply may
// stand is otherwise ignored; a word that does not read, or a length out of
// range, is memcached's bad command line format. (The words' places are a
// template argument so that each form reads its tokens at constant places.)
template <StoreWords w>
LineVerdict ParseStorageFields(const CommandLine& l, Command command, Request* out) {
  out->command = command;
  out->noreply = TrailingNoreply(l);
  const bool quiet = out->noreply;
  if (!IsValidKeyWord(l.token[1])) return Error(kBadFormat, quiet);
  out->key = l.token[1];
  int32_t exptime;
  int32_t length;
  // (1.6.45 reads the flags and exptime as 1.6.18 did, the length and the CAS with its
  // token readers.)
  if (!ParseUint32(l.token[w.flags_at], &out->client_flags) ||
      !ParseInt32(l.token[w.flags_at + 1], &exptime) ||
      !ParseInt32As(l.token[w.flags_at + 2], l.latest, &length) ||
      (w.cas_at != 0 && !ParseUint64As(l.token[w.cas_at], l.latest, &out->cas_unique)) || length < 0 ||
      length > INT32_MAX - 2) {
    return Error(kBadFormat, quiet);
  }
  out->exptime = exptime;
  out->value_length = static_cast<uint32_t>(length);
  return ExpectData();
}

// 1.6.45 (-o compat=1.6.45): at least 5 words (more are ignored), and once
// <bytes> is read every error swallows the data block (a cas without its
// unique too).
template <StoreWords w>
LineVerdict ParseStorageAs1645(const CommandLine& l, Command command, Request* out) {
  int32_t length;
  if (l.count < kStoreWords.count || !ParseTokenInt32(l.token[4], &length) || length < 0 ||
      length > INT32_MAX - 2) {
    return Error(kBadFormat);
  }
  out->noreply = TrailingNoreply(l);
  LineVerdict swallowed = Error(kBadFormat, out->noreply);
  swallowed.swallow = uint64_t(length) + 2;
  if (l.count < w.count) return swallowed;
  const LineVerdict v = ParseStorageFields<w>(l, command, out);
  return v.kind == LineVerdict::kError ? swallowed : v;
}

// lease-set (mcrouter's, not memcached's) keeps its word count under compat.
template <StoreWords w>
LineVerdict ParseStorage(const CommandLine& l, Command command, Request* out) {
  if (l.latest && command != Command::kLeaseSet) return ParseStorageAs1645<w>(l, command, out);
  if (l.count != w.count && l.count != w.count + 1) return Error(kUnknown);
  return ParseStorageFields<w>(l, command, out);
}

// get/gets <key>*, gat/gats <exptime> <key>*. Keys are unbounded in number
// (memcached re-tokenizes past its 24-token window), so they are checked on
// the whole line. gat with no key is valid and answers END.
LineVerdict ParseRetrieval(const CommandLine& l, Command command, Request* out) {
  if (l.count < 2) return Error(kUnknown);
  out->command = command;
  int first_key = 1;
  const bool touch = command == Command::kGat || command == Command::kGats;
  if (touch && l.latest && l.count < 3) return Error(kBadFormat);   // 1.6.45: gat needs a key
  if (command == Command::kGat || command == Command::kGats) {
    int32_t exptime;
    if (!ParseInt32As(l.token[1], l.latest, &exptime)) return Error(kBadExptime);
    out->exptime = exptime;
    first_key = 2;
  }
  if (first_key >= l.count) return Ok();
  const std::string_view keys = TrimTrailingSpaces(l.From(first_key));
  if (l.count < CommandLine::kMaxTokens) {
    // The split words are all the keys.
    for (int i = first_key; i < l.count; ++i) {
      if (!IsValidKeyWord(l.token[i])) return Error(kBadFormat);
    }
    if (l.count == first_key + 1) out->key = l.token[first_key];
  } else {
    // The line goes on past the words split off.
    WordIterator words(keys);
    std::string_view key;
    while (words.Next(&key)) {
      if (!IsValidKeyWord(key)) return Error(kBadFormat);
    }
  }
  out->keys = keys;
  return Ok();
}

// delete <key> [0] [noreply]: the legacy hold time is accepted only as "0".
// memcached's proxy (1.6.45 --enable-proxy) forwards a client's noreply as
// "noreplY", so that the server answers and the proxy still learns the
// outcome; 1.6.45 ignores delete's extra words, 1.6.18 refuses the line, which
// would make every `delete <key> noreply` through the proxy an error. herdless
// takes the word where noreply may stand, and answers.
LineVerdict ParseDelete(const CommandLine& l, Request* out) {
  if (l.count < 2 || (l.count > 4 && !l.latest)) return Error(kUnknown);
  out->command = Command::kDelete;
  if (l.latest) {
    out->noreply = TrailingNoreply(l);   // 1.6.45 ignores the other words
  } else if (l.count > 2) {
    const bool hold_is_zero = l.token[2] == "0";
    out->noreply = TrailingNoreply(l);
    const bool last_is_noreply = out->noreply || l.token[l.count - 1] == "noreplY";
    const bool valid = (l.count == 3 && (hold_is_zero || last_is_noreply)) ||
                       (l.count == 4 && hold_is_zero && last_is_noreply);
    if (!valid) {
      return Error("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
                   out->noreply);
    }
  }
  if (!IsValidKeyWord(l.token[1])) return Error(kBadFormat, out->noreply);
  out->key = l.token[1];
  return Ok();
}

// incr/decr <key> <delta> [noreply]
LineVerdict ParseArithmetic(const CommandLine& l, Command command, Request* out) {
  if (!WordCountOk(l, 3)) return Error(kUnknown);
  out->command = command;
  out->noreply = TrailingNoreply(l);
  if (!IsValidKeyWord(l.token[1])) return Error(kBadFormat, out->noreply);
  out->key = l.token[1];
  if (!ParseUint64As(l.token[2], l.latest, &out->delta)) {
    return Error("CLIENT_ERROR invalid numeric delta argument", out->noreply);
  }
  return Ok();
}

// touch <key> <exptime> [noreply]
LineVerdict ParseTouch(const CommandLine& l, Request* out) {
  if (!WordCountOk(l, 3)) return Error(kUnknown);
  out->command = Command::kTouch;
  out->noreply = TrailingNoreply(l);
  if (!IsValidKeyWord(l.token[1])) return Error(kBadFormat, out->noreply);
  out->key = l.token[1];
  int32_t exptime;
  if (!ParseInt32As(l.token[2], l.latest, &exptime)) return Error(kBadExptime, out->noreply);
  out->exptime = exptime;
  return Ok();
}

// flush_all [delay] [noreply]. memcached reads the delay from the second
// word whenever the line is not just "flush_all [noreply]", and ignores a
// third word that is not noreply.
LineVerdict ParseFlushAll(const CommandLine& l, Request* out) {
  if (l.count > 3 && !l.latest) return Error(kUnknown);
  out->command = Command::kFlushAll;
  out->noreply = TrailingNoreply(l);
  if (l.count != (out->noreply ? 2 : 1)) {
    int32_t delay;
    if (!ParseInt32As(l.token[1], l.latest, &delay)) return Error(kBadExptime, out->noreply);
    out->has_number = true;
    out->number = delay;
  }
  return Ok();
}

// verbosity <level> [noreply]; cache_memlimit <MB> [noreply] (whose bad
// number memcached answers with a bare ERROR).
LineVerdict ParseNumberCommand(const CommandLine& l, Command command, Request* out) {
  if (!WordCountOk(l, 2)) {
    // 1.6.45: verbosity without a level is a bad format (ParseLine says so).
    return Error(kUnknown);
  }
  out->command = command;
  out->noreply = TrailingNoreply(l);
  uint32_t n;
  if (!ParseUint32As(l.token[1], l.latest, &n)) {
    return Error(command == Command::kVerbosity ? kBadFormat : kUnknown, out->noreply);
  }
  out->has_number = true;
  out->number = n;
  return Ok();
}

// mcrouter: lease-get <key>
LineVerdict ParseLeaseGet(const CommandLine& l, Request* out) {
  if (l.count != 2) return Error(kUnknown);
  out->command = Command::kLeaseGet;
  if (!IsValidKeyWord(l.token[1])) return Error(kBadFormat);
  out->key = l.token[1];
  return Ok();
}

LineVerdict Simple(Command command, Request* out) {
  out->command = command;
  return Ok();
}

// extstore <words>: to its executor whole, with 1.6.18's trailing noreply
// (1.6.45's: OperatorCommand takes it off and hides the reply).
LineVerdict ParseExtstore(const CommandLine& l, Request* out) {
  out->args = ArgsAfterCommand(l);
  out->noreply = !l.latest && TrailingNoreply(l);
  return Simple(Command::kExtstore, out);
}

// A line no command takes. memcached hangs up on what looks like an HTTP
// request.
LineVerdict UnknownCommand(const CommandLine& l) {
  if (l.count > 0 && l.token[l.count - 1].substr(0, 5) == "HTTP/") {
    LineVerdict v;
    v.kind = LineVerdict::kClose;
    return v;
  }
  return Error(kUnknown);
}

// Operator commands whose words after the command go to their executor whole.
constexpr std::pair<std::string_view, Command> kOperatorCommands[] = {
    {"lru_crawler", Command::kLruCrawler}, {"lru", Command::kLru}, {"watch", Command::kWatch},
    {"ring", Command::kRing}, {"warm", Command::kWarm}};

// process_command_ascii's dispatch, in its order: the first byte picks a
// family, and a command word it does not know there is "ERROR".
LineVerdict ParseLineAs1618(const CommandLine& l, Request* out) {
  if (l.count == 0 || l.token[0].size() < 2) return Error(kUnknown);
  const std::string_view word = l.token[0];
  switch (word[0]) {
    case 'm':
      if (word.size() == 2) return ParseMetaLine(l, out);
      break;
    case 'g':
      if (l.count < 2) return Error(kUnknown);
      if (word == "get") return ParseRetrieval(l, Command::kGet, out);
      if (word == "gets") return ParseRetrieval(l, Command::kGets, out);
      if (word == "gat") return ParseRetrieval(l, Command::kGat, out);
      if (word == "gats") return ParseRetrieval(l, Command::kGats, out);
      return Error(kUnknown);
    case 's':
      if (word == "set") return ParseStorage<kStoreWords>(l, Command::kSet, out);
      if (word == "stats") {
        out->args = ArgsAfterCommand(l);
        return Simple(Command::kStats, out);
      }
      if (word == "shutdown") {
        out->args = ArgsAfterCommand(l);
        return Simple(Command::kShutdown, out);
      }
      if (word == "slabs") {
        out->args = ArgsAfterCommand(l);
        return Simple(Command::kSlabs, out);
      }
      return Error(kUnknown);
    case 'a':
      if (word == "add") return ParseStorage<kStoreWords>(l, Command::kAdd, out);
      if (word == "append") return ParseStorage<kStoreWords>(l, Command::kAppend, out);
      return Error(kUnknown);
    case 'c':
      if (word == "cas") return ParseStorage<kCasWords>(l, Command::kCas, out);
      if (word == "cache_memlimit") return ParseNumberCommand(l, Command::kCacheMemlimit, out);
      return Error(kUnknown);
    case 'i':
      if (word == "incr") return ParseArithmetic(l, Command::kIncr, out);
      return Error(kUnknown);
    case 'd':
      if (word == "delete") return ParseDelete(l, out);
      if (word == "decr") return ParseArithmetic(l, Command::kDecr, out);
      return Error(kUnknown);
    case 't':
      if (word == "touch") return ParseTouch(l, out);
      return Error(kUnknown);
    default:
      break;
  }
  if (word == "replace") return ParseStorage<kStoreWords>(l, Command::kReplace, out);
  if (word == "prepend") return ParseStorage<kStoreWords>(l, Command::kPrepend, out);
  if (word == "bget" && !l.latest) return ParseRetrieval(l, Command::kGet, out);   // ancient alias, gone in 1.6.45
  if (word == "flush_all") return ParseFlushAll(l, out);
  if (word == "version") return Simple(Command::kVersion, out);
  if (word == "quit") return Simple(Command::kQuit, out);
  if (word == "verbosity") return ParseNumberCommand(l, Command::kVerbosity, out);
  if (word == "lease-get") return ParseLeaseGet(l, out);
  for (const auto& [name, command] : kOperatorCommands) {
    if (word == name) {
      out->args = ArgsAfterCommand(l);
      return Simple(command, out);
    }
  }
  if (word == "extstore") return ParseExtstore(l, out);
  if (word == "lease-set") return ParseStorage<kLeaseSetWords>(l, Command::kLeaseSet, out);
  if (word == "refresh_certs") {
    // memcached: any words may follow; a last "noreply" hides only the OK.
    out->noreply = TrailingNoreply(l);
    return Simple(Command::kRefreshCerts, out);
  }
  return UnknownCommand(l);
}

template <size_t N>
bool IsOneOf(std::string_view word, const std::string_view (&words)[N]) {
  return std::find(std::begin(words), std::end(words), word) != std::end(words);
}

// 1.6.45 takes the command word up to the line's first space, so a line that
// starts with a space names no command it parses; then it looks the first
// word up in its table of operator commands (these, and herdless's ring and
// warm), and anything else is unknown.
constexpr std::string_view kOperatorWords1645[] = {
    "shutdown", "slabs", "cache_memlimit", "flush_all", "lru_crawler", "verbosity", "lru",
    "extstore", "refresh_certs", "ring", "warm"};

// The commands 1.6.45's parser knows by their word count: too few words (or,
// in 1.6.18, too many) is its "bad command line format", not "ERROR".
constexpr std::string_view kCountedCommands[] = {
    "get", "gets", "gat", "gats", "set", "add", "cas", "append", "prepend", "replace",
    "incr", "decr", "touch", "delete", "mg", "ms", "md", "ma", "me", "verbosity"};

// `leading_space`: the line's first byte is a space.
LineVerdict ParseLine(const CommandLine& l, bool leading_space, Request* out) {
  const bool no_command =
      l.latest && leading_space && (l.count == 0 || !IsOneOf(l.token[0], kOperatorWords1645));
  LineVerdict v = no_command ? UnknownCommand(l) : ParseLineAs1618(l, out);
  if (l.latest && v.kind == LineVerdict::kError && v.error == kUnknown) {
    if (!no_command && l.count > 0 && IsOneOf(l.token[0], kCountedCommands)) {
      v.error = kBadFormat;
    } else {
      // 1.6.45 reads a last "noreply" before it knows the command: it hides the ERROR.
      v.suppress = v.suppress || TrailingNoreply(l);
    }
  }
  return v;
}

// "get <key>" or "gets <key>": one key of 1..kMaxKeyLength bytes above ' '
// (so no space, control byte or NUL), nothing after it. What ParseLine makes
// of such a line, without splitting it, in a reset request; any other line
// leaves the request as it was.
bool ParseSingleKeyGet(std::string_view line, Request* out) {
  size_t key_at;
  Command command;
  if (line.size() > 4 && std::memcmp(line.data(), "get ", 4) == 0) {
    key_at = 4;
    command = Command::kGet;
  } else if (line.size() > 5 && std::memcmp(line.data(), "gets ", 5) == 0) {
    key_at = 5;
    command = Command::kGets;
  } else {
    return false;
  }
  const std::string_view key = line.substr(key_at);
  if (key.size() > kMaxKeyLength || FindSpaceOrControl(key, 0) != key.size()) return false;
  out->command = command;
  out->key = key;
  out->keys = key;
  return true;
}

// A command line the general way, into a reset request: as memcached reads it
// with strlen, only up to a NUL byte, split into words.
LineVerdict ParseCommandLine(std::string_view line, bool latest, Request* out) {
  if (const void* nul = std::memchr(line.data(), '\0', line.size())) {
    line = line.substr(0, static_cast<size_t>(static_cast<const char*>(nul) - line.data()));
  }
  CommandLine words;
  SplitCommandLine(line, &words);
  words.latest = latest;
  return ParseLine(words, !line.empty() && line[0] == ' ', out);
}

// A line with no '\n' yet may keep growing only if it is a multiget
// (memcached: at most 100 leading spaces, then "get " or "gets ").
bool MayBeLongGet(const char* buf, size_t len) {
  size_t i = 0;
  while (i < len && buf[i] == ' ') ++i;
  if (i > 100) return false;
  const std::string_view rest(buf + i, len - i);
  return rest.substr(0, 4) == "get " || rest.substr(0, 5) == "gets ";
}

}  // namespace

ParseResult ParseRequest(const char* buf, size_t len, const ParserLimits& limits, Request* out,
                         bool shortcuts) {
  ParseResult result;
  if (len == 0) return result;
  const char* newline = static_cast<const char*>(std::memchr(buf, '\n', len));
  if (newline == nullptr) {
    if (len > limits.max_line_length && !MayBeLongGet(buf, len)) {
      result.status = ParseStatus::kClose;
    }
    return result;
  }
  const size_t line_end = static_cast<size_t>(newline - buf) + 1;
  if (limits.latest && line_end < 4) {
    // 1.6.45: a line shorter than a two-byte command and its "\r\n".
    ResetRequest(out);
    result.status = ParseStatus::kError;
    result.consumed = line_end;
    result.error = kBadFormat;
    return result;
  }

  // The command line: without "\r\n" (or "\n").
  std::string_view line(buf, line_end - 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ResetRequest(out);
  out->latest = limits.latest;
  LineVerdict verdict;   // a request: what the shortcut finds
  if (!shortcuts || !ParseSingleKeyGet(line, out)) verdict = ParseCommandLine(line, limits.latest, out);

  switch (verdict.kind) {
    case LineVerdict::kClose:
      result.status = ParseStatus::kClose;
      result.consumed = line_end;
      return result;
    case LineVerdict::kError:
      result.status = ParseStatus::kError;
      result.consumed = line_end;
      result.swallow = verdict.swallow;
      result.error = verdict.error;
      result.suppress = verdict.suppress;
      return result;
    case LineVerdict::kRequest:
      break;
  }
  result.status = ParseStatus::kRequest;
  result.consumed = line_end;
  if (!verdict.expects_data) return result;

  // Storage commands: the block is <bytes> of data and "\r\n".
  const uint64_t block = uint64_t{out->value_length} + 2;
  if (limits.max_value_length != nullptr &&
      out->value_length > limits.max_value_length(limits.ctx, out->key.size())) {
    out->value_too_large = true;
    result.swallow = block;
    return result;
  }
  if (len - line_end < block) return ParseResult();   // kNeedMore
  const char* data = buf + line_end;
  result.consumed = line_end + block;
  if (data[out->value_length] != '\r' || data[out->value_length + 1] != '\n') {
    // memcached reads exactly <bytes>+2 bytes, refuses them, and parses
    // whatever follows as the next command.
    result.status = ParseStatus::kError;
    result.error = "CLIENT_ERROR bad data chunk";
    result.suppress = out->noreply;
    return result;
  }
  out->value = std::string_view(data, out->value_length);
  return result;
}

}  // namespace herdless
