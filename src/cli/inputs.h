// What the evaluation commands read: a model from a checkpoint (or a run's newest one), and
// held-out tokens from a shard or from text tokenized on the fly.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "infer/held_out_tokens.h"
#include "infer/model_files.h"
#include "io/token_shard.h"
#include "model/weights.h"
#include "ops/exec_context.h"
#include "tokenizer/tokenizer.h"

namespace gattn {

// --threads (when > 0): the thread count of the process, clamped to the cores it may use (and
// said so on stderr).
void use_threads(int threads);

// The inference commands' --weights-dtype (infer/model_files.h load_inference_model).
// with_w8a8: also "w8a8" (eval: an accuracy model, model/quantize_model.h
// round_weights_to_int8_rows with ExecContext::int8_projection_inputs, which the command sets).
CLI::Option* add_weights_dtype_option(CLI::App* cmd, std::string& dtype, bool with_w8a8 = false);
// The inference commands' --kv-dtype (f32, or bf16: model/block.h CacheDtype) and its value.
CLI::Option* add_kv_dtype_option(CLI::App* cmd, std::string& dtype);
CacheDtype cache_dtype(const std::string& dtype);

// The same weights with a context of at least `positions` and, when rope_scaling_json is not
// empty, that RoPE scaling (an HF `rope_scaling` object): evaluation beyond the trained length.
std::unique_ptr<Weights> with_context(std::unique_ptr<Weights> weights, int positions,
                                      const std::string& rope_scaling_json);

}  // namespace gattn
