// A training run's settings (`gattn train --config run.json`), validated like the model config.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/router_balance.h"
#include "ops/matmul.h"
#include "train/adamw.h"
#include "train/loader.h"
#include "train/schedule.h"

namespace gattn {

enum class NonFinitePolicy { skip, abort };

struct RunConfig {
  Config model;
  std::string train_data;  // token shard
  std::string val_data;    // token shard; empty: no validation
  std::string tokenizer;   // tokenizer.json, for bits per byte; empty: no bpb
  WindowKind window = WindowKind::bos;
  int seq_len = 256;
  int batch_size = 16;  // rows per micro-batch
  int grad_accum = 1;   // micro-batches per optimizer step
  int64_t steps = 1000;
  AdamWOptions adamw;
  double grad_clip = 1.0;    // 0: off
  Schedule schedule;         // total_steps = steps
  int eval_every = 0;        // steps; 0: only at the end
  int eval_windows = 64;     // validation windows per evaluation (0: all)
  int checkpoint_every = 0;  // steps; 0: only at the end
  int keep_checkpoints = 2;
  uint64_t seed = 0;
  int threads = 0;  // 0: all cores
  NonFinitePolicy on_nonfinite = NonFinitePolicy::skip;
  // The GEMMs' precision (ops/matmul.h): bf16 is mixed precision on the CPU's bf16 instructions;
  // parameters, optimizer state and every op but the GEMMs stay fp32.
  GemmPrecision precision = GemmPrecision::fp32;
  std::string out;  // run folder: metrics.jsonl, checkpoints/, summary.json
  // A model folder whose weights start the run (gattn train --init-from): tensors it has are
  // copied, the rest (a retrofitted gate) keep their fresh initialisation; empty: none.
  std::string init_from;
  // A model with MoE layers: the load-balancing loss ("router_aux_loss": {"scope": "micro_batch" |
  // "global", "coef": the model config's router_aux_loss_coef unless given; 0: none}).
  RouterLoss router_loss;

  int64_t tokens_per_step() const { return int64_t(batch_size) * grad_accum * seq_len; }
};

// Paths inside are relative to the config file's folder. The model is a config path or an
// inline object; gate_json, when not empty, replaces its gate.
RunConfig load_run_config(const std::string& path, const std::string& gate_json = "");
nlohmann::json run_config_to_json(const RunConfig& run);

// The fields of run_config_to_json that differ between a recorded run and the current one, as
// "field: old -> new", leaving out those that do not change the training arithmetic: threads,
// eval and checkpoint cadence, how many checkpoints to keep, and the output and init_from paths.
std::vector<std::string> run_config_changes(const nlohmann::json& recorded,
                                            const nlohmann::json& current);

}  // namespace gattn
