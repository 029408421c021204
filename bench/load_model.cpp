// Loads a model folder (a gattn checkpoint or a Hugging Face folder) the way the gattn commands
// do and prints its size, the load time and a checksum: the driver for the loader's time and peak
// memory (run it under /usr/bin/time -v; docs/INTEROP.md).
#include <chrono>
#include <cstdio>
#include <vector>

#include "io/hf_weights.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gattn_load_model FOLDER\n");
    return 2;
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    const std::unique_ptr<gattn::Weights> weights = gattn::load_any_model(argv[1]);
    const gattn::Config& config = weights->config();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double sum = 0;
    for (int64_t i = 0; i < weights->size(); ++i) sum += weights->data()[i];
    std::printf(
        "%s: %d layers, hidden %d, %lld parameters (%.2f GB as fp32), loaded in %.2f s, "
        "sum %.6g\n",
        argv[1], config.num_hidden_layers, config.hidden_size,
        static_cast<long long>(weights->size()), double(weights->size()) * 4e-9, seconds, sum);
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn_load_model: error: %s\n", e.what());
    return 1;
  }
}
