#include "protocol/binary_parser.h"

#include <cstring>

#include "protocol/request.h"

namespace herdless {

namespace {

using namespace binary;

// memcached folds each quiet opcode into its loud one before dispatching.
uint8_t FoldQuiet(uint8_t opcode, bool* quiet) {
  *quiet = true;
  switch (opcode) {
    case kSetQ: return kSet;
    case kAddQ: return kAdd;
    case kReplaceQ: return kReplace;
    case kDeleteQ: return kDelete;
    case kIncrementQ: return kIncrement;
    case kDecrementQ: return kDecrement;
    case kQuitQ: return kQuit;
    case kFlushQ: return kFlush;
    case kAppendQ: return kAppend;
    case kPrependQ: return kPrepend;
    case kGetQ: return kGet;
    case kGetKQ: return kGetK;
    case kGatQ: return kGat;
    case kGatKQ: return kGatK;
    default: break;
  }
  *quiet = false;
  return opcode;
}

enum class Shape { kUnknown, kInvalid, kPlain, kValue };

// Whether the lengths are ones memcached's dispatch_bin_command accepts for
// this (folded) opcode, and whether the body beyond extras and key is a value.
Shape ShapeOf(uint8_t command, uint8_t ext, uint16_t key, uint32_t body) {
  const auto ok = [](bool valid) { return valid ? Shape::kPlain : Shape::kInvalid; };
  switch (command) {
    case kVersion:
    case kNoop:
    case kQuit:
    case kSaslListMechs:
      return ok(ext == 0 && key == 0 && body == 0);
    case kFlush:
      return ok(key == 0 && body == ext && (ext == 0 || ext == 4));
    case kSet:
    case kAdd:
    case kReplace:
      return ext == 8 && key != 0 && body >= uint32_t{key} + 8u ? Shape::kValue : Shape::kInvalid;
    case kGet:
    case kGetK:
      return ok(ext == 0 && body == key && key > 0);
    case kDelete:
      return ok(key > 0 && ext == 0 && body == key);
    case kIncrement:
    case kDecrement:
      return ok(key > 0 && ext == 20 && body == uint32_t{key} + ext);
    case kAppend:
    case kPrepend:
    case kSaslAuth:
    case kSaslStep:
      return key > 0 && ext == 0 ? Shape::kValue : Shape::kInvalid;
    case kStat:
      return ok(ext == 0);
    case kTouch:
    case kGat:
    case kGatK:
      return ok(ext == 4 && key != 0);
    default:
      return Shape::kUnknown;
  }
}

void DecodeExtras(const char* ext, BinaryRequest* r) {
  switch (r->command) {
    case kSet:
    case kAdd:
    case kReplace:
      r->flags = LoadBig32(ext);
      r->exptime = LoadBig32(ext + 4);
      break;
    case kIncrement:
    case kDecrement:
      r->delta = LoadBig64(ext);
      r->initial = LoadBig64(ext + 8);
      r->exptime = LoadBig32(ext + 16);
      break;
    case kTouch:
    case kGat:
    case kGatK:
      r->exptime = LoadBig32(ext);
      break;
    case kFlush:
      r->has_exptime = r->extlen == 4;
      if (r->has_exptime) r->exptime = LoadBig32(ext);
      break;
    default:
      break;
  }
}

BinaryParseResult Error(uint16_t status, bool close, size_t consumed, const BinaryRequest& r) {
  BinaryParseResult res;
  res.status = ParseStatus::kError;
  res.error = status;
  res.close = close;
  res.consumed = consumed;
  res.opcode = r.opcode;
  res.opaque = r.opaque;
  return res;
}

}  // namespace

BinaryParseResult ParseBinaryRequest(const char* buf, size_t len, const ParserLimits& limits,
                                     BinaryRequest* out) {
  BinaryParseResult res;
  if (len < kHeaderSize) return res;
  if (static_cast<unsigned char>(buf[0]) != kRequestMagic) {
    res.status = ParseStatus::kClose;
    return res;
  }
  BinaryRequest& r = *out;   // filled in place: a copy of it cost ~30 instructions a request
  r = BinaryRequest();
  r.opcode = static_cast<uint8_t>(buf[1]);
  r.keylen = LoadBig16(buf + 2);
  r.extlen = static_cast<uint8_t>(buf[4]);
  // buf[5] (data type) and buf[6..7] (vbucket) are ignored, as memcached does.
  r.bodylen = LoadBig32(buf + 8);
  std::memcpy(&r.opaque, buf + 12, sizeof(r.opaque));
  r.cas = LoadBig64(buf + 16);
  // memcached reads header, extras and key before looking at anything else.
  const size_t head = kHeaderSize + r.extlen + r.keylen;
  if (len < head) return res;

  if (r.keylen > r.bodylen || uint32_t{r.keylen} + r.extlen > r.bodylen) {
    return Error(kUnknownCommand, /*close=*/true, head, r);
  }
  // 1.6.45 refuses a body over its largest item size (1 GB) and closes.
  if (limits.latest && r.bodylen > (1u << 30)) return Error(kInvalidArguments, /*close=*/true, head, r);
  if (r.keylen > kMaxKeyLength) return Error(kInvalidArguments, /*close=*/true, head, r);
  r.command = FoldQuiet(r.opcode, &r.quiet);
  const Shape shape = ShapeOf(r.command, r.extlen, r.keylen, r.bodylen);
  if (shape == Shape::kInvalid) return Error(kInvalidArguments, /*close=*/true, head, r);
  if (shape == Shape::kUnknown) {
    BinaryParseResult e = Error(kUnknownCommand, /*close=*/false, head, r);
    e.swallow = r.bodylen;
    return e;
  }

  DecodeExtras(buf + kHeaderSize, &r);
  r.key = std::string_view(buf + kHeaderSize + r.extlen, r.keylen);
  res.consumed = head;
  if (shape == Shape::kValue) {
    const uint32_t value_len = r.bodylen - r.keylen - r.extlen;
    const size_t max = limits.max_value_length != nullptr
                           ? limits.max_value_length(limits.ctx, r.keylen)
                           : SIZE_MAX;
    if (value_len > max) {
      r.value_too_large = true;
      res.swallow = value_len;
    } else {
      if (len - head < value_len) return BinaryParseResult();   // need the whole value
      r.value = std::string_view(buf + head, value_len);
      res.consumed = head + value_len;
    }
  }
  res.status = ParseStatus::kRequest;
  res.opcode = r.opcode;
  res.opaque = r.opaque;
  return res;
}

}  // namespace herdless
