// The training loop: it learns, it resumes bitwise, it handles non-finite steps, and run configs
// are validated.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/token_shard.h"
#include "ops/bf16_gemm.h"
#include "train/run_config.h"
#include "train/train_checkpoint.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/threads.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

class Trainer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_train_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // A learnable stream: documents of a short repeating pattern with some variation.
    std::vector<uint32_t> tokens;
    std::vector<uint64_t> starts;
    for (int doc = 0; doc < 60; ++doc) {
      starts.push_back(tokens.size());
      tokens.push_back(0);
      for (int i = 0; i < 40; ++i) tokens.push_back(1 + (doc * 7 + i * (1 + doc % 3)) % 31);
    }
    write_token_shard(path("train.bin"), tokens, starts, 32, 0, tokens.size());
    write_token_shard(path("val.bin"), std::vector<uint32_t>(tokens.begin(), tokens.begin() + 400),
                      std::vector<uint64_t>(starts.begin(), starts.begin() + 10), 32, 0, 400);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  RunConfig run(const std::string& out) const {
    RunConfig r;
    r.model = config_from_json({{"vocab_size", 32},
                                {"hidden_size", 32},
                                {"num_hidden_layers", 2},
                                {"num_attention_heads", 4},
                                {"num_key_value_heads", 2},
                                {"intermediate_size", 64},
                                {"max_position_embeddings", 64},
                                {"gate", {{"position", "sdpa"}}}},
                               "test");
    r.train_data = path("train.bin");
    r.val_data = path("val.bin");
    r.seq_len = 32;
    r.batch_size = 4;
    r.grad_accum = 2;
    r.steps = 8;
    r.schedule = {ScheduleKind::cosine, 1e-2, 1e-3, 2, 0, r.steps};
    r.eval_every = 4;
    r.eval_windows = 8;
    r.checkpoint_every = 4;
    r.seed = 3;
    r.out = path(out);
    return r;
  }

  static std::vector<json> metrics(const std::string& run_dir) {
    std::ifstream in(run_dir + "/metrics.jsonl");
    std::vector<json> records;
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line);
      j.erase("tokens_per_s");  // a timing
      records.push_back(j);
    }
    return records;
  }

  fs::path dir_;
  const ThreadScope threads_{2};
};

// Library code reports through the sink it is given, never on stderr.
TEST_F(Trainer, ReportsThroughItsLogSinkAndNeverOnStderr) {
  RunConfig r = run("logged");
  r.steps = 4;
  r.schedule.total_steps = 4;
  r.checkpoint_every = 2;
  RecordingLog log;
  ::testing::internal::CaptureStderr();
  train(r, {.resume = false, .stop_at_step = 2}, {}, log);
  train(r, {.resume = true}, {}, log);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(stderr_text, "");
  EXPECT_NE(log.text().find("step 1/4 | loss "), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("resumed from "), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("(step 2)"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find(" | val loss "), std::string::npos) << log.text();
}

TEST_F(Trainer, OverfitsOneBatch) {
  RunConfig r = run("overfit");
  std::vector<uint32_t> one(32);
  for (int i = 0; i < 32; ++i) one[i] = i == 0 ? 0 : 1 + (i * 5) % 31;
  write_token_shard(path("one.bin"), one, {0}, 32, 0, 32);
  r.train_data = r.val_data = path("one.bin");
  r.batch_size = 1;
  r.grad_accum = 1;
  r.steps = 150;
  r.schedule = {ScheduleKind::cosine, 1e-2, 1e-2, 5, 0, r.steps};
  r.eval_every = 0;
  r.checkpoint_every = 0;
  const TrainOutcome outcome = train(r, {.resume = false}, {});
  const std::vector<json> m = metrics(r.out);
  ASSERT_EQ(m.size(), 150u);
  EXPECT_NEAR(m.front()["loss"].get<double>(), std::log(32.0), 0.3);
  EXPECT_LT(m.back()["loss"].get<double>(), 0.05);
  EXPECT_LT(outcome.summary["val_loss"].get<double>(), 0.05);
}

TEST_F(Trainer, ResumeContinuesBitwise) {
  const RunConfig whole = run("whole");
  train(whole, {.resume = false}, {});
  const RunConfig parts = run("parts");
  const TrainOutcome first =
      train(parts, {.resume = false, .stop_at_step = 3}, {});  // stops after step 3
  EXPECT_EQ(first.steps_done, 3);
  train(parts, {.resume = true}, {});
  const std::vector<json> a = metrics(whole.out), b = metrics(parts.out);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b) << "losses, grad norms, lrs and validation are bitwise equal";
  EXPECT_EQ(load_model(latest_checkpoint(whole.out))->values(),
            load_model(latest_checkpoint(parts.out))->values());
  EXPECT_EQ(latest_checkpoint(whole.out), whole.out + "/checkpoints/step_00000008");
}

TEST_F(Trainer, KeepsTheNewestCheckpoints) {
  RunConfig r = run("keep");
  r.checkpoint_every = 2;
  r.keep_checkpoints = 2;
  train(r, {.resume = false}, {});
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(r.out + "/checkpoints"))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"step_00000006", "step_00000008"}));
}

TEST_F(Trainer, RefusesToOverwriteARunOrResumeNothing) {
  const RunConfig r = run("twice");
  EXPECT_THROW(train(r, {.resume = true}, {}), Error);
  train(r, {.resume = false, .stop_at_step = 2}, {});
  EXPECT_THROW(train(r, {.resume = false}, {}), Error);
  RunConfig other = r;
  other.model.gate = GateConfig{};
  EXPECT_THROW(train(other, {.resume = true}, {}), Error) << "a checkpoint of another variant";
}

TEST_F(Trainer, SkipsOrAbortsOnNonFiniteSteps) {
  RunConfig r = run("nan");
  r.schedule = {ScheduleKind::cosine, 1e30, 1e30, 0, 0, r.steps};  // blows the weights up
  r.grad_clip = 0;
  r.eval_every = 0;
  r.val_data = "";
  train(r, {.resume = false}, {});
  int skipped = 0;
  for (const json& m : metrics(r.out)) skipped += m.contains("skipped");
  EXPECT_GT(skipped, 0);
  r.on_nonfinite = NonFinitePolicy::abort;
  r.out = path("nan_abort");
  EXPECT_THROW(train(r, {.resume = false}, {}), Error);
}

// D4, D5: state.json is checked before a step is used: a negative step read the data order out of
// bounds, INT64_MIN overflowed, a step beyond the run or a fractional one was taken as it was.
TEST(TrainingState, EveryFieldIsCheckedBehindItsChecksum) {
  const json run = {{"steps", 100}};
  const json valid = training_state_json({.step = 4, .tokens_seen = 64, .skipped_steps = 1}, run);
  const TrainingProgress p = parse_training_state(valid, "state.json", 4, 100);
  EXPECT_EQ(p.step, 4);
  EXPECT_EQ(p.tokens_seen, 64);
  EXPECT_EQ(p.skipped_steps, 1);
  const auto error = [&](json state, bool rechecksum = true) {
    if (rechecksum) state["xxh3"] = training_state_checksum(state);
    try {
      parse_training_state(state, "state.json", 4, 100);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto with = [&](const char* field, const json& value) {
    json state = valid;
    state[field] = value;
    return state;
  };
  EXPECT_NE(error(with("step", -3), false).find("state.json: is corrupt"), std::string::npos);
  json unsummed = valid;
  unsummed.erase("xxh3");
  EXPECT_NE(error(unsummed, false).find("has no checksum"), std::string::npos);
  EXPECT_NE(error(with("step", -3)).find("field 'step': -3 is outside"), std::string::npos);
  EXPECT_NE(error(with("step", INT64_MIN)).find("is outside"), std::string::npos);
  EXPECT_NE(error(with("step", 4.5)).find("field 'step': expected an integer, found 4.5"),
            std::string::npos);
  EXPECT_NE(error(with("step", "4")).find("expected an integer"), std::string::npos);
  EXPECT_NE(error(with("step", UINT64_MAX)).find("out of range"), std::string::npos);
  EXPECT_NE(error(with("step", 5)).find("the folder is the checkpoint of step 4"),
            std::string::npos);
  EXPECT_NE(error(with("skipped_steps", 5)).find("field 'skipped_steps': 5 is outside [0, 4]"),
            std::string::npos);
  EXPECT_NE(error(with("tokens_seen", -1)).find("field 'tokens_seen'"), std::string::npos);
  EXPECT_NE(error(with("run_config", 1)).find("field 'run_config': expected an object"),
            std::string::npos);
  EXPECT_NE(error(with("extra", 1)).find("unknown field 'extra'"), std::string::npos);
  try {
    parse_training_state(training_state_json({.step = 1000}, run), "state.json", 1000, 60);
    ADD_FAILURE() << "a step beyond the run was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the run's 60 steps"), std::string::npos);
  }
}

// D14: a changed learning rate was taken silently on --resume.
TEST(TrainingState, RunConfigChangesThatChangeTheArithmeticAreListed) {
  const json recorded = {{"steps", 100},
                         {"threads", 2},
                         {"out", "a"},
                         {"optimizer", {{"lr", 0.01}, {"beta1", 0.9}}},
                         {"eval", {{"every", 10}, {"windows", 8}}},
                         {"checkpoint", {{"every", 5}, {"keep", 2}}}};
  json current = recorded;
  current["threads"] = 1;
  current["out"] = "b";
  current["eval"]["every"] = 20;
  current["checkpoint"] = {{"every", 1}, {"keep", 9}};
  EXPECT_TRUE(run_config_changes(recorded, current).empty());
  current["optimizer"]["lr"] = 0.02;
  current["eval"]["windows"] = 4;
  current["seed"] = 3;
  EXPECT_EQ(run_config_changes(recorded, current),
            (std::vector<std::string>{"eval/windows: 8 -> 4", "optimizer/lr: 0.01 -> 0.02",
                                      "seed: (absent) -> 3"}));
}

TEST(RunConfigFile, RejectsBadFields) {
  const fs::path dir = fs::temp_directory_path() / ("gattn_runcfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const json model = {{"vocab_size", 32},
                      {"hidden_size", 32},
                      {"num_hidden_layers", 1},
                      {"num_attention_heads", 4},
                      {"intermediate_size", 64}};
  const json good = {
      {"model", model}, {"data", {{"train", "t.bin"}, {"seq_len", 16}}}, {"out", "runs/x"}};
  auto error_of = [&](const json& patch) {
    json j = good;
    j.merge_patch(patch);
    std::ofstream(dir / "run.json") << j.dump();
    try {
      load_run_config((dir / "run.json").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(json::object()), "");
  EXPECT_NE(error_of({{"optimzer", 1}}).find("unknown field 'optimzer'"), std::string::npos);
  EXPECT_NE(
      error_of({{"optimizer", {{"beta2", 1.0}}}}).find("'beta2': expected a number in [0, 1)"),
      std::string::npos);
  EXPECT_NE(
      error_of({{"schedule", {{"kind", "linear"}}}}).find("'kind': expected one of cosine | wsd"),
      std::string::npos);
  EXPECT_NE(error_of({{"schedule", {{"warmup_steps", 2000}}}}).find("exceed steps (1000)"),
            std::string::npos);
  EXPECT_NE(error_of({{"data", {{"seq_len", 8192}}}})
                .find("seq_len 8192 exceeds the model's max_position_embeddings"),
            std::string::npos);
  EXPECT_NE(error_of({{"data", {{"train", nullptr}}}}).find("'train' is required"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"model", {{"hidden_size", 30}}}}).find("not divisible by num_attention_heads"),
      std::string::npos);
  EXPECT_NE(error_of({{"out", nullptr}}).find("'out' is required"), std::string::npos);
  EXPECT_NE(error_of({{"batch_size", 0}}).find("'batch_size': expected a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of({{"precision", "fp16"}})
                .find("'precision': expected one of bf16 | bf16_emulated | fp32"),
            std::string::npos);
  // Native bf16 where the CPU (and the ISA in use) has it; elsewhere an error saying why.
  const std::string bf16_error = error_of({{"precision", "bf16"}});
  if (native_bf16_gemm_available()) {
    EXPECT_EQ(bf16_error, "");
    EXPECT_EQ(load_run_config((dir / "run.json").string()).precision, GemmPrecision::bf16);
  } else {
    EXPECT_NE(bf16_error.find("precision \"bf16\" needs bf16 dot products (avx512_bf16)"),
              std::string::npos)
        << bf16_error;
  }
  EXPECT_NE(error_of({{"router_aux_loss", {{"scope", "layer"}}}})
                .find("router_aux_loss: field 'scope': expected one of global | micro_batch"),
            std::string::npos)
      << error_of({{"router_aux_loss", {{"scope", "layer"}}}});
  EXPECT_NE(error_of({{"router_aux_loss", {{"coef", -1}}}}).find("'coef'"), std::string::npos);
  // The coefficient comes from the model config unless the run sets it.
  const json moe = {{"mlp_types", {"moe"}},
                    {"num_experts", 4},
                    {"num_experts_per_tok", 2},
                    {"moe_intermediate_size", 8},
                    {"router_aux_loss_coef", 0.02}};
  EXPECT_EQ(error_of({{"model", moe}}), "");
  RunConfig m = load_run_config((dir / "run.json").string());
  EXPECT_EQ(m.router_loss.coef, 0.02);
  EXPECT_EQ(m.router_loss.scope, RouterLossScope::micro_batch);
  EXPECT_EQ(run_config_to_json(m)["router_aux_loss"]["coef"], 0.02);
  EXPECT_EQ(error_of({{"model", moe}, {"router_aux_loss", {{"scope", "global"}, {"coef", 0}}}}),
            "");
  m = load_run_config((dir / "run.json").string());
  EXPECT_EQ(m.router_loss.coef, 0.0);
  EXPECT_EQ(m.router_loss.scope, RouterLossScope::global);
  error_of(json::object());
  EXPECT_FALSE(
      run_config_to_json(load_run_config((dir / "run.json").string())).contains("router_aux_loss"))
      << "dense models' run configs stay as they were";
  const RunConfig r = load_run_config((dir / "run.json").string(), R"({"position": "value"})");
  EXPECT_EQ(r.model.gate.position, GatePosition::value);
  EXPECT_EQ(r.train_data, (dir / "t.bin").string()) << "paths are relative to the config file";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gattn
