#include "cli/inputs.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/stderr_log.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/threads.h"

namespace gattn {

void use_threads(int threads) {
  if (threads <= 0) return;
  const int used = set_num_threads(threads);
  if (used < threads)
    stderr_log().info("gattn: ", threads, " threads requested, using ", used,
                      " (the cores this process may use)");
}

CLI::Option* add_weights_dtype_option(CLI::App* cmd, std::string& dtype, bool with_w8a8) {
  std::vector<std::string> choices = kWeightDtypes;
  if (!with_w8a8) choices.pop_back();  // w8a8 is the last
  return cmd
      ->add_option(
          "--weights-dtype", dtype,
          weight_dtype_list(with_w8a8) +
              ". bf16: weights stored as bfloat16 (rounded to nearest even; no f32 copy): decode "
              "reads half the bytes; prefill runs on the CPU's bf16 GEMM where it has one "
              "(activations rounded to bf16), else on fp32 panels widened from them. A GGUF "
              "file: bf16 and auto read its matrices as it stores them (q8_0, q4_0, q4_K, q6_K "
              "blocks in place, on integer dot products), f32 dequantizes them. q8_0, q4_0, "
              "q4_k_m: the matrices quantized in memory as llama.cpp's quantizer writes a file "
              "of that type (Q4_K_M: Q4_K with Q6_K where llama.cpp puts it). " +
              std::string(with_w8a8
                              ? "w8a8: an accuracy model of int8 weights (per row) and int8 "
                                "projection inputs (one scale per matrix and pass: use --batch "
                                "1 for one per window), products in fp32. "
                              : "") +
              "auto: f32 for other models")
      ->check(CLI::IsMember(choices))
      ->capture_default_str();
}

CLI::Option* add_kv_dtype_option(CLI::App* cmd, std::string& dtype) {
  return cmd
      ->add_option("--kv-dtype", dtype,
                   "f32, or bf16: attention's cached keys and values stored as bfloat16 "
                   "(rounded to nearest even): half the memory, and half the bytes a decode "
                   "step reads at long context")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
}

CacheDtype cache_dtype(const std::string& dtype) {
  return dtype == "bf16" ? CacheDtype::bf16 : CacheDtype::f32;
}

std::unique_ptr<Weights> with_context(std::unique_ptr<Weights> weights, int positions,
                                      const std::string& rope_scaling_json) {
  Config c = weights->config();
  if (positions <= c.max_position_embeddings && rope_scaling_json.empty()) return weights;
  if (weights->storage() != WeightDtype::f32)
    fail(positions > c.max_position_embeddings
             ? "a context of " + std::to_string(positions) + " positions beyond the model's " +
                   std::to_string(c.max_position_embeddings)
             : std::string("--rope-scaling"),
         " needs --weights-dtype f32 (the weights are stored as ",
         weight_dtype_name(weights->storage()), ")");
  c.max_position_embeddings = std::max(c.max_position_embeddings, positions);
  if (!rope_scaling_json.empty()) {
    c.rope_scaling = rope_scaling_from_json(parse_json_text(rope_scaling_json, "--rope-scaling"),
                                            "--rope-scaling");
  }
  return std::make_unique<Weights>(c, std::move(*weights).release());
}

}  // namespace gattn
