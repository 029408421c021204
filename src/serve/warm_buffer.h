// A buffer of floats whose pages are touched ahead of time on a thread of its own. A prefix-cache
// piece needs fresh memory every 256 prompt tokens (28 MiB at the 0.6B shape with a bf16 KV
// cache); on the machines measured, the first touch of new memory cost 10-175 ms for that, a
// stall of every decoding slot. The scheduler takes a warmed buffer of the size it needs, and the
// thread warms the next one (of the same size) while passes run.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace gattn {

class WarmBuffer {
 public:
  WarmBuffer();
  ~WarmBuffer();
  WarmBuffer(const WarmBuffer&) = delete;
  WarmBuffer& operator=(const WarmBuffer&) = delete;

  // An empty vector with room for `floats` values: the warmed one when it has exactly that room
  // (then one more of that size is warmed), else a new one.
  std::vector<float> take(size_t floats);

 private:
  void warm();

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<float> ready_;  // touched, of size `want_`
  size_t want_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gattn
