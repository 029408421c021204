// The Hugging Face loader against transformers itself: tiny random models saved by
// save_pretrained in each layout (tools/reference/make_hf_fixtures.py), loaded by gattn and run
// through gattn's forward, must give transformers' fp32 logits.
//
// Tolerance: relative L2 1e-5 for every fixture, bf16 ones included: a bf16 checkpoint's values
// are exact in fp32, and the reference is transformers' fp32 run of exactly those values, so both
// sides compute the same fp32 function (gattn's own golden tests see 2-5e-7 against an fp64
// reference). A layout read the wrong way (grouped vs interleaved gate rows, w vs 1 + w) errs by
// O(1): the test that swaps the layouts shows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "golden_gradients.h"
#include "hf_reference.h"
#include "io/checkpoint.h"
#include "io/hf_config.h"
#include "io/hf_export.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "model/infer_state.h"
#include "model/router_balance.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/log.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kHfDir = std::string(GATTN_FIXTURE_DIR) + "/hf";

// gattn's forward on one sequence (the training-side pass the golden fixtures check).
std::vector<float> forward_logits(const Weights& weights, const std::vector<int32_t>& ids) {
  TrainState state(weights);
  std::vector<float> logits(ids.size() * size_t(weights.config().vocab_size));
  state.forward(Batch{ids.data(), nullptr, 1, int(ids.size())}, logits.data());
  return logits;
}

// The same through the inference path: a prefill of the whole sequence into a KV cache.
std::vector<float> prefill_logits(const Weights& weights, const std::vector<int32_t>& ids) {
  InferState state(weights, int(ids.size()), int(ids.size()));
  std::vector<float> logits(ids.size() * size_t(weights.config().vocab_size));
  state.forward(ids.data(), int(ids.size()), logits.data());
  return logits;
}

double relative_l2(const std::vector<float>& ours, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

using Reference = HfReference;

// Loads a folder with an explicitly given (possibly wrong) layout and returns the logit error.
double error_when_read_as(const std::string& folder, HfModelInfo info) {
  Weights weights(info.config);
  load_hf_weights(info, weights.layout(), weights.data());
  const Reference ref(folder);
  return relative_l2(forward_logits(weights, ref.ids), ref.logits);
}

// Every fixture tools/reference/make_hf_fixtures.py writes. Listed, not read from the folder, so a
// fixture that goes missing fails instead of silently dropping its tests.
const std::vector<std::string> kHfFixtures = {"authors_elementwise_f32",
                                              "authors_headwise_bf16",
                                              "qwen3_5_f32",
                                              "qwen3_5_hybrid_f32",
                                              "qwen3_5_hybrid_tied_bf16_sharded",
                                              "qwen3_5_moe_hybrid_f32",
                                              "qwen3_bf16_sharded",
                                              "qwen3_f32",
                                              "qwen3_next_bf16",
                                              "qwen3_next_f32",
                                              "qwen3_next_hybrid_f32",
                                              "qwen3_next_moe_f32",
                                              "qwen3_next_moe_hybrid_f32"};

TEST(HfFixtures, TheFolderHoldsExactlyTheListedFixtures) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(kHfDir))
    if (entry.is_directory()) found.push_back(entry.path().filename().string());
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, kHfFixtures);
}

class HfGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGolden, LogitsMatchTransformers) {
  const std::string folder = kHfDir + "/" + GetParam();
  ASSERT_TRUE(is_hf_model_folder(folder));
  const std::unique_ptr<Weights> weights = load_any_model(folder);
  const Reference ref(folder);
  const double err = relative_l2(forward_logits(*weights, ref.ids), ref.logits);
  const double prefill_err = relative_l2(prefill_logits(*weights, ref.ids), ref.logits);
  std::printf("  %-26s layout %-13s logits rel. L2 vs transformers %.3e (prefill %.3e)\n",
              GetParam().c_str(), hf_layout_name(read_hf_model_info(folder).layout), err,
              prefill_err);
  EXPECT_LT(err, 1e-5);
  EXPECT_LT(prefill_err, 1e-5);
}

// A model with experts: the load-balancing loss of one forward pass over the reference ids (both
// MoE layers' router rows pooled), against transformers' aux_loss (load_balancing_loss_func,
// before router_aux_loss_coef, computed in float64).
TEST_P(HfGolden, RouterLoadBalancingLossMatchesTransformers) {
  const std::string folder = kHfDir + "/" + GetParam();
  const SafetensorsReader file(folder + "/reference.safetensors");
  if (!file.find("router_aux_loss")) {
    const std::unique_ptr<Weights> weights = load_any_model(folder);
    EXPECT_FALSE(weights->config().has_moe_layers()) << "a model with experts needs the reference";
    return;
  }
  const std::unique_ptr<Weights> weights = load_any_model(folder);
  const Reference ref(folder);
  RouterBalance balance(weights->config().num_experts, 1.0, 1.0);
  TrainState state(*weights);
  state.set_router_balance(&balance);
  state.forward(Batch{ref.ids.data(), nullptr, 1, int(ref.ids.size())});
  balance.freeze();
  const double theirs = file.read_floats("router_aux_loss")[0];
  std::printf("  %-26s load-balancing loss %.8f (transformers %.8f)\n", GetParam().c_str(),
              balance.loss(), theirs);
  EXPECT_NEAR(balance.loss(), theirs, 1e-5 * theirs);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfGolden, ::testing::ValuesIn(kHfFixtures),
                         [](const auto& test) { return test.param; });

// A fine-tuning step: the mean next-token loss over the reference ids and its gradient, against
// transformers' (folder/finetune/, tools/reference/make_hf_fixtures.py). The reference gradients
// are stored under the checkpoint's names and layout, so the loader's conversion reads them into
// gattn's layout (with norm weights as they are: d/dw of 1 + w is the gradient of the stored w).
TEST_P(HfGolden, FinetuneStepMatchesTransformers) {
  const std::string folder = kHfDir + "/" + GetParam();
  const std::unique_ptr<Weights> weights = load_any_model(folder);
  const Reference ref(folder);
  std::vector<int32_t> targets(ref.ids.begin() + 1, ref.ids.end());
  targets.push_back(-1);
  TrainState state(*weights);
  const int count = int(ref.ids.size()) - 1;
  const LossSum loss = state.forward_backward(
      Batch{ref.ids.data(), targets.data(), 1, int(ref.ids.size())}, 1.0f / float(count));
  const double ours_loss = loss.nats / double(count);
  const double ref_loss =
      SafetensorsReader(folder + "/finetune/reference.safetensors").read_floats("loss")[0];
  EXPECT_NEAR(ours_loss, ref_loss, 1e-5 * ref_loss) << "loss";

  HfModelInfo info = read_hf_model_info(folder);
  info.folder = folder + "/finetune";
  info.zero_centred_norms = false;
  Weights ref_grads(info.config);
  load_hf_weights(info, ref_grads.layout(), ref_grads.data());
  // The reference is float64; its fp32 error per tensor is stored under the checkpoint's names.
  const nlohmann::json fp32_error = nlohmann::json::parse(
      SafetensorsReader(folder + "/finetune/reference.safetensors").metadata_value("fp32_rel_err"));
  double worst = 0;
  std::string worst_name;
  for (const TensorSpec& t : weights->layout().tensors()) {
    // A q_proj of a gated layout holds the gate rows too: its checkpoint entry covers both.
    const std::string stored =
        hf_checkpoint_name(t.name.find("sdpa_gate") != std::string::npos
                               ? t.name.substr(0, t.name.find("sdpa_gate")) + "q_proj.weight"
                               : t.name,
                           info);
    const double torch_err = fp32_error.at(stored).get<double>();
    const GradientError err =
        gradient_error(state.grads().data() + t.offset, ref_grads.data() + t.offset, t.shape);
    EXPECT_LE(err.tensor, golden_gradient_tolerance(torch_err))
        << t.name << " (PyTorch fp32: " << torch_err << ")";
    EXPECT_LE(err.worst_row, golden_row_tolerance(torch_err))
        << t.name << ", row " << err.worst_row_index;
    if (err.tensor > worst) worst = err.tensor, worst_name = t.name;
  }
  std::printf("  %-26s loss %.6f (transformers %.6f), worst gradient rel. L2 %.2e (%s)\n",
              GetParam().c_str(), ours_loss, ref_loss, worst, worst_name.c_str());
}

// Decoding with the KV cache against transformers' greedy continuation (generate.safetensors):
// teacher-forced with transformers' tokens, every step's logits within 1e-5 relative L2; and
// gattn's own greedy choice equals transformers' token at every step until transformers' top two
// logits are within 1e-4 (a near-tie may break either way; from there the sequences may part).
TEST_P(HfGolden, DecodeMatchesTransformersGreedy) {
  const std::string folder = kHfDir + "/" + GetParam();
  const std::unique_ptr<Weights> weights = load_any_model(folder);
  const Reference ref(folder);
  const SafetensorsReader file(folder + "/generate.safetensors");
  const std::vector<int64_t> tokens = file.read_ints("tokens");
  const std::vector<float> ref_logits = file.read_floats("logits");
  const size_t vocab = size_t(weights->config().vocab_size);
  ASSERT_EQ(ref_logits.size(), tokens.size() * vocab);
  // Fixtures with the float64 model's logits (the hybrids): each step against those, within
  // 1e-5 or twice transformers' own fp32 error at that step, whichever is larger (a step where
  // fp32 strays from the exact value strays in every fp32 implementation).
  const bool exact = file.find("logits_f64") != nullptr;
  const std::vector<float> exact_logits = exact ? file.read_floats("logits_f64") : ref_logits;
  const std::vector<float> fp32_err =
      exact ? file.read_floats("fp32_err") : std::vector<float>(tokens.size(), 0.0f);

  InferState state(*weights, int(ref.ids.size() + tokens.size()), int(ref.ids.size()));
  std::vector<float> logits(vocab);
  state.forward_last(ref.ids.data(), int(ref.ids.size()), logits.data());
  double worst = 0;
  size_t greedy_checked = 0;
  bool tie_seen = false;
  for (size_t step = 0; step < tokens.size(); ++step) {
    const std::vector<float> expected(ref_logits.begin() + step * vocab,
                                      ref_logits.begin() + (step + 1) * vocab);
    const std::vector<float> truth(exact_logits.begin() + step * vocab,
                                   exact_logits.begin() + (step + 1) * vocab);
    const double err = relative_l2(logits, truth);
    EXPECT_LT(err, std::max(1e-5, 2.0 * fp32_err[step])) << "step " << step;
    worst = std::max(worst, err);
    std::vector<float> sorted = expected;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    tie_seen = tie_seen || sorted[0] - sorted[1] < 1e-4f;
    if (!tie_seen) {
      const int64_t ours = std::max_element(logits.begin(), logits.end()) - logits.begin();
      EXPECT_EQ(ours, tokens[step]) << "greedy token at step " << step;
      ++greedy_checked;
    }
    const int32_t next = int32_t(tokens[step]);  // teacher-forced
    state.forward_last(&next, 1, logits.data());
  }
  std::printf(
      "  %-26s decode logits rel. L2 vs %s: worst %.2e over %zu steps; greedy "
      "tokens equal for %zu steps%s\n",
      GetParam().c_str(), exact ? "float64 transformers" : "transformers", worst, tokens.size(),
      greedy_checked, tie_seen ? " (then a near-tie)" : " (all)");
}

TEST(HfLoad, FixturesCoverEveryLayout) {
  std::set<std::string> layouts;
  for (const std::string& name : kHfFixtures)
    layouts.insert(hf_layout_name(read_hf_model_info(kHfDir + "/" + name).layout));
  EXPECT_EQ(layouts, (std::set<std::string>{"qwen3", "authors_gated", "qwen3_next", "qwen3_5"}));
}

TEST(HfLoad, GroupedAndInterleavedGateRowsAreToldApart) {
  const std::string authors = kHfDir + "/authors_elementwise_f32";
  HfModelInfo info = read_hf_model_info(authors);
  ASSERT_EQ(info.layout, HfLayout::authors_gated);
  info.layout = HfLayout::qwen3_next;  // interleaved per head, norms still plain
  const double authors_as_next = error_when_read_as(authors, info);

  const std::string next = kHfDir + "/qwen3_next_f32";
  info = read_hf_model_info(next);
  ASSERT_EQ(info.layout, HfLayout::qwen3_next);
  info.layout = HfLayout::authors_gated;  // grouped by KV group, norms still 1 + w
  const double next_as_authors = error_when_read_as(next, info);
  std::printf("  wrong layout: authors as interleaved %.2f, qwen3_next as grouped %.2f\n",
              authors_as_next, next_as_authors);
  EXPECT_GT(authors_as_next, 0.1);
  EXPECT_GT(next_as_authors, 0.1);
}

TEST(HfLoad, ZeroCentredNormsBecomeOnePlusW) {
  const std::string folder = kHfDir + "/qwen3_next_f32";
  const std::unique_ptr<Weights> weights = load_any_model(folder);
  const float* params = weights->data();
  const SafetensorsReader file(folder + "/model.safetensors");
  const ParamLayout& layout = weights->layout();
  for (const char* name : {"model.layers.1.input_layernorm.weight", "model.norm.weight",
                           "model.layers.0.self_attn.q_norm.weight"}) {
    const std::vector<float> w = file.read_floats(name);
    const TensorSpec* spec = layout.find(name);
    ASSERT_NE(spec, nullptr) << name;
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_EQ(params[spec->offset + i], 1.0f + w[i]) << name << " [" << i << "]";
  }
}

// --weights-dtype bf16 reads a Hugging Face folder straight into bf16 storage (split query/gate
// rows, 1 + w norms, shards): what loading f32 and converting holds, bit for bit.
TEST(HfLoad, Bf16StorageIsLoadedDirectly) {
  for (const char* name :
       {"qwen3_bf16_sharded", "qwen3_next_bf16", "authors_headwise_bf16", "qwen3_5_f32",
        "qwen3_5_hybrid_tied_bf16_sharded", "qwen3_next_hybrid_f32"}) {
    const std::string folder = kHfDir + "/" + name;
    const auto direct = load_any_model(folder, discard_log(), WeightDtype::bf16);
    const auto converted = load_any_model(folder);
    converted->convert_to_bf16();
    ASSERT_EQ(direct->storage(), WeightDtype::bf16) << name;
    EXPECT_EQ(std::memcmp(direct->bf16_data(), converted->bf16_data(),
                          size_t(direct->size()) * sizeof(uint16_t)),
              0)
        << name;
    const int64_t norm = direct->layout().final_norm;
    for (int i = 0; i < direct->config().hidden_size; ++i)
      ASSERT_EQ(direct->at(norm)[i], converted->at(norm)[i]) << name;
  }
}

// An 8-token prompt and 8 greedy steps (a's choices) in both models: each step's logits of b
// within 1e-5 relative L2 of a's.
void expect_same_decode(const Weights& a_weights, const Weights& b_weights) {
  const size_t vocab = size_t(a_weights.config().vocab_size);
  std::vector<int32_t> ids = {1, 7, 3, 12, 5, 9, 2, 4};
  InferState a(a_weights, 32, 8), b(b_weights, 32, 8);
  std::vector<float> la(vocab), lb(vocab);
  a.forward_last(ids.data(), int(ids.size()), la.data());
  b.forward_last(ids.data(), int(ids.size()), lb.data());
  for (int step = 0; step < 8; ++step) {
    EXPECT_LT(relative_l2(lb, la), 1e-5) << "step " << step;
    const int32_t next = int32_t(std::max_element(la.begin(), la.end()) - la.begin());
    a.forward_last(&next, 1, la.data());
    b.forward_last(&next, 1, lb.data());
  }
}

// A hybrid in bf16 storage decodes: its Gated DeltaNet layers read their convolution taps (and
// norms, gates) as floats, kept exact (the 1 + w norms too); the fixture's weights are bf16, so
// the prompt's and 8 decode steps' logits are the f32 model's (4.5e-3 to 5.8e-2 when the 1 + w
// norms were rounded to bf16).
TEST(HfLoad, AHybridDecodesFromBf16Storage) {
  const std::string folder = kHfDir + "/qwen3_5_hybrid_tied_bf16_sharded";
  const auto f32 = load_any_model(folder);
  const auto bf16 = load_any_model(folder, discard_log(), WeightDtype::bf16);
  expect_same_decode(*f32, *bf16);
}

// A mixture of experts in bf16 storage decodes with the fp32 model's logits when the weights are
// the same: the fixture's rounded to bf16 first (each expert's matrices read at its own offset of
// the bf16 copy; 5e-2 relative L2 without the rounding).
TEST(HfLoad, AMixtureOfExpertsDecodesFromBf16Storage) {
  const std::unique_ptr<Weights> f32 = load_any_model(kHfDir + "/qwen3_next_moe_hybrid_f32");
  for (int64_t i = 0; i < f32->size(); ++i) f32->data()[i] = round_to_bf16(f32->data()[i]);
  const fs::path dir = fs::temp_directory_path() / ("gattn_moe_bf16_" + std::to_string(::getpid()));
  save_model(dir.string(), *f32);
  const auto bf16 = load_any_model(dir.string(), discard_log(), WeightDtype::bf16);
  fs::remove_all(dir);
  ASSERT_EQ(bf16->storage(), WeightDtype::bf16);
  expect_same_decode(*f32, *bf16);
}

// A bf16 checkpoint's experts are read from the mapped files, not copied (per-expert tensors as
// Qwen3-Next stores them, fused ones as Qwen3.5-MoE does): every expert byte mapped, the storage
// that much smaller, and the prompt's and 8 greedy steps' logits bitwise those of the copied model.
TEST(HfLoad, ExpertsAreReadFromTheMappedCheckpoint) {
  const std::unique_ptr<Weights> source = load_any_model(kHfDir + "/qwen3_5_moe_hybrid_f32");
  for (const HfExportFormat format : {HfExportFormat::qwen3_next, HfExportFormat::qwen3_5}) {
    const fs::path dir =
        fs::temp_directory_path() /
        ("gattn_mapped_experts_" + std::to_string(::getpid()) + "_" + std::to_string(int(format)));
    export_hf(*source, dir.string(), {.format = format, .dtype = Dtype::BF16});
    const auto copied = load_any_model(dir.string(), discard_log(), WeightDtype::bf16, false);
    const auto mapped = load_any_model(dir.string(), discard_log(), WeightDtype::bf16, true);
    int64_t expert_values = 0;
    for (const TensorSpec& t : mapped->layout().tensors())
      if (t.name.find(".mlp.experts.") != std::string::npos) expert_values += t.numel;
    EXPECT_EQ(copied->mapped_bytes(), 0);
    EXPECT_EQ(mapped->mapped_bytes(), 2 * expert_values) << int(format);
    EXPECT_EQ(copied->parameter_bytes() - mapped->parameter_bytes(), 2 * expert_values);
    const size_t vocab = size_t(source->config().vocab_size);
    std::vector<int32_t> ids = {1, 7, 3, 12, 5, 9, 2, 4};
    InferState a(*copied, 32, 8), b(*mapped, 32, 8);
    std::vector<float> la(vocab), lb(vocab);
    a.forward_last(ids.data(), int(ids.size()), la.data());
    b.forward_last(ids.data(), int(ids.size()), lb.data());
    for (int step = 0; step < 8; ++step) {
      ASSERT_EQ(la, lb) << "step " << step;
      const int32_t next = int32_t(std::max_element(la.begin(), la.end()) - la.begin());
      a.forward_last(&next, 1, la.data());
      b.forward_last(&next, 1, lb.data());
    }
    fs::remove_all(dir);
  }
}

// Qwen3.5-MoE's experts as two fused 3-D tensors per layer (mlp.experts.gate_up_proj [E, 2 Ie, C],
// down_proj [E, C, Ie]: how the Hub's Qwen3.5-MoE checkpoints hold them; transformers writes them
// one by one, as the fixture has them) load to the same weights, bit for bit; a fused tensor of
// another shape is named.
TEST(HfLoad, FusedExpertTensorsLoadAsThePerExpertOnes) {
  const std::string fixture = kHfDir + "/qwen3_5_moe_hybrid_f32";
  const fs::path dir = fs::temp_directory_path() / ("gattn_fused_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fixture, dir, fs::copy_options::recursive);
  const SafetensorsReader per_expert(fixture + "/model.safetensors");
  const Config& c = read_hf_model_info(fixture).config;
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, C = c.hidden_size;
  const float one = 1.0f;
  auto write_fused = [&](bool transposed_down, const char* extra = nullptr) {
    std::vector<TensorToWrite> out;
    if (extra) out.push_back({extra, Dtype::F32, {1}, &one});
    std::vector<std::vector<float>> fused;  // kept alive until written
    fused.reserve(size_t(2 * c.num_hidden_layers));
    for (const TensorView& t : per_expert.tensors())
      if (t.name.find(".mlp.experts.") == std::string::npos)
        out.push_back({t.name, t.dtype, t.shape, t.data});
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      const std::string experts = "model.layers." + std::to_string(l) + ".mlp.experts.";
      std::vector<float>& gate_up = fused.emplace_back();
      std::vector<float>& down = fused.emplace_back();
      for (int64_t e = 0; e < E; ++e) {
        for (const char* part : {"gate_proj", "up_proj", "down_proj"}) {
          const std::vector<float> w =
              per_expert.read_floats(experts + std::to_string(e) + "." + part + ".weight");
          std::vector<float>& to = std::string(part) == "down_proj" ? down : gate_up;
          to.insert(to.end(), w.begin(), w.end());
        }
      }
      out.push_back({experts + "gate_up_proj", Dtype::F32, {E, 2 * I, C}, gate_up.data()});
      out.push_back(
          {experts + "down_proj", Dtype::F32,
           transposed_down ? std::vector<int64_t>{E, I, C} : std::vector<int64_t>{E, C, I},
           down.data()});
    }
    write_safetensors((dir / "model.safetensors").string(), out);
  };
  write_fused(false);
  const auto ours = load_any_model(dir.string());
  const auto theirs = load_any_model(fixture);
  EXPECT_TRUE(ours->values() == theirs->values());
  auto error_of_load = [&] {
    try {
      load_any_model(dir.string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  write_fused(true);
  const std::string error = error_of_load();
  EXPECT_NE(error.find("tensor 'model.layers.0.mlp.experts.down_proj' has shape [4, 16, 32], "
                       "expected [4, 32, 16]"),
            std::string::npos)
      << error;
  for (const char* name :
       {"model.layers.-1.mlp.experts.down_proj",  // no layer of the model
        "model.layers.7.mlp.experts.down_proj", "model.layers.x.mlp.experts.down_proj",
        "model.norm.mlp.experts.down_proj"}) {
    write_fused(false, name);
    EXPECT_NE(error_of_load().find(std::string("unexpected tensor '") + name + "'"),
              std::string::npos)
        << error_of_load();
  }
  fs::remove_all(dir);
}

TEST(HfLoad, GattnCheckpointsStillLoad) {
  const fs::path dir = fs::temp_directory_path() / ("gattn_hf_ckpt_" + std::to_string(::getpid()));
  const std::unique_ptr<Weights> hf = load_any_model(kHfDir + "/qwen3_f32");
  save_model(dir.string(), *hf);
  EXPECT_FALSE(is_hf_model_folder(dir.string()));
  const std::unique_ptr<Weights> back = load_any_model(dir.string());
  fs::remove_all(dir);
  EXPECT_EQ(config_to_json(back->config()), config_to_json(hf->config()));
  EXPECT_TRUE(back->values() == hf->values());
}

TEST(HfLoad, RecordsTheTokenizerJsonWhenPresent) {
  EXPECT_EQ(read_hf_model_info(kHfDir + "/qwen3_f32").tokenizer_json, "");
  const fs::path dir = fs::temp_directory_path() / ("gattn_hf_tok_" + std::to_string(::getpid()));
  fs::copy(kHfDir + "/qwen3_f32", dir, fs::copy_options::recursive);
  std::ofstream(dir / "tokenizer.json") << "{}";
  const std::string recorded = read_hf_model_info(dir.string()).tokenizer_json;
  fs::remove_all(dir);
  EXPECT_EQ(recorded, (dir / "tokenizer.json").string());
}

// What the loader reads but does not use is told to the sink the caller gives, not to stderr.
TEST(HfLoad, NotesGoToTheCallersLogSink) {
  const fs::path dir = fs::temp_directory_path() / ("gattn_hf_note_" + std::to_string(::getpid()));
  fs::copy(kHfDir + "/qwen3_f32", dir, fs::copy_options::recursive);
  json config = json::parse(std::ifstream(dir / "config.json"));
  config["some_future_field"] = 1;
  std::ofstream(dir / "config.json") << config.dump(2);
  RecordingLog log;
  ::testing::internal::CaptureStderr();
  const std::unique_ptr<Weights> weights = load_any_model(dir.string(), log);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  fs::remove_all(dir);
  EXPECT_EQ(stderr_text, "");
  EXPECT_NE(log.text().find("ignoring fields gattn does not use: some_future_field"),
            std::string::npos)
      << log.text();
}

}  // namespace
}  // namespace gattn
