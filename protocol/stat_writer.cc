#include "protocol/stat_writer.h"

#include <cstdio>
#include <cstring>

#include "protocol/binary_wire.h"
#include "protocol/numbers.h"

namespace herdless {

void StatWriter::Add(std::string_view name, std::string_view value) {
  if (pairs_ != nullptr) {
    pairs_->emplace_back(name, value);
    return;
  }
  if (binary_) {
    AppendBinaryHeader(out_, binary::kStat, binary::kSuccess, 0,
                       static_cast<uint16_t>(name.size()),
                       static_cast<uint32_t>(name.size() + value.size()), opaque_, 0);
    out_->Append(name);
    out_->Append(value);
    return;
  }
  out_->Append("STAT ");
  out_->Append(name);
  out_->Append(" ");
  out_->Append(value);
  out_->Append("\r\n");
}

void StatWriter::Add(std::string_view name, uint64_t value) {
  char buf[kMaxUint64Digits];
  Add(name, std::string_view(buf, FormatUint64(value, buf) - buf));
}

void StatWriter::AddSigned(std::string_view name, int64_t value) {
  char buf[kMaxUint64Digits + 1];
  Add(name, std::string_view(buf, FormatInt64(value, buf) - buf));
}

void StatWriter::AddFixed(std::string_view name, double value, int decimals) {
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  Add(name, std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0));
}

void StatWriter::End() {
  if (pairs_ != nullptr) return;
  if (binary_) {
    AppendBinaryHeader(out_, binary::kStat, binary::kSuccess, 0, 0, 0, opaque_, 0);
  } else {
    out_->Append("END\r\n");
  }
}

}  // namespace herdless
