#include "train/run_config.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/file.h"
#include "ops/bf16_gemm.h"
#include "util/error.h"
#include "util/json_fields.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::map<std::string, WindowKind> kWindows = {{"bos", WindowKind::bos},
                                                    {"plain", WindowKind::plain}};
const std::map<std::string, ScheduleKind> kSchedules = {{"cosine", ScheduleKind::cosine},
                                                        {"wsd", ScheduleKind::wsd}};
const std::map<std::string, RouterLossScope> kRouterScopes = {
    {"micro_batch", RouterLossScope::micro_batch}, {"global", RouterLossScope::global}};
const std::map<std::string, NonFinitePolicy> kPolicies = {{"skip", NonFinitePolicy::skip},
                                                          {"abort", NonFinitePolicy::abort}};

std::string resolve(const fs::path& folder, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (folder / path).lexically_normal().string();
}

Config model_from(const json& value, const fs::path& folder, const std::string& where,
                  const std::string& gate_json) {
  if (value.is_string()) return load_config(resolve(folder, value.get<std::string>()), gate_json);
  json inline_model = value;
  if (!gate_json.empty()) {
    inline_model["gate"] = parse_json_text(gate_json, "--gate");
  }
  return config_from_json(inline_model, where + ": model");
}
}  // namespace

RunConfig load_run_config(const std::string& path, const std::string& gate_json) {
  const json j = parse_json_file(path);
  const fs::path folder = fs::path(path).parent_path();
  RunConfig run;
  JsonFields f(j, path);
  const json* model = f.value("model");
  if (!model) fail(path, ": field 'model' is required (a config path or an inline config)");
  run.model = model_from(*model, folder, path, gate_json);

  if (const json* data = f.value("data")) {
    JsonFields d(*data, path + ": data");
    d.read("train", run.train_data);
    d.read("val", run.val_data);
    d.read("tokenizer", run.tokenizer);
    d.read("window", run.window, kWindows);
    d.read("seq_len", run.seq_len);
    d.reject_unknown();
    if (!d.has("train")) fail(path, ": data: field 'train' is required (a token shard)");
  } else {
    fail(path, ": field 'data' is required");
  }
  run.train_data = resolve(folder, run.train_data);
  run.val_data = resolve(folder, run.val_data);
  run.tokenizer = resolve(folder, run.tokenizer);

  f.read("batch_size", run.batch_size);
  f.read("grad_accum", run.grad_accum);
  f.read("steps", run.steps);
  if (const json* opt = f.value("optimizer")) {
    JsonFields o(*opt, path + ": optimizer");
    o.read("lr", run.schedule.max_lr);
    o.read_in("min_lr", run.schedule.min_lr, 0, 1e9);
    o.read_in("beta1", run.adamw.beta1, 0, 1, true);
    o.read_in("beta2", run.adamw.beta2, 0, 1, true);
    o.read("eps", run.adamw.eps);
    o.read_in("weight_decay", run.adamw.weight_decay, 0, 1e9);
    o.read("no_decay", run.adamw.no_decay);
    o.read_in("grad_clip", run.grad_clip, 0, 1e30);
    o.reject_unknown();
  }
  if (const json* schedule = f.value("schedule")) {
    JsonFields s(*schedule, path + ": schedule");
    s.read("kind", run.schedule.kind, kSchedules);
    int warmup = 0, decay = 0;
    s.read_count("warmup_steps", warmup);
    s.read_count("decay_steps", decay);
    s.reject_unknown();
    run.schedule.warmup_steps = warmup;
    run.schedule.decay_steps = decay;
  }
  run.schedule.total_steps = run.steps;
  if (run.schedule.warmup_steps + run.schedule.decay_steps > run.steps)
    fail(path, ": schedule: warmup_steps + decay_steps (",
         run.schedule.warmup_steps + run.schedule.decay_steps, ") exceed steps (", run.steps, ")");
  if (run.schedule.min_lr > run.schedule.max_lr)
    fail(path, ": optimizer: min_lr (", run.schedule.min_lr, ") exceeds lr (", run.schedule.max_lr,
         ")");
  if (const json* eval = f.value("eval")) {
    JsonFields e(*eval, path + ": eval");
    e.read_count("every", run.eval_every);
    e.read_count("windows", run.eval_windows);
    e.reject_unknown();
  }
  if (const json* checkpoint = f.value("checkpoint")) {
    JsonFields c(*checkpoint, path + ": checkpoint");
    c.read_count("every", run.checkpoint_every);
    c.read("keep", run.keep_checkpoints);
    c.reject_unknown();
  }
  int64_t seed = 0;
  if (f.has("seed")) {
    const json& s = j.at("seed");
    if (!s.is_number_integer() || s.get<int64_t>() < 0) f.bad("seed", "a non-negative integer");
    seed = s.get<int64_t>();
  }
  f.ignore("seed");
  run.seed = uint64_t(seed);
  f.read_count("threads", run.threads);
  f.read("on_nonfinite", run.on_nonfinite, kPolicies);
  f.read("precision", run.precision, gemm_precision_names());
  if (run.precision == GemmPrecision::bf16 && !native_bf16_gemm_available())
    fail(path, ": precision \"bf16\" needs bf16 dot products (avx512_bf16) through oneDNN: ",
         native_bf16_gemm_unavailable_reason(),
         "; use \"fp32\" or \"bf16_emulated\" (slower, same numbers)");
  run.router_loss.coef = run.model.router_aux_loss_coef;
  if (const json* router = f.value("router_aux_loss")) {
    JsonFields r(*router, path + ": router_aux_loss");
    r.read("scope", run.router_loss.scope, kRouterScopes);
    r.read_in("coef", run.router_loss.coef, 0, 1e6);
    r.reject_unknown();
  }
  f.read("out", run.out);
  f.read("init_from", run.init_from);
  f.reject_unknown();
  if (run.out.empty()) fail(path, ": field 'out' is required (the run folder)");
  run.out = resolve(folder, run.out);
  run.init_from = resolve(folder, run.init_from);
  if (run.seq_len > run.model.max_position_embeddings)
    fail(path, ": data: seq_len ", run.seq_len, " exceeds the model's max_position_embeddings (",
         run.model.max_position_embeddings, ")");
  return run;
}

json run_config_to_json(const RunConfig& run) {
  json j = {{"model", config_to_json(run.model)},
            {"data",
             {{"train", run.train_data},
              {"val", run.val_data},
              {"tokenizer", run.tokenizer},
              {"window", name_of(kWindows, run.window)},
              {"seq_len", run.seq_len}}},
            {"batch_size", run.batch_size},
            {"grad_accum", run.grad_accum},
            {"steps", run.steps},
            {"optimizer",
             {{"lr", run.schedule.max_lr},
              {"min_lr", run.schedule.min_lr},
              {"beta1", run.adamw.beta1},
              {"beta2", run.adamw.beta2},
              {"eps", run.adamw.eps},
              {"weight_decay", run.adamw.weight_decay},
              {"no_decay", run.adamw.no_decay},
              {"grad_clip", run.grad_clip}}},
            {"schedule",
             {{"kind", name_of(kSchedules, run.schedule.kind)},
              {"warmup_steps", run.schedule.warmup_steps},
              {"decay_steps", run.schedule.decay_steps}}},
            {"eval", {{"every", run.eval_every}, {"windows", run.eval_windows}}},
            {"checkpoint", {{"every", run.checkpoint_every}, {"keep", run.keep_checkpoints}}},
            {"seed", run.seed},
            {"threads", run.threads},
            {"on_nonfinite", name_of(kPolicies, run.on_nonfinite)},
            {"precision", name_of(gemm_precision_names(), run.precision)},
            {"out", run.out}};
  if (!run.init_from.empty()) j["init_from"] = run.init_from;
  if (run.model.has_moe_layers())
    j["router_aux_loss"] = {{"scope", name_of(kRouterScopes, run.router_loss.scope)},
                            {"coef", run.router_loss.coef}};
  return j;
}

std::vector<std::string> run_config_changes(const json& recorded, const json& current) {
  static const char* const kFree[] = {"/threads",         "/eval/every", "/checkpoint/every",
                                      "/checkpoint/keep", "/out",        "/init_from"};
  std::vector<std::string> changes;
  for (const json& op : json::diff(recorded, current)) {
    const std::string path = op["path"].get<std::string>();
    if (std::any_of(std::begin(kFree), std::end(kFree), [&](const char* f) { return path == f; }))
      continue;
    const json::json_pointer at(path);
    const auto value_at = [&](const json& j) {
      return j.contains(at) ? json_summary(j.at(at)) : std::string("(absent)");
    };
    changes.push_back(path.substr(1) + ": " + value_at(recorded) + " -> " + value_at(current));
  }
  return changes;
}

}  // namespace gattn
