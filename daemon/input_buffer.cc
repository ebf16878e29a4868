#include "daemon/input_buffer.h"

#include <cstring>

namespace herdless {

namespace {

constexpr size_t kMinReadRoom = 4 * 1024;   // grow or compact below this much free tail

}  // namespace

char* InputBuffer::Room(size_t* len) {
  if (capacity_ == 0) Reallocate(kInitialInput);
  if (capacity_ - end_ < kMinReadRoom && begin_ > 0) {
    std::memmove(data_.get(), data_.get() + begin_, size());
    end_ -= begin_;
    begin_ = 0;
  }
  if (capacity_ - end_ < kMinReadRoom && capacity_ < limit_) {
    Reallocate(capacity_ * 2 < limit_ ? capacity_ * 2 : limit_);
  }
  *len = capacity_ - end_;
  return data_.get() + end_;
}

void InputBuffer::ShrinkIfIdle() {
  if (empty() && capacity_ > kInitialInput) {
    data_.reset();
    capacity_ = 0;
  }
}

void InputBuffer::Reallocate(size_t capacity) {
  std::unique_ptr<char[]> bigger(new char[capacity]);
  if (!empty()) std::memcpy(bigger.get(), data_.get() + begin_, size());
  end_ -= begin_;
  begin_ = 0;
  data_ = std::move(bigger);
  capacity_ = capacity;
}

}  // namespace herdless
