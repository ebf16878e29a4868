#include "protocol/meta_parser.h"

#include "protocol/key.h"
#include "protocol/numbers.h"

namespace herdless {

void SplitCommandLine(std::string_view line, CommandLine* out) {
  out->line = line;
  out->count = 0;
  size_t i = 0;
  while (out->count < CommandLine::kMaxTokens) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    const size_t start = i;
    i = FindSpace(line, i);
    out->token[out->count++] = line.substr(start, i - start);
  }
}

namespace {

// memcached's MFLAG_MAX_OPT_LENGTH: a meta line may have at most this many
// tokens, counting the command, key (and ms datalen) and the terminal token.
constexpr int kMaxMetaTokens = 20;

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr std::string_view kBadToken = "CLIENT_ERROR bad token in command line format";

LineVerdict Error(std::string_view message, uint64_t swallow = 0) {
  LineVerdict v;
  v.kind = LineVerdict::kError;
  v.error = message;
  v.swallow = swallow;
  return v;
}

// What reading one flag's token found.
enum class FlagToken : uint8_t {
  kOk,
  kBad,       // a bad token: remembered, parsing goes on
  kInvalid,   // not a flag of this command: parsing stops
};

// The numeric tokens: N R T (int32 TTLs), C E (uint64), F (uint32), J D
// (uint64), M (one char). `error` gets memcached's message for a bad one
// (F has none of its own).
FlagToken ParseNumericToken(unsigned char c, std::string_view t, bool latest, MetaArgs* args,
                            std::string_view* error) {
  std::string_view value = t.substr(1);
  // 1.6.45's flag readers refuse a flag without its number (1.6.18 reads
  // what follows it): a value that no reader takes.
  if (latest && value.empty() && c != 'M') value = "x";
  switch (c) {
    case 'N':
    case 'R':
    case 'T': {
      int32_t ttl;
      if (!ParseInt32As(value, latest, &ttl)) {
        *error = kBadToken;
        return FlagToken::kBad;
      }
      (c == 'N' ? args->N : c == 'R' ? args->R : args->T) = ttl;
      return FlagToken::kOk;
    }
    case 'E':   // 1.6.19+: the CAS the command gives the item
      if (ParseUint64As(value, latest, &args->E)) return FlagToken::kOk;
      *error = kBadToken;
      return FlagToken::kBad;
    case 'C':
      if (ParseUint64As(value, latest, &args->C)) return FlagToken::kOk;
      *error = kBadToken;
      return FlagToken::kBad;
    case 'F':
      return ParseUint32As(value, latest, &args->F) ? FlagToken::kOk : FlagToken::kBad;
    case 'M':
      if (t.size() == 2 || (latest && t.size() > 2)) {   // 1.6.45 reads the first byte
        args->M = t[1];
        return FlagToken::kOk;
      }
      if (latest) {   // a bare M: 1.6.45 reads the byte after it, never a mode
        args->M = ' ';
        return FlagToken::kOk;
      }
      *error = "CLIENT_ERROR incorrect length for M token";
      return FlagToken::kBad;
    case 'J':
      if (ParseUint64As(value, latest, &args->J)) return FlagToken::kOk;
      *error = "CLIENT_ERROR invalid numeric initial value";
      return FlagToken::kBad;
    case 'D':
      if (ParseUint64As(value, latest, &args->D)) return FlagToken::kOk;
      *error = "CLIENT_ERROR invalid numeric delta value";
      return FlagToken::kBad;
    default:
      return FlagToken::kInvalid;
  }
}

// Y<beta>, Yr or Yr<beta>: an XFetch draw, refresh-ahead, or both.
FlagToken ParseXfetchToken(std::string_view beta, MetaArgs* args, std::string_view* error) {
  if (!beta.empty() && beta[0] == 'r') {
    args->Y_refresh = true;
    beta.remove_prefix(1);
  }
  if ((!args->Y_refresh || !beta.empty()) && (!ParseDouble(beta, &args->Y) || !(args->Y > 0))) {
    *error = kBadToken;
    return FlagToken::kBad;
  }
  return FlagToken::kOk;
}

// The token of flag `c` (token `t`, the flag character first).
FlagToken ParseFlagToken(unsigned char c, std::string_view t, bool allow_y, Request* out,
                         std::string_view* error) {
  const bool latest = out->latest;
  switch (c) {
    case 'b': {
      const size_t n = Base64Decode(out->key, out->decoded_key, sizeof(out->decoded_key));
      if (n == 0) {
        *error = "CLIENT_ERROR error decoding key";
        return FlagToken::kBad;
      }
      out->decoded_key_length = static_cast<uint8_t>(n);
      out->key = std::string_view(out->decoded_key, n);
      out->key_was_base64 = true;
      return FlagToken::kOk;
    }
    case 'O':
      out->meta_args.O = t.substr(1);
      return FlagToken::kOk;
    case 'Y':
      if (!allow_y) return FlagToken::kInvalid;
      return ParseXfetchToken(t.substr(1), &out->meta_args, error);
    case 'r':   // herdless: the key's read rate, mg only
      return allow_y ? FlagToken::kOk : FlagToken::kInvalid;
    case 'c': case 'f': case 'h': case 'k': case 'l': case 'q': case 's':
    case 't': case 'u': case 'v': case 'x': case 'I': case 'P': case 'L':
      return FlagToken::kOk;
    default:
      return ParseNumericToken(c, t, latest, &out->meta_args, error);
  }
}

// Reads flag tokens [first, count) into out->meta / out->meta_args, the way
// memcached's _meta_flag_preparse does: an unknown or repeated flag stops at
// once; a bad token is remembered (the last message wins; a bad F token has
// none and leaves "bad command line format") and parsing goes on. Y and r
// are herdless's, for mg only. Returns the error, or an empty view.
std::string_view ParseMetaFlags(const CommandLine& line, int first, bool allow_y,
                                Request* out) {
  bool has_error = false;
  std::string_view error = kBadFormat;
  MetaFlags& flags = out->meta;
  for (int i = first; i < line.count; ++i) {
    const std::string_view t = line.token[i];
    const auto c = static_cast<unsigned char>(t[0]);
    // Every flag that gets past ParseFlagToken is a letter ('A'..'z', a bit of
    // `present`); any other byte stops there, so it is never seen twice.
    if (c >= 127 || (c >= 'A' && c <= 'z' && flags.Has(static_cast<char>(c)))) {
      return "CLIENT_ERROR duplicate flag";
    }
    const FlagToken verdict = ParseFlagToken(c, t, allow_y, out, &error);
    if (verdict == FlagToken::kInvalid) return "CLIENT_ERROR invalid flag";
    if (verdict == FlagToken::kBad) has_error = true;
    flags.list[flags.count++] = MetaFlags::Flag{static_cast<char>(c), t.substr(1)};
    flags.present |= MetaFlags::Bit(static_cast<char>(c));
  }
  return has_error ? error : std::string_view();
}

// memcached counts the 'O' in the opaque's length: 31 bytes of opaque at most.
bool OpaqueTooLong(const Request& r) {
  return r.meta.Has('O') && r.meta_args.O.size() + 1 > static_cast<size_t>(kMaxOpaqueLength);
}

LineVerdict ParseMetaDebug(const CommandLine& line, Request* out) {
  out->command = Command::kMetaDebug;
  if (line.ntokens() < 3 || !IsValidKeyWord(line.token[1])) {
    return Error(kBadFormat);
  }
  out->key = line.token[1];
  if (line.ntokens() >= 4 && line.token[2] == "b") {
    const size_t n = Base64Decode(out->key, out->decoded_key, sizeof(out->decoded_key));
    if (n == 0) return Error(kBadFormat);
    out->decoded_key_length = static_cast<uint8_t>(n);
    out->key = std::string_view(out->decoded_key, n);
    out->key_was_base64 = true;
  }
  return LineVerdict();
}

LineVerdict ParseMetaGet(const CommandLine& line, Request* out) {
  out->command = Command::kMetaGet;
  if (!IsValidKeyWord(line.token[1])) return Error(kBadFormat);
  if (line.ntokens() > kMaxMetaTokens) return Error("CLIENT_ERROR options flags are too long");
  out->key = line.token[1];
  const std::string_view error = ParseMetaFlags(line, 2, /*allow_y=*/true, out);
  if (!error.empty()) return Error(error);
  if (OpaqueTooLong(*out)) return Error("CLIENT_ERROR opaque token too long");
  return LineVerdict();
}

LineVerdict ParseMetaSet(const CommandLine& line, Request* out) {
  out->command = Command::kMetaSet;
  if (!IsValidKeyWord(line.token[1])) return Error(kBadFormat);
  if (line.ntokens() == 3) return Error(kBadFormat);
  if (line.ntokens() > kMaxMetaTokens) return Error("CLIENT_ERROR options flags too long");
  int32_t length;
  if (!ParseInt32As(line.token[2], line.latest, &length) || length < 0 || length > INT32_MAX - 2) {
    return Error(kBadFormat);
  }
  out->key = line.token[1];
  out->value_length = static_cast<uint32_t>(length);
  // From here on memcached knows the block's size and swallows it on error.
  const uint64_t block = uint64_t{out->value_length} + 2;
  const std::string_view error = ParseMetaFlags(line, 3, /*allow_y=*/false, out);
  if (!error.empty()) return Error(error, block);
  switch (out->meta_args.M) {
    case 0: case 'E': case 'A': case 'P': case 'R': case 'S':
      break;
    default:
      return Error("CLIENT_ERROR invalid mode for ms M token", block);
  }
  if (OpaqueTooLong(*out)) return Error("CLIENT_ERROR opaque token too long", block);
  LineVerdict v;
  v.expects_data = true;
  return v;
}

// md and ma report every flag error as one message (1.6.18 ignores the
// specific one).
LineVerdict ParseMetaDeleteOrArithmetic(const CommandLine& line, Command command, Request* out) {
  out->command = command;
  if (!IsValidKeyWord(line.token[1])) return Error(kBadFormat);
  if (line.ntokens() > kMaxMetaTokens) return Error("CLIENT_ERROR options flags too long");
  out->key = line.token[1];
  const std::string_view flag_error = ParseMetaFlags(line, 2, /*allow_y=*/false, out);
  if (!flag_error.empty()) {
    // 1.6.45's md names the error as mg and ms do (its ma does not).
    const bool named = line.latest && command == Command::kMetaDelete;
    return Error(named ? flag_error : "CLIENT_ERROR invalid or duplicate flag");
  }
  if (command == Command::kMetaArithmetic) {
    switch (out->meta_args.M) {
      case 0: case 'I': case '+': case 'D': case '-':
        break;
      default:
        return Error("CLIENT_ERROR invalid mode for ma M token");
    }
  }
  if (OpaqueTooLong(*out)) return Error("CLIENT_ERROR opaque token too long");
  return LineVerdict();
}

// 1.6.45's tokenizer gives up on a flag word that starts with neither a byte
// of 'A'..'z' nor a digit: the whole line is a bad format, before any flag is
// read (so ms's data is not swallowed: it is read as the next line).
bool HasUntokenizableFlag(const CommandLine& line, int first) {
  for (int i = first; i < line.count; ++i) {
    const auto c = static_cast<unsigned char>(line.token[i][0]);
    if (!(c >= 'A' && c <= 'z') && !(c >= '0' && c <= '9')) return true;
  }
  return false;
}

}  // namespace

LineVerdict ParseMetaLine(const CommandLine& line, Request* out) {
  const char which = line.token[0][1];
  if (which == 'n') {
    out->command = Command::kMetaNoop;
    return LineVerdict();
  }
  if (which != 'e' && which != 'g' && which != 's' && which != 'd' && which != 'a') return Error("ERROR");
  if (line.latest && HasUntokenizableFlag(line, which == 's' ? 3 : 2)) return Error(kBadFormat);
  if (which == 'e') return ParseMetaDebug(line, out);
  if (line.ntokens() < 3) return Error("ERROR");
  switch (which) {
    case 'g': return ParseMetaGet(line, out);
    case 's': return ParseMetaSet(line, out);
    case 'd': return ParseMetaDeleteOrArithmetic(line, Command::kMetaDelete, out);
    default:  return ParseMetaDeleteOrArithmetic(line, Command::kMetaArithmetic, out);
  }
}

}  // namespace herdless
