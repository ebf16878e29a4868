#include "daemon/input_buffer.h"

#include <cstring>

namespace herdless {

void InputBuffer::MakeRoom() {
  if (capacity_ == 0) {
    data_ = BlockCache::Take(cache_);
    capacity_ = kInitialInput;
  }
  if (capacity_ - end_ < kMinReadRoom && begin_ > 0) {
    std::memmove(data_, data_ + begin_, size());
    end_ -= begin_;
    begin_ = 0;
  }
  if (capacity_ - end_ < kMinReadRoom && capacity_ < limit_) {
    Reallocate(capacity_ * 2 < limit_ ? capacity_ * 2 : limit_);
  }
}

void InputBuffer::Release() {
  if (capacity_ == kInitialInput) {
    BlockCache::Give(cache_, data_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  capacity_ = begin_ = end_ = 0;
}

void InputBuffer::Reallocate(size_t capacity) {
  char* bigger = new char[capacity];
  if (!empty()) std::memcpy(bigger, data_ + begin_, size());
  const size_t n = size();
  Release();
  data_ = bigger;
  capacity_ = capacity;
  end_ = n;
}

}  // namespace herdless
