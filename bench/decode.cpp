// Inference speed of a model folder, or of a config's shape with random weights: prefill of a
// prompt and greedy decode through the KV cache (InferState), next to what the machine allows in
// the same run — the read bandwidth (decode reads every weight once per token) and the sgemm rate
// (prefill).
//   gattn_bench_decode CONFIG|FOLDER [GATE_JSON] [PROMPT=512] [GENERATE=128] [THREADS=0: all]
//   [ROUNDS=3]
//                      [DTYPE=f32|bf16|bf16-gemm] [--profile] [--slots N] [--kv-bf16]
//                      [--copy-experts]
// DTYPE bf16: weights stored as bf16, prefill on fp32 panels widened from them; bf16-gemm: the
// same weights, prefill on the CPU's bf16 GEMM (GemmPrecision::bf16); with --slots, decode passes
// as the server runs them (more than 8 rows on the bf16 GEMM, gattn::inference_exec). A FOLDER is
// read straight into the dtype's storage; a GGUF FILE with DTYPE bf16 as the file stores it (its
// block formats on the integer dot kernels; the bound counts the file's bytes), with f32
// dequantized. --rss: no bandwidth or sgemm probe (their buffers);
// prints the process's peak resident memory against the plan (parameter bytes + decode memory +
// working set).
// --copy-experts: a folder's bf16 experts read into the weights' own buffer instead of mapped
// from the files (load_any_model's map_experts false).
// --kv-bf16: the KV cache in bf16 (CacheDtype::bf16). Prints one line per round and the medians;
// --profile adds the decode time per op and token.
// --slots N (a server's concurrent requests): each round decodes one sequence alone, then N
// sequences together through BatchedInferState (one step = one token for each), and prints the
// total tokens/s of both and their ratio.
#include <omp.h>
#include <sys/resource.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "io/checkpoint.h"
#include "io/gguf_model.h"
#include "io/hf_weights.h"
#include "model/batched_infer_state.h"
#include "model/flops.h"
#include "model/infer_state.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/op_profile.h"
#include "util/threads.h"

namespace {
using bench::argmax;
using bench::Clock;
using bench::seconds_since;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Sum of the n 32-bit words at p as integers (any bytes, no floating-point special cases), read
// as `streams` (1 or 4) parts side by side: one core reads more from several far-apart streams.
// Two AVX2 accumulators per stream (a plain loop without AVX2).
uint32_t sum_words(const uint32_t* p, size_t n, int streams) {
  const size_t part = n / streams;
  uint32_t sum = 0;
#ifdef __AVX2__
  __m256i acc[4][2];
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_si256();
  for (size_t i = 0; i + 16 <= part; i += 16)
    for (int s = 0; s < streams; ++s) {
      const auto* q = reinterpret_cast<const __m256i*>(p + s * part + i);
      acc[s][0] = _mm256_add_epi32(acc[s][0], _mm256_loadu_si256(q));
      acc[s][1] = _mm256_add_epi32(acc[s][1], _mm256_loadu_si256(q + 1));
    }
  for (auto& a : acc) {
    uint32_t lanes[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi32(a[0], a[1]));
    for (uint32_t x : lanes) sum += x;
  }
#else
  for (size_t i = 0; i < part * streams; ++i) sum += p[i];
#endif
  return sum;
}

// Bytes per second of reading the very buffer decode reads (the model's weights: the fp32
// values, or the bf16 copy), all threads: the best of 5 rounds each of reading it as one stream
// per thread and as four. The machine is shared: this moves from run to run.
// What the process has paged in from disk so far: major page faults (getrusage) and bytes its
// reads took from the block layer (/proc/self/io read_bytes; 0 where it is unreadable).
struct Paging {
  long major_faults = 0;
  long long read_bytes = 0;
};
Paging paging_now() {
  Paging p;
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  p.major_faults = usage.ru_majflt;
  if (FILE* f = std::fopen("/proc/self/io", "r")) {
    char key[64];
    long long value = 0;
    while (std::fscanf(f, "%63s %lld", key, &value) == 2)
      if (std::string(key) == "read_bytes:") p.read_bytes = value;
    std::fclose(f);
  }
  return p;
}

double read_bandwidth(const void* data, size_t bytes) {
  const auto* words = static_cast<const uint32_t*>(data);
  const size_t count = bytes / 4;
  double best = 0;
  for (int round = 0; round < 10; ++round) {
    const int streams = round % 2 ? 4 : 1;
    const auto start = Clock::now();
    uint32_t sum = 0;
#pragma omp parallel reduction(+ : sum)
    {
      const size_t t = omp_get_thread_num(), threads = omp_get_num_threads();
      const size_t begin = count * t / threads, end = count * (t + 1) / threads;
      sum += sum_words(words + begin, end - begin, streams);
    }
    const double s = seconds_since(start);
    if (sum == 1) std::printf(" ");  // keep the loop
    best = std::max(best, double(count) * 4 / s);
  }
  return best;
}

// FLOP/s of sgemm at a prefill shape (prompt x hidden times hidden x ffn), best of 5.
double sgemm_rate(int m, int n, int k) {
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(n) * k, 0.25f), c(size_t(m) * n);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    gattn::linear_forward(gattn::ExecContext{}, c.data(), a.data(), b.data(), m, k, n);
    best = std::max(best, 2.0 * m * n * k / seconds_since(start));
  }
  return best;
}

// Milliseconds per generated token of each op, and its share of the decode time.
void print_profile(const gattn::OpProfile& profile, double tokens) {
  double total = 0;
  for (const auto& [op, seconds] : profile.totals()) total += seconds;
  std::printf("decode profile (ms per token, share):\n");
  for (const auto& [op, seconds] : profile.totals())
    std::printf("  %-36s %7.3f  %5.1f%%\n", op.c_str(), 1e3 * seconds / tokens,
                100 * seconds / total);
}

// Seconds to decode `generate` tokens in each of `slots` sequences at once, after prefilling each
// with `prompt` (different prompts per slot).
double batched_decode_seconds(gattn::BatchedInferState& state, int vocab, int slots, int prompt,
                              int generate, gattn::ExecContext exec, gattn::OpProfile* profile) {
  std::vector<float> logits(size_t(slots) * vocab);
  std::vector<int> active(slots);
  std::vector<int32_t> next(slots), ids(prompt);
  for (int s = 0; s < slots; ++s) {
    active[s] = s;
    state.reset(s);
    for (int i = 0; i < prompt; ++i) ids[i] = (i * 7919 + s * 104729) % vocab;
    state.prefill(s, ids.data(), prompt, logits.data() + int64_t(s) * vocab);
  }
  exec.profile = profile;
  state.set_exec(exec);
  const auto start = Clock::now();
  for (int t = 0; t < generate; ++t) {
    for (int s = 0; s < slots; ++s) next[s] = argmax(logits.data() + int64_t(s) * vocab, vocab);
    state.decode(active, next, logits.data());
  }
  const double seconds = seconds_since(start);
  state.set_exec({});
  return seconds;
}

// Total decode tokens/s of one sequence and of `slots` at once, alternated rounds, medians; exec
// as the decode passes run (the server's: bf16 weights on the CPU's bf16 GEMM above 8 rows).
void compare_slots(const gattn::Weights& weights, const gattn::ExecContext& exec,
                   gattn::CacheDtype kv, int slots, int prompt, int generate, int rounds,
                   bool profile) {
  gattn::BatchedInferState state(weights, slots, prompt + generate, prompt, kv);
  const int vocab = weights.config().vocab_size;
  std::vector<double> one, many, ratio;
  gattn::OpProfile profile_one, profile_many;
  for (int round = 0; round < rounds; ++round) {
    one.push_back(generate / batched_decode_seconds(state, vocab, 1, prompt, generate, exec,
                                                    profile ? &profile_one : nullptr));
    many.push_back(double(slots) * generate /
                   batched_decode_seconds(state, vocab, slots, prompt, generate, exec,
                                          profile ? &profile_many : nullptr));
    ratio.push_back(many.back() / one.back());
    std::printf("round %d: 1 sequence %.2f tok/s, %d sequences %.2f tok/s in total (%.2fx)\n",
                round, one.back(), slots, many.back(), ratio.back());
  }
  std::printf(
      "decode, medians of %d rounds: 1 sequence %.2f tok/s, %d sequences %.2f tok/s, "
      "ratio %.2fx\n",
      rounds, median(one), slots, median(many), median(ratio));
  if (profile) {
    std::printf("1 sequence, ");
    print_profile(profile_one, double(rounds) * generate);
    std::printf("%d sequences (per step of %d tokens), ", slots, slots);
    print_profile(profile_many, double(rounds) * generate);
  }
}
}  // namespace

int main(int argc, char** argv) {
  // The flags follow the positional arguments.
  bool profile = false, rss = false, kv_bf16 = false, copy_experts = false;
  int slots = 0;
  int positional = argc;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--profile" || arg == "--slots" || arg == "--rss" || arg == "--kv-bf16" ||
        arg == "--copy-experts")
      positional = std::min(positional, i);
    if (arg == "--copy-experts") copy_experts = true;
    if (arg == "--profile") profile = true;
    if (arg == "--rss") rss = true;
    if (arg == "--kv-bf16") kv_bf16 = true;
    if (arg == "--slots" && i + 1 < argc) slots = std::atoi(argv[++i]);
  }
  argc = positional;
  if (argc < 2 || slots < 0) {
    std::fprintf(stderr,
                 "usage: gattn_bench_decode CONFIG [GATE_JSON] [PROMPT] [GENERATE] [THREADS] "
                 "[ROUNDS] [f32|bf16] [--profile] [--slots N] [--kv-bf16] [--copy-experts]\n");
    return 2;
  }
  try {
    gattn::select_isa(gattn::isa_choice_from_environment());
    const std::string gate = argc > 2 ? argv[2] : "";
    const int prompt = argc > 3 ? std::stoi(argv[3]) : 512;
    const int generate = argc > 4 ? std::stoi(argv[4]) : 128;
    const int threads = argc > 5 ? std::stoi(argv[5]) : 0;
    const int rounds = argc > 6 ? std::stoi(argv[6]) : 3;
    const std::string dtype = argc > 7 ? argv[7] : "f32";
    if (dtype != "f32" && dtype != "bf16" && dtype != "bf16-gemm")
      gattn::fail("DTYPE must be f32, bf16 or bf16-gemm, got ", dtype);
    if (threads > 0) gattn::set_num_threads(threads);
    // A model folder (gattn or Hugging Face) is loaded; a config JSON gets random weights.
    std::unique_ptr<gattn::Weights> model;
    const bool bf16 = dtype == "bf16" || dtype == "bf16-gemm";
    const bool gguf = gattn::is_gguf_file(argv[1]);
    if (std::filesystem::is_directory(argv[1]) || gguf) {
      model = gattn::load_any_model(argv[1], gattn::discard_log(),
                                    bf16 ? gattn::WeightDtype::bf16 : gattn::WeightDtype::f32,
                                    !copy_experts);
    } else {
      model = std::make_unique<gattn::Weights>(gattn::load_config(argv[1], gate));
      model->init(1);
      if (bf16) model->convert_to_bf16();
    }
    gattn::Weights& weights = *model;
    const gattn::Config& config = weights.config();
    const gattn::ExecContext prefill_exec{.precision = dtype == "bf16-gemm"
                                                           ? gattn::GemmPrecision::bf16
                                                           : gattn::GemmPrecision::fp32};
    gattn::check_gemm_precision(prefill_exec.precision);
    const gattn::CacheDtype kv = kv_bf16 ? gattn::CacheDtype::bf16 : gattn::CacheDtype::f32;
    if (slots > 0) {
      // bf16-gemm: the server's exec (gattn::inference_exec), bf16 weights on the bf16 GEMM
      const gattn::ExecContext decode_exec{.bf16_weights_on_bf16_gemm = dtype == "bf16-gemm"};
      compare_slots(weights, decode_exec, kv, slots, prompt, generate, rounds, profile);
      return 0;
    }
    // A token reads its active parameters: every weight of a dense model; a mixture of experts'
    // k experts per layer (and the rest), the LM head included, the input embedding's one row
    // not counted.
    const double active =
        double(config.has_moe_layers() ? gattn::active_parameters(config) : weights.size());
    // A GGUF file read as stored (DTYPE bf16): the bytes its matrices take there, and the norms.
    const double weight_bytes = gguf && bf16
                                    ? double(weights.mapped_bytes() + weights.parameter_bytes())
                                    : active * (bf16 ? 2 : 4);
    // The read rate of the weights' own buffer; where experts are read from the mapped files
    // (untouched zero pages in the buffer), of a 1 GiB buffer of our own instead.
    std::vector<uint32_t> probe;
    if (!rss && weights.mapped_bytes() > 0) probe.assign(size_t(1) << 28, 1u);
    const double bandwidth =
        rss              ? 0
        : !probe.empty() ? read_bandwidth(probe.data(), probe.size() * 4)
        : bf16           ? read_bandwidth(weights.bf16_data(), size_t(weights.size()) * 2)
                         : read_bandwidth(weights.values().data(), size_t(weights.size()) * 4);
    std::vector<uint32_t>().swap(probe);
    const double peak = rss ? 0 : sgemm_rate(prompt, config.intermediate_size, config.hidden_size);

    std::vector<int32_t> ids(prompt);
    for (int i = 0; i < prompt; ++i) ids[i] = (i * 7919) % config.vocab_size;
    std::vector<float> logits(config.vocab_size);
    std::vector<double> prefill_s, decode_s, major_faults, disk_bytes;  // the last two per token
    gattn::InferState state(weights, prompt + generate, prompt, kv);
    gattn::OpProfile decode_profile;
    for (int round = 0; round < rounds; ++round) {
      state.reset();
      state.set_exec(prefill_exec);
      auto start = Clock::now();
      state.forward_last(ids.data(), prompt, logits.data());
      prefill_s.push_back(seconds_since(start));
      state.set_exec({});
      if (profile) state.set_exec({.profile = &decode_profile});
      const Paging paging_before = paging_now();
      start = Clock::now();
      for (int t = 0; t < generate; ++t) {
        const int32_t next = argmax(logits);
        state.forward_last(&next, 1, logits.data());
      }
      decode_s.push_back(seconds_since(start));
      const Paging paging_after = paging_now();
      major_faults.push_back(double(paging_after.major_faults - paging_before.major_faults) /
                             generate);
      disk_bytes.push_back(double(paging_after.read_bytes - paging_before.read_bytes) / generate);
      state.set_exec({});
      std::printf("round %d: prefill %.3f s (%.1f tok/s), decode %.3f s (%.2f tok/s)\n", round,
                  prefill_s.back(), prompt / prefill_s.back(), decode_s.back(),
                  generate / decode_s.back());
    }
    // Decode reads every weight once per token (the tied embedding as the LM head), a full-
    // attention layer's cached keys and values up to the position (mean over the generated
    // tokens), a Gated DeltaNet layer's fp32 state (read and written) and convolution columns.
    double kv_bytes = 0;
    for (int l = 0; l < config.num_hidden_layers; ++l)
      kv_bytes += config.layer(l).attention == gattn::AttentionKind::linear
                      ? 2.0 * 4 *
                            (double(config.linear_num_value_heads) * config.linear_key_head_dim *
                                 config.linear_value_head_dim +
                             double(config.linear_conv_kernel_dim - 1) *
                                 (2 * config.linear_num_key_heads * config.linear_key_head_dim +
                                  config.linear_num_value_heads * config.linear_value_head_dim))
                      : 2.0 * config.num_key_value_heads * config.head_dim * (kv_bf16 ? 2 : 4) *
                            (prompt + generate / 2.0);
    const double bound = bandwidth / (weight_bytes + kv_bytes);
    const double decode_rate = generate / median(decode_s);
    const double prefill_flops = 2.0 * active * prompt;  // weights only
    std::printf(
        "threads %d, ISA %s, %lld parameters (%.2f GB %s), read bandwidth %.1f GB/s, sgemm %.1f "
        "GFLOP/s\n",
        gattn::num_threads(), gattn::isa_description().c_str(),
        static_cast<long long>(weights.size()), weight_bytes * 1e-9, dtype.c_str(),
        bandwidth * 1e-9, peak * 1e-9);
    std::printf(
        "decode  %.2f tok/s = %.1f%% of the bandwidth bound %.2f tok/s (%.3f GB of weights a "
        "token)\n",
        decode_rate, 100 * decode_rate / bound, bound, weight_bytes * 1e-9);
    if (weights.mapped_bytes() > 0)
      std::printf(
          "paging: %.2f GB of experts mapped from the files (%s); decode per token (median of "
          "rounds): %.1f major page faults, %.1f MB read from disk\n",
          weights.mapped_bytes() * 1e-9,
          weights.paging() ? "paged in as chosen" : "the page cache holds them",
          median(major_faults), median(disk_bytes) * 1e-6);
    std::printf("prefill %.1f tok/s, %.1f GFLOP/s (weights' FLOPs) = %.1f%% of sgemm\n",
                prompt / median(prefill_s), prefill_flops / median(prefill_s) * 1e-9,
                100 * prefill_flops / median(prefill_s) / peak);
    std::printf(
        "inference memory plan: working set %.1f MiB (a chunk of %d tokens), decode memory %.1f "
        "MiB\n",
        state.batched().activations().bytes() / 1048576.0, prompt,
        state.batched().decode_memory_bytes() / 1048576.0);
    if (profile) print_profile(decode_profile, double(rounds) * generate);
    if (rss) {
      struct rusage usage {};
      ::getrusage(RUSAGE_SELF, &usage);
      const double peak_mib = usage.ru_maxrss / 1024.0,
                   params = weights.parameter_bytes() / 1048576.0,
                   memory = state.batched().decode_memory_bytes() / 1048576.0,
                   work = state.batched().activations().bytes() / 1048576.0;
      std::printf(
          "peak RSS %.1f MiB; plan %.1f MiB (parameters %.1f %s, decode memory %.1f, working set "
          "%.1f); RSS / plan %.3f\n",
          peak_mib, params + memory + work, params, gattn::weight_dtype_name(weights.storage()),
          memory, work, peak_mib / (params + memory + work));
    }
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn_bench_decode: error: %s\n", e.what());
    return 1;
  }
}
