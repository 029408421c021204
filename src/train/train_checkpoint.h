// Training checkpoints, taken at optimizer-step boundaries: the model, the optimizer state and the
// step (the data position and every random stream are functions of the seed and the step).
// A checkpoint is a folder <run>/checkpoints/step_NNNNNNNN/ holding config.json,
// model.safetensors, optimizer.safetensors and state.json, each with a checksum (state.json's own
// "xxh3" field covers its other fields). It is written as one folder (io/staged_folder.h), so a
// crash (even kill -9) mid-write leaves the previous one intact.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/weights.h"
#include "train/adamw.h"

namespace gattn {

struct TrainingProgress {
  int64_t step = 0;  // optimizer steps done
  int64_t tokens_seen = 0;
  int64_t skipped_steps = 0;  // non-finite loss or gradient
};

// AdamW's state as a checkpoint holds it: both moments of every parameter, in layout order.
struct OptimizerMoments {
  const float* first = nullptr;
  const float* second = nullptr;
  int64_t steps = 0;  // updates made
};
// The moments of an AdamW that holds all of them (not sharded).
OptimizerMoments moments_of(const AdamW& optimizer);

// Writes the checkpoint of `state.step`, then removes all but the newest `keep`. Returns its
// folder.
std::string save_training_checkpoint(const std::string& run_dir, const Weights& weights,
                                     const OptimizerMoments& optimizer,
                                     const TrainingProgress& state,
                                     const nlohmann::json& run_config, int keep);

// The newest complete checkpoint folder of a run, or "" if there is none.
std::string latest_checkpoint(const std::string& run_dir);

// XXH3 of the canonical dump (sorted keys, no spaces) of state.json's fields other than "xxh3".
std::string training_state_checksum(nlohmann::json state);
// state.json: the progress and run config with the "xxh3" checksum of its other fields.
nlohmann::json training_state_json(const TrainingProgress& progress,
                                   const nlohmann::json& run_config);
// The progress a parsed state.json records, checked: its checksum, no unknown field, an integer
// step equal to `expected_step` (its folder's) and at most `max_step`, skipped steps within it,
// a run_config object. `where` names the file in errors.
TrainingProgress parse_training_state(const nlohmann::json& state, const std::string& where,
                                      int64_t expected_step, int64_t max_step);

struct ResumePoint {
  TrainingProgress progress;
  nlohmann::json run_config;  // as recorded when the checkpoint was written
};

// Restores the weights and optimizer state (of the optimizer's shard); the checkpoint's model
// config must equal the weights'.
// state.json must be intact (its checksum) and consistent: an integer step equal to the folder's,
// at most `max_step`; skipped steps within it; the optimizer's update count step - skipped.
ResumePoint load_training_checkpoint(const std::string& folder, Weights& weights, AdamW& optimizer,
                                     int64_t max_step);

}  // namespace gattn
