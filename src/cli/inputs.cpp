#include "cli/inputs.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/stderr_log.h"
#include "train/prepare_data.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

// A shard by its content: a file that looks like one is opened as one (so bad magic bytes, a bad
// version or size is an error naming it), anything else is text.
bool is_shard(const std::string& path) {
  if (fs::is_directory(path)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);
  return looks_like_token_shard(std::string_view(head, size_t(in.gcount())), fs::file_size(path));
}
}  // namespace

void use_threads(int threads) {
  if (threads <= 0) return;
  const int used = set_num_threads(threads);
  if (used < threads)
    stderr_log().info("gattn: ", threads, " threads requested, using ", used,
                      " (the cores this process may use)");
}

CLI::Option* add_weights_dtype_option(CLI::App* cmd, std::string& dtype, bool with_w8a8) {
  std::vector<std::string> choices = {"auto", "f32", "bf16", "q8_0", "q4_0", "q4_k_m"};
  if (with_w8a8) choices.push_back("w8a8");
  return cmd
      ->add_option(
          "--weights-dtype", dtype,
          "auto, f32, bf16, q8_0, q4_0 or q4_k_m" + std::string(with_w8a8 ? ", w8a8" : "") +
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

HeldOutTokens::HeldOutTokens(const std::vector<std::string>& data, const std::string& tokenizer,
                             int vocab_size) {
  for (const std::string& path : data)
    if (!fs::exists(path)) fail(path, ": no such file or folder");
  std::string shard_path = data.size() == 1 && is_shard(data[0]) ? data[0] : "";
  std::optional<Tokenizer> t;
  if (!tokenizer.empty()) {
    t = load_tokenizer_file(tokenizer);
    token_bytes_ = token_byte_lengths(*t);
  }
  if (shard_path.empty()) {
    if (!t) fail("--tokenizer is needed to read text (", data[0], " is not a token shard)");
    temporary_ = (fs::temp_directory_path() / ("gattn_text_" + std::to_string(::getpid()) + ".bin"))
                     .string();
    write_shard_from_text(data, *t, temporary_);
    shard_path = temporary_;
  }
  shard_ = std::make_unique<TokenShard>(shard_path);
  if (t) require_shard_tokenizer(*shard_, *t, tokenizer);
  // For text, name the tokenizer whose ids these are, not the temporary shard.
  if (int64_t(shard_->info().vocab_size) > vocab_size)
    fail(temporary_.empty() ? shard_path : tokenizer, ": tokens go up to ",
         shard_->info().vocab_size, " but the model's vocab_size is ", vocab_size);
}

HeldOutTokens::~HeldOutTokens() {
  shard_.reset();
  if (!temporary_.empty()) fs::remove(temporary_);
}

}  // namespace gattn
