// The whole model against the independent float64 PyTorch reference (tools/reference/): logits,
// loss and the gradient of every parameter, for every gate variant, at 1 and 2 threads.
//
// Tolerances: relative L2 1e-5 for logits and loss; gradients by the golden rule
// (tests/golden_gradients.h: per tensor within max(10 x the tensor's PyTorch fp32 error, 1e-6), per
// row within 1e-4). The reference run in PyTorch fp32 on the same weights errs by <= 5e-7
// (logits) and <= 1.3e-6 (gradients), recorded in each fixture as fp32_rel_err and printed beside
// ours; a wrong formula errs by O(1).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "golden_gradients.h"
#include "io/safetensors.h"
#include "model/layout.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "util/threads.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

// Every fixture tools/reference/make_fixtures.py writes. Listed, not read from the folder, so a
// fixture that goes missing fails its test instead of silently dropping it.
const std::vector<std::string> kFixtures = {"baseline",
                                            "baseline_mqa_partial",
                                            "g1_additive_identity",
                                            "g1_additive_silu",
                                            "g1_elementwise",
                                            "g1_head_rmsnorm",
                                            "g1_head_shared",
                                            "g1_headwise",
                                            "g1_input_independent",
                                            "g1_ns_sigmoid",
                                            "g1_qwen3next_like",
                                            "g1_sandwich_clip",
                                            "g1_silu",
                                            "g1_silu_only",
                                            "g2_elementwise",
                                            "g2_head_shared",
                                            "g2_headwise",
                                            "g2_headwise_head_shared_identity_mult",
                                            "g3_elementwise",
                                            "g3_headwise_after_qk_norm",
                                            "g4_after_qk_norm_head_shared",
                                            "g4_elementwise",
                                            "g5_elementwise",
                                            "g5_input_independent_additive",
                                            "hybrid_g1",
                                            "hybrid_r1_baseline"};

TEST(GoldenSet, TheFolderHoldsExactlyTheListedFixtures) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(GATTN_FIXTURE_DIR))
    if (entry.path().extension() == ".safetensors") found.push_back(entry.path().stem().string());
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, kFixtures);
}

double relative_l2(const float* ours, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

struct Fixture {
  explicit Fixture(const std::string& name)
      : file(std::string(GATTN_FIXTURE_DIR) + "/" + name + ".safetensors"),
        config(config_from_json(nlohmann::json::parse(file.metadata_value("config")), file.path())),
        torch_fp32_error(nlohmann::json::parse(file.metadata_value("fp32_rel_err"))) {
    const std::vector<int64_t> ids64 = file.read_ints("input_ids"),
                               targets64 = file.read_ints("targets");
    ids.assign(ids64.begin(), ids64.end());
    targets.assign(targets64.begin(), targets64.end());
    batch = int(file.get("input_ids").shape[0]);
    seq_len = int(file.get("input_ids").shape[1]);
  }
  SafetensorsReader file;
  Config config;
  nlohmann::json torch_fp32_error;
  std::vector<int32_t> ids, targets;
  int batch, seq_len;
};

class Golden : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Golden, LogitsLossAndEveryGradientMatchTheReference) {
  const auto& [name, threads] = GetParam();
  const ThreadScope thread_scope(threads);
  const Fixture f(name);
  Weights weights(f.config);
  for (const TensorSpec& t : weights.layout().tensors()) {
    ASSERT_EQ(f.file.get(t.name).shape, t.shape) << t.name;
    const std::vector<float> values = f.file.read_floats(t.name);
    std::copy(values.begin(), values.end(), weights.data() + t.offset);
  }
  TrainState model(weights);
  const Batch batch{f.ids.data(), f.targets.data(), f.batch, f.seq_len};
  std::vector<float> logits(f.ids.size() * f.config.vocab_size);
  const LossSum forward = model.forward(batch, logits.data());
  const double ref_loss = f.file.read_floats("loss")[0];

  const double logits_err = relative_l2(logits.data(), f.file.read_floats("logits"));
  const double loss_err = std::abs(forward.nats / forward.tokens - ref_loss) / std::abs(ref_loss);
  EXPECT_LT(logits_err, 1e-5);
  EXPECT_LT(loss_err, 1e-5);

  model.zero_grads();
  const LossSum trained = model.forward_backward(batch, 1.0f / float(count_targets(batch)));
  EXPECT_EQ(trained.nats, forward.nats) << "forward and forward_backward compute the same loss";
  double worst = 0, worst_torch = 0, worst_row = 0;
  std::string worst_name;
  for (const TensorSpec& t : weights.layout().tensors()) {
    const std::vector<float> ref = f.file.read_floats("grad." + t.name);
    const GradientError err = gradient_error(model.grads().data() + t.offset, ref.data(), t.shape);
    const double torch_err = f.torch_fp32_error.at("grad." + t.name).get<double>();
    EXPECT_LE(err.tensor, golden_gradient_tolerance(torch_err))
        << "gradient of " << t.name << " (PyTorch fp32: " << torch_err << ")";
    EXPECT_LE(err.worst_row, golden_row_tolerance(torch_err))
        << "gradient of " << t.name << ", row " << err.worst_row_index;
    worst_torch = std::max(worst_torch, torch_err);
    worst_row = std::max(worst_row, err.worst_row);
    if (err.tensor > worst) worst = err.tensor, worst_name = t.name;
  }
  std::printf(
      "[ %s, %d thread%s ] rel L2 error: logits %.1e (torch fp32 %.1e), loss %.1e (%.1e), "
      "worst gradient %.1e %s (torch fp32 worst %.1e), worst row %.1e\n",
      name.c_str(), threads, threads > 1 ? "s" : "", logits_err,
      f.torch_fp32_error.at("logits").get<double>(), loss_err,
      f.torch_fp32_error.at("loss").get<double>(), worst, worst_name.c_str(), worst_torch,
      worst_row);
}

// Each config's parameter count against the tensors the reference built from the same config.
class GoldenCount : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCount, ParametersMatchTheReference) {
  const Fixture f(GetParam());
  const ParamLayout layout(f.config);
  int64_t reference_total = 0;
  size_t reference_tensors = 0;
  for (const TensorView& t : f.file.tensors()) {
    if (t.name.rfind("model.", 0) != 0 && t.name != "lm_head.weight") continue;
    const TensorSpec* spec = layout.find(t.name);
    ASSERT_NE(spec, nullptr) << "the reference has " << t.name << ", gattn does not";
    EXPECT_EQ(spec->shape, t.shape) << t.name;
    reference_total += t.numel;
    ++reference_tensors;
  }
  EXPECT_EQ(layout.tensors().size(), reference_tensors);
  EXPECT_EQ(layout.total(), reference_total);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden,
                         ::testing::Combine(::testing::ValuesIn(kFixtures),
                                            ::testing::Values(1, 2)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_threads" +
                                  std::to_string(std::get<1>(param_info.param));
                         });
INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenCount, ::testing::ValuesIn(kFixtures),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace gattn
