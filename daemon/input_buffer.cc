#include "daemon/input_buffer.h"

#include <cstring>

namespace herdless {

void InputBuffer::MakeRoom() {
  if (capacity_ == 0) Reallocate(kInitialInput);
  if (capacity_ - end_ < kMinReadRoom && begin_ > 0) {
    std::memmove(data_.get(), data_.get() + begin_, size());
    end_ -= begin_;
    begin_ = 0;
  }
  if (capacity_ - end_ < kMinReadRoom && capacity_ < limit_) {
    Reallocate(capacity_ * 2 < limit_ ? capacity_ * 2 : limit_);
  }
}

void InputBuffer::Release() {
  data_.reset();
  capacity_ = 0;
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
