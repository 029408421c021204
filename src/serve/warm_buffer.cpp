#include "serve/warm_buffer.h"

namespace gattn {

WarmBuffer::WarmBuffer() : thread_([this] { warm(); }) {}

WarmBuffer::~WarmBuffer() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::vector<float> WarmBuffer::take(size_t floats) {
  std::vector<float> out;
  {
    std::lock_guard lock(m_);
    if (ready_.size() == floats) out.swap(ready_);
    want_ = floats;
  }
  cv_.notify_all();
  out.clear();  // keeps its (touched) room
  if (out.capacity() != floats) out.reserve(floats);
  return out;
}

void WarmBuffer::warm() {
  std::unique_lock lock(m_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || (want_ > 0 && ready_.size() != want_); });
    if (stopping_) return;
    const size_t floats = want_;
    lock.unlock();
    std::vector<float> buffer(floats);  // value-initialized: every page written once
    lock.lock();
    if (want_ == floats) ready_.swap(buffer);
    // the old buffer (or one no longer wanted) is freed outside the lock
    lock.unlock();
    buffer = {};
    lock.lock();
  }
}

}  // namespace gattn
