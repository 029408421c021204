// The C++ side of bench/python_overhead.py: the median time of one TrainState::forward call of
// SEQ tokens (logits of every position), the state built once, as the Python module's
// Model.forward runs it.
//   gattn_bench_forward_call MODEL SEQ CALLS THREADS
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "io/hf_weights.h"
#include "model/train_state.h"
#include "util/error.h"
#include "util/threads.h"

int main(int argc, char** argv) try {
  if (argc != 5) gattn::fail("usage: gattn_bench_forward_call MODEL SEQ CALLS THREADS");
  const int seq = std::stoi(argv[2]), calls = std::stoi(argv[3]);
  gattn::set_num_threads(std::stoi(argv[4]));
  const auto model = gattn::load_any_model(argv[1]);
  const int vocab = model->config().vocab_size;
  std::vector<int32_t> ids(seq);
  for (int i = 0; i < seq; ++i) ids[i] = (i * 7 + 3) % vocab;
  std::vector<float> logits(size_t(seq) * vocab);
  gattn::TrainState state(*model);
  std::vector<double> times;
  for (int i = 0; i < calls + 3; ++i) {  // the first 3 warm up
    const auto t0 = bench::Clock::now();
    state.forward({ids.data(), nullptr, 1, seq}, logits.data());
    if (i >= 3) times.push_back(bench::seconds_since(t0));
  }
  std::nth_element(times.begin(), times.begin() + calls / 2, times.end());
  std::printf("median_us %.3f\n", times[calls / 2] * 1e6);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gattn_bench_forward_call: %s\n", e.what());
  return 1;
}
