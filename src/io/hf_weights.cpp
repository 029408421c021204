#include "io/hf_weights.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "io/checkpoint.h"
#include "io/file.h"
#include "io/gguf_model.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/memory_budget.h"
#include "util/threads.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kChunkBytes = size_t(8) << 20;  // converted, then its pages released

// regroup_qkvz / regroup_ba: Qwen3-Next's per-key-head groups of a Gated DeltaNet projection
// (in_proj_qkvz: [q | k | v | z] per group; in_proj_ba: [b | a]) into gattn's (and Qwen3.5's)
// flat in_proj_qkv | in_proj_z and in_proj_b | in_proj_a, consecutive in the layout.
// fused_gate_up / fused_down: Qwen3.5-MoE's experts as two 3-D tensors ([E, 2 Ie, C] and
// [E, C, Ie]) into gattn's per-expert gate_proj | up_proj | down_proj.
enum class Convert {
  copy,
  plus_one,
  split_q_gate,
  regroup_qkvz,
  regroup_ba,
  fused_gate_up,
  fused_down
};

// One checkpoint tensor and where its rows go.
struct Job {
  std::string name;  // in the checkpoint
  size_t file = 0;
  Convert convert = Convert::copy;
  const TensorSpec* target = nullptr;  // q_proj for split_q_gate
  const TensorSpec* gate = nullptr;    // split_q_gate: sdpa_gate.weight
  // split_q_gate: the rows come in `groups` blocks of q_rows query rows then gate_rows gate rows.
  QGateBlocks blocks{};
  DeltaNetConfig delta{};  // regroup_*: the layer's geometry
  int64_t rows = 0;        // regroup_*: the checkpoint tensor's rows (two layout tensors' worth)
  // fused_*: the checkpoint tensor's shape; expert e's rows go from first + e * stride (floats).
  std::vector<int64_t> fused_shape;
  int64_t first = 0, stride = 0;
  std::vector<const TensorSpec*> fills;  // every layout tensor it writes
};

// A shard's file name must stay inside the model folder.
void check_shard_name(const std::string& file, const std::string& tensor,
                      const std::string& index) {
  if (file.empty() || file == "." || file == ".." ||
      file.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
    fail(index, ": weight_map['", tensor, "'] names file '", file,
         "', which is not a file name inside the model folder");
}

// The q|gate split of one q_proj: grouped by KV group (authors) or interleaved per head.
Job split_job(const HfModelInfo& info, const ParamLayout& layout, const std::string& q_name) {
  const std::string gate_name =
      q_name.substr(0, q_name.size() - std::string("q_proj.weight").size()) + "sdpa_gate.weight";
  Job job;
  job.convert = Convert::split_q_gate;
  job.target = layout.find(q_name);
  job.gate = layout.find(gate_name);
  GATTN_ASSERT(job.target && job.gate, "the layout has no ", q_name, " or ", gate_name);
  job.blocks = q_gate_blocks(info.config, info.layout);
  job.fills = {job.target, job.gate};
  return job;
}

// The layer of a "model.layers.<l>." name (digits only, at most 2^30); -1 when it has none.
int layer_of(const std::string& ours) {
  const std::string prefix = "model.layers.";
  size_t i = prefix.size();
  if (!ours.starts_with(prefix) || i >= ours.size() || !std::isdigit(uint8_t(ours[i]))) return -1;
  int64_t l = 0;
  for (; i < ours.size() && std::isdigit(uint8_t(ours[i])); ++i)
    if ((l = l * 10 + (ours[i] - '0')) > (int64_t(1) << 30)) return -1;
  return i < ours.size() && ours[i] == '.' ? int(l) : -1;
}

// Qwen3-Next's grouped in_proj_qkvz or in_proj_ba of layer `ours` (its gattn-side name).
Job regroup_job(const std::vector<LayerConfig>& configs, const ParamLayout& layout,
                const std::string& ours, const std::string& file) {
  const std::string prefix = ours.substr(0, ours.rfind("in_proj_"));
  const bool qkvz = ours.ends_with("in_proj_qkvz.weight");
  Job job;
  job.convert = qkvz ? Convert::regroup_qkvz : Convert::regroup_ba;
  job.target = layout.find(prefix + (qkvz ? "in_proj_qkv.weight" : "in_proj_b.weight"));
  job.gate = layout.find(prefix + (qkvz ? "in_proj_z.weight" : "in_proj_a.weight"));  // filled too
  if (!job.target || !job.gate)
    fail(file, ": unexpected tensor '", ours, "' (its layer is not linear_attention)");
  const int l = layer_of(ours);  // the layout holds both tensors: a layer it has
  GATTN_ASSERT(l >= 0 && l < int(configs.size()), "no layer in ", ours);
  job.delta = configs[size_t(l)].attention.delta_net;
  job.rows = qkvz ? job.delta.conv_channels() + job.delta.value_width() : 2 * job.delta.value_heads;
  job.fills = {job.target, job.gate};
  return job;
}

// Qwen3.5-MoE's mlp.experts.gate_up_proj or mlp.experts.down_proj of layer `ours`.
Job fused_experts_job(const std::vector<LayerConfig>& configs, const ParamLayout& layout,
                      const std::string& ours, const std::string& file) {
  const int l = layer_of(ours);
  if (l < 0 || l >= int(configs.size()) || configs[l].mlp.kind != MlpKind::moe)
    fail(file, ": unexpected tensor '", ours, "' (its layer has no experts)");
  const MoeConfig& m = configs[l].mlp.moe;
  const MlpParams& p = layout.layers[l].mlp;
  const bool gate_up = ours.ends_with("gate_up_proj");
  const int64_t E = m.experts, I = m.expert_intermediate, C = configs[l].mlp.hidden;
  Job job;
  job.convert = gate_up ? Convert::fused_gate_up : Convert::fused_down;
  job.fused_shape = gate_up ? std::vector<int64_t>{E, 2 * I, C} : std::vector<int64_t>{E, C, I};
  job.first = gate_up ? p.experts : p.expert_down(0);
  job.stride = p.expert_stride;
  const std::string prefix = ours.substr(0, ours.rfind("experts.") + 8);
  for (int64_t e = 0; e < E; ++e)
    for (const char* part : gate_up ? std::vector<const char*>{"gate_proj", "up_proj"}
                                    : std::vector<const char*>{"down_proj"}) {
      const TensorSpec* spec = layout.find(prefix + std::to_string(e) + "." + part + ".weight");
      GATTN_ASSERT(spec, "the layout has no expert ", e, " ", part, " in layer ", l);
      job.fills.push_back(spec);
    }
  job.target = job.fills.front();
  return job;
}

// What to do with one checkpoint tensor; false: skipped (vision tower, multi-token prediction).
// configs: the model's layer_configs.
bool route(const std::string& name, const HfModelInfo& info,
           const std::vector<LayerConfig>& configs, const ParamLayout& layout,
           const std::string& file, Job& job, int& skipped, std::vector<std::string>& notes) {
  std::string ours;
  if (name.starts_with(info.tensor_prefix))
    ours = "model." + name.substr(info.tensor_prefix.size());
  else if (name == "lm_head.weight")
    ours = name;
  else if (name.starts_with("mtp.") || name.starts_with("model.visual.")) {
    ++skipped;
    return false;
  } else {
    fail(file, ": unexpected tensor '", name, "' (not part of a ", hf_layout_name(info.layout),
         " language model)");
  }
  if (ours.ends_with(".bias"))
    fail(file, ": tensor '", name, "' is a bias: gattn has no projection biases");
  if (ours == "lm_head.weight" && info.config.tie_word_embeddings) {
    notes.push_back(file +
                    ": lm_head.weight ignored, the config ties it to the embeddings (as "
                    "transformers does)");
    return false;
  }
  const bool gated = info.layout != HfLayout::qwen3 && info.config.gate.has_weight();
  if (gated && ours.ends_with(".self_attn.q_proj.weight") && layout.find(ours)) {
    job = split_job(info, layout, ours);
  } else if (info.layout == HfLayout::qwen3_next &&
             (ours.ends_with(".linear_attn.in_proj_qkvz.weight") ||
              ours.ends_with(".linear_attn.in_proj_ba.weight"))) {
    job = regroup_job(configs, layout, ours, file);
  } else if (info.fused_experts && (ours.ends_with(".mlp.experts.gate_up_proj") ||
                                    ours.ends_with(".mlp.experts.down_proj"))) {
    job = fused_experts_job(configs, layout, ours, file);
  } else {
    job.target = layout.find(ours);
    // gattn names its gate tensor sdpa_gate; a checkpoint of these layouts never has one.
    if (!job.target || ours.find("sdpa_gate") != std::string::npos)
      fail(file, ": unexpected tensor '", name, "' (not part of a ", hf_layout_name(info.layout),
           " model with this config.json)");
    // Every norm is zero-centred in these layouts but the Gated DeltaNet's output norm (w, not 1 +
    // w).
    const bool norm = job.target->shape.size() == 1 && ours.ends_with("norm.weight") &&
                      !ours.ends_with("linear_attn.norm.weight");
    job.convert = info.zero_centred_norms && norm ? Convert::plus_one : Convert::copy;
    job.fills = {job.target};
  }
  job.name = name;
  return true;
}

void check_tensor(const TensorView& t, const Job& job, const std::string& file) {
  if (t.dtype != Dtype::F32 && t.dtype != Dtype::BF16 && t.dtype != Dtype::F16)
    fail(file, ": tensor '", t.name, "' has dtype ", dtype_name(t.dtype),
         ", expected F32, BF16 or F16");
  std::vector<int64_t> expected = job.target->shape;
  if (job.convert == Convert::split_q_gate) expected[0] += job.gate->shape[0];
  if (job.convert == Convert::regroup_qkvz || job.convert == Convert::regroup_ba)
    expected[0] = job.rows;
  if (job.convert == Convert::fused_gate_up || job.convert == Convert::fused_down)
    expected = job.fused_shape;
  if (t.shape != expected)
    fail(file, ": tensor '", t.name, "' has shape ", shape_string(t.shape), ", expected ",
         shape_string(expected),
         job.convert == Convert::split_q_gate
             ? cat(" (", job.blocks.groups, " blocks of ", job.blocks.q_rows, " query rows then ",
                   job.blocks.gate_rows, " gate rows, as the config's gate asks)")
             : "");
}

// The layout offset row r of the checkpoint tensor goes to.
int64_t destination_row(const Job& job, int64_t r, int64_t cols) {
  if (job.convert == Convert::fused_gate_up || job.convert == Convert::fused_down) {
    const int64_t per_expert = job.fused_shape[1];  // rows of one expert's matrix
    return job.first + (r / per_expert) * job.stride + (r % per_expert) * cols;
  }
  if (job.convert == Convert::regroup_qkvz || job.convert == Convert::regroup_ba)
    return job.target->offset +
           qwen3_next_flat_row(job.delta, job.convert == Convert::regroup_ba, r) * cols;
  if (job.convert != Convert::split_q_gate) return job.target->offset + r * cols;
  const QGateBlocks& b = job.blocks;
  const int64_t per_group = b.q_rows + b.gate_rows, g = r / per_group, w = r % per_group;
  if (w < b.q_rows) return job.target->offset + (g * b.q_rows + w) * cols;
  return job.gate->offset + (g * b.gate_rows + w - b.q_rows) * cols;
}

void convert(const TensorView& t, const Job& job, const ParamSink& put, const std::string& file) {
  const int64_t cols = t.shape.size() >= 2 ? t.shape.back() : t.numel;
  const int64_t rows = t.numel / std::max<int64_t>(cols, 1);
  const size_t row_bytes = size_t(cols) * dtype_bytes(t.dtype);
  const int64_t chunk_rows =
      std::max<int64_t>(1, int64_t(kChunkBytes / std::max<size_t>(row_bytes, 1)));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t r1 = std::min(rows, r0 + chunk_rows);
    int64_t bad_row = -1;
#pragma omp parallel reduction(max : bad_row) if ((r1 - r0) * cols >= kMinParallelElements)
    {
      std::vector<float> out(cols);
#pragma omp for schedule(static)
      for (int64_t r = r0; r < r1; ++r) {
        convert_to_floats(t.dtype, t.data + r * row_bytes, cols, out.data());
        for (int64_t i = 0; i < cols; ++i) {
          if (job.convert == Convert::plus_one) out[i] = 1.0f + out[i];  // HF: 1.0 + w.float()
          if (!std::isfinite(out[i])) bad_row = r;
        }
        if (bad_row < 0) put(destination_row(job, r, cols), out.data(), cols);
      }
    }
    if (bad_row >= 0) fail(file, ": tensor '", t.name, "' has a non-finite value in row ", bad_row);
    release_mapped_pages(t.data + r0 * row_bytes, size_t(r1 - r0) * row_bytes);
  }
}
}  // namespace

std::vector<std::pair<std::string, std::string>> hf_weight_map(const json& index,
                                                               const std::string& origin) {
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail(origin, ": field 'weight_map' (an object of tensor name -> file) is required");
  std::vector<std::pair<std::string, std::string>> map;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string()) fail(origin, ": weight_map['", tensor, "'] is not a file name");
    check_shard_name(file.get<std::string>(), tensor, origin);
    map.emplace_back(tensor, file.get<std::string>());
  }
  return map;
}

HfShards hf_shards(const std::string& folder) {
  HfShards s;
  const fs::path dir(folder);
  const fs::path index = dir / "model.safetensors.index.json";
  const fs::path single = dir / "model.safetensors";
  // transformers reads the single file and gattn read the index: two loaders, two models.
  if (fs::exists(index) && fs::exists(single))
    fail(folder, ": holds both ", single.string(), " and ", index.string(),
         "; which one is the model is ambiguous (remove the stale one)");
  if (!fs::exists(index)) {
    s.files.push_back((dir / "model.safetensors").string());
    return s;
  }
  s.index = index.string();
  for (const auto& [tensor, name] : hf_weight_map(parse_json_file(s.index), s.index)) {
    const std::string path = (dir / name).string();
    auto it = std::find(s.files.begin(), s.files.end(), path);
    if (it == s.files.end()) {
      if (!fs::is_regular_file(path))
        fail(s.index, ": shard '", name, "' (holding tensor '", tensor, "') is missing");
      it = s.files.insert(s.files.end(), path);
    }
    s.tensor_file.emplace_back(tensor, size_t(it - s.files.begin()));
  }
  return s;
}

std::string hf_checkpoint_name(const std::string& ours, const HfModelInfo& info) {
  if (ours == "lm_head.weight" || !ours.starts_with("model.")) return ours;
  std::string name = info.tensor_prefix + ours.substr(6);
  if (info.layout == HfLayout::qwen3_next)
    for (const auto& [flat, grouped] : {std::pair{"in_proj_qkv.", "in_proj_qkvz."},
                                        {"in_proj_z.", "in_proj_qkvz."},
                                        {"in_proj_b.", "in_proj_ba."},
                                        {"in_proj_a.", "in_proj_ba."}})
      if (const size_t at = name.find(flat); at != std::string::npos)
        return name.replace(at, std::string(flat).size(), grouped);
  return name;
}

namespace {
// Every checkpoint tensor checked against the layout, before anything is converted or allocated.
struct HfWeightPlan {
  HfShards shards;
  std::vector<std::shared_ptr<SafetensorsReader>> readers;
  std::vector<Job> jobs;
  std::vector<std::string> notes;  // tensors read but not used
};

HfWeightPlan plan_hf_weights(const HfModelInfo& info, const ParamLayout& layout) {
  HfWeightPlan plan{.shards = hf_shards(info.folder), .readers = {}, .jobs = {}, .notes = {}};
  const HfShards& shards = plan.shards;
  for (const std::string& file : shards.files)
    plan.readers.push_back(std::make_shared<SafetensorsReader>(file));
  std::vector<std::pair<std::string, size_t>> names = shards.tensor_file;
  if (shards.index.empty())
    for (const TensorView& t : plan.readers[0]->tensors()) names.emplace_back(t.name, 0);

  const std::vector<LayerConfig> configs = layer_configs(info.config);
  std::set<std::string> filled;
  int skipped = 0;
  for (const auto& [name, file] : names) {
    const std::string where = shards.index.empty() ? shards.files[file] : shards.index;
    Job job;
    if (!route(name, info, configs, layout, where, job, skipped, plan.notes)) continue;
    job.file = file;
    const TensorView* t = plan.readers[file]->find(name);
    if (!t)
      fail(shards.index, ": names tensor '", name, "' in shard '",
           fs::path(shards.files[file]).filename().string(), "', which does not have it");
    check_tensor(*t, job, shards.files[file]);
    for (const TensorSpec* spec : job.fills)
      if (!filled.insert(spec->name).second)
        fail(where, ": tensor '", name, "' fills '", spec->name, "' a second time");
    plan.jobs.push_back(std::move(job));
  }
  for (const TensorSpec& spec : layout.tensors())
    if (!filled.count(spec.name))
      fail(shards.index.empty() ? shards.files[0] : shards.index, ": tensor '",
           hf_checkpoint_name(spec.name, info), "' is missing (", hf_layout_name(info.layout),
           " with this config.json needs it)");
  if (skipped)
    plan.notes.push_back(info.folder + ": skipped " + std::to_string(skipped) +
                         " tensors of the vision tower and multi-token prediction (mtp.*)");
  return plan;
}

// A stretch of layout values a checkpoint tensor holds in bf16 in the layout's order: one
// expert's matrix (of a per-expert tensor, or a fused tensor's slice).
struct MappableRun {
  int64_t offset, count;
  const uint8_t* data;
  size_t job;
};

std::vector<MappableRun> mappable_expert_runs(const HfWeightPlan& plan) {
  std::vector<MappableRun> runs;
  for (size_t j = 0; j < plan.jobs.size(); ++j) {
    const Job& job = plan.jobs[j];
    const TensorView& t = plan.readers[job.file]->get(job.name);
    if (t.dtype != Dtype::BF16) continue;
    if (job.convert == Convert::copy && job.target->name.find(".mlp.experts.") != std::string::npos)
      runs.push_back({job.target->offset, job.target->numel, t.data, j});
    if (job.convert == Convert::fused_gate_up || job.convert == Convert::fused_down) {
      const int64_t per_expert = job.fused_shape[1] * job.fused_shape[2];
      for (int64_t e = 0; e < job.fused_shape[0]; ++e)
        runs.push_back({job.first + e * job.stride, per_expert, t.data + e * per_expert * 2, j});
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const MappableRun& a, const MappableRun& b) { return a.offset < b.offset; });
  return runs;
}

// Maps every expert whose matrices, as the MoE block reads them (gate | up as one [2 Ie, C]
// matrix, down alone), the files hold contiguously in bf16; returns the jobs left to convert.
std::vector<Job> map_experts(const HfWeightPlan& plan, const ParamLayout& layout, Weights& w) {
  const std::vector<MappableRun> runs = mappable_expert_runs(plan);
  auto run_at = [&](int64_t offset) -> const MappableRun* {
    const auto at = std::lower_bound(runs.begin(), runs.end(), offset,
                                     [](const MappableRun& r, int64_t o) { return r.offset < o; });
    return at != runs.end() && at->offset == offset ? &*at : nullptr;
  };
  std::vector<int64_t> unmapped_runs(plan.jobs.size(), 0);
  for (const MappableRun& r : runs) ++unmapped_runs[r.job];
  const std::vector<int64_t> runs_of = unmapped_runs;
  // One read of `count` values at `offset`: mapped where runs from the start cover it
  // contiguously in the file.
  auto map_read = [&](int64_t offset, int64_t count) {
    std::vector<const MappableRun*> parts;
    for (int64_t at = offset; at < offset + count;) {
      const MappableRun* r = run_at(at);
      if (!r || (!parts.empty() && r->data != parts.back()->data + parts.back()->count * 2)) return;
      parts.push_back(r);
      at += r->count;
    }
    w.map_bf16(offset, count, reinterpret_cast<const uint16_t*>(parts[0]->data),
               plan.readers[plan.jobs[parts[0]->job].file]);
    for (const MappableRun* r : parts) --unmapped_runs[r->job];
  };
  for (int l = 0; l < int(layout.layers.size()); ++l) {
    const LayerConfig& c = w.layer(l);
    if (c.mlp.kind != MlpKind::moe) continue;
    const MlpParams& p = layout.layers[l].mlp;
    const int64_t I = c.mlp.moe.expert_intermediate, C = c.mlp.hidden;
    for (int64_t e = 0; e < c.mlp.moe.experts; ++e) {
      map_read(p.experts + e * p.expert_stride, 2 * I * C);
      map_read(p.expert_down(int(e)), C * I);
    }
  }
  std::vector<Job> rest;
  for (size_t j = 0; j < plan.jobs.size(); ++j)
    if (unmapped_runs[j] > 0 || runs_of[j] == 0) rest.push_back(plan.jobs[j]);
  return rest;
}

void convert_hf_weights(const HfWeightPlan& plan, const ParamSink& put) {
  for (size_t f = 0; f < plan.readers.size(); ++f)
    for (const Job& job : plan.jobs)
      if (job.file == f) convert(plan.readers[f]->get(job.name), job, put, plan.shards.files[f]);
}

size_t tensor_count(const std::string& folder) {
  size_t tensors = 0;
  for (const std::string& file : hf_shards(folder).files)
    tensors += SafetensorsReader(file).tensors().size();
  return tensors;
}
}  // namespace

void load_hf_weights(const HfModelInfo& info, const ParamLayout& layout, float* dest,
                     LogSink& log) {
  const HfWeightPlan plan = plan_hf_weights(info, layout);
  for (const std::string& note : plan.notes) log.note(note);
  convert_hf_weights(plan, sink_into(dest));
}

std::unique_ptr<Weights> load_any_model(const std::string& folder, LogSink& log,
                                        WeightDtype storage, bool map) {
  if (is_gguf_file(folder)) return load_gguf_model(folder, log, storage);
  if (!is_hf_model_folder(folder)) return load_model(folder, storage);
  const HfModelInfo info = read_hf_model_info(folder);
  for (const std::string& note : info.notes) log.note(note);
  check_layers_fit(info.config.num_hidden_layers, tensor_count(folder), folder + "/config.json");
  const ParamLayout layout(info.config);
  // Every tensor's shape is checked against the headers first: the allocation below is bounded by
  // what the files hold, whatever config.json claims.
  HfWeightPlan plan = plan_hf_weights(info, layout);
  for (const std::string& note : plan.notes) log.note(note);
  std::unique_ptr<Weights> weights;
  try {
    weights = std::make_unique<Weights>(info.config, storage);
  } catch (const std::bad_alloc&) {
    fail(folder, ": out of memory allocating ",
         layout.total() * (storage == WeightDtype::f32 ? 4 : 2),
         " bytes for the parameters of its config.json");
  }
  if (map && storage == WeightDtype::bf16 && info.config.has_moe_layers()) {
    HfWeightPlan rest = std::move(plan);
    rest.jobs = map_experts(rest, layout, *weights);
    if (weights->mapped_bytes() > 0) {
      // Paging where the experts would take over half of what memory is left: then they will
      // not all stay in the page cache.
      const int64_t room = available_memory_bytes();
      if (room >= 0 && weights->mapped_bytes() > room / 2) weights->page_mapped_ranges();
      log.note(folder + ": " + std::to_string(weights->mapped_bytes()) +
               " bytes of experts read from the mapped checkpoint files" +
               (weights->paging() ? ", paged in as chosen (" + std::to_string(room) +
                                        " bytes of memory available)"
                                  : ""));
    }
    convert_hf_weights(rest, sink_into(*weights));
    return weights;
  }
  convert_hf_weights(plan, sink_into(*weights));
  return weights;
}

}  // namespace gattn
