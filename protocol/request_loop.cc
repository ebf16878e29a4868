#include "protocol/request_loop.h"

#include "storage/item_store.h"

namespace herdless {

namespace {

size_t MaxValueLengthOf(const void* ctx, size_t key_len) {
  return static_cast<const ItemStore*>(ctx)->MaxValueLength(key_len);
}

}  // namespace

ParserLimits ItemStoreLimits(const ItemStore* store) {
  ParserLimits limits;
  limits.max_value_length = &MaxValueLengthOf;
  limits.ctx = store;
  return limits;
}

}  // namespace herdless
