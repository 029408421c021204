// `gattn train` as a process: a SIGTERM writes a checkpoint and exits cleanly, a kill -9 in the
// middle of writing a checkpoint leaves the previous one intact, and either way --resume ends with
// exactly the parameters of an uninterrupted run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "io/checkpoint.h"
#include "io/token_shard.h"
#include "train/train_checkpoint.h"

extern char** environ;

namespace gattn {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

class TrainProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_proc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::vector<uint32_t> tokens;
    std::vector<uint64_t> starts;
    for (int doc = 0; doc < 50; ++doc) {
      starts.push_back(tokens.size());
      tokens.push_back(0);
      for (int i = 0; i < 60; ++i) tokens.push_back(1 + (doc * 5 + i * 3) % 47);
    }
    write_token_shard((dir_ / "train.bin").string(), tokens, starts, 48, 0, tokens.size());
    const json run = {{"model",
                       {{"vocab_size", 48},
                        {"hidden_size", 32},
                        {"num_hidden_layers", 2},
                        {"num_attention_heads", 4},
                        {"intermediate_size", 64},
                        {"max_position_embeddings", 64},
                        {"gate", {{"position", "sdpa"}}}}},
                      {"data", {{"train", "train.bin"}, {"seq_len", 32}}},
                      {"batch_size", 4},
                      {"steps", 300},
                      {"optimizer", {{"lr", 0.01}}},
                      {"schedule", {{"warmup_steps", 4}}},
                      {"checkpoint", {{"every", 0}, {"keep", 5}}},
                      {"threads", 2},
                      {"out", "runs/run"}};
    std::ofstream(dir_ / "run.json") << run.dump(2);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Starts `gattn train --config run.json --out OUT ARGS...` with extra environment entries.
  pid_t start(const std::string& out, std::vector<std::string> args,
              const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {GATTN_BINARY, "train",
                                     "--config",   (dir_ / "run.json").string(),
                                     "--out",      (dir_ / out).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv, cenv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::vector<std::string> envs(env);
    for (char** e = environ; *e; ++e) envs.emplace_back(*e);
    for (std::string& e : envs) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_ / (out + ".stderr")).c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }
  static int wait_for(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }
  AlignedFloats final_params(const std::string& out) {
    return std::move(*load_model(latest_checkpoint((dir_ / out).string()))).release();
  }
  // Staging folders (step_N.tmp.PID) a checkpoint write left in a run's checkpoints/.
  int staging_folders(const std::string& out) {
    int found = 0;
    for (const auto& e : fs::directory_iterator(dir_ / out / "checkpoints"))
      found += e.path().filename().string().find(".tmp.") != std::string::npos;
    return found;
  }
  std::string text(const std::string& name) {
    std::ifstream in(dir_ / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(TrainProcess, SigtermWritesACheckpointAndResumeMatchesAnUninterruptedRun) {
  const int whole = wait_for(start("whole", {}));
  ASSERT_TRUE(WIFEXITED(whole) && WEXITSTATUS(whole) == 0) << text("whole.stderr");
  // The run holds at step 5 until the signal arrives, so the signal always lands mid-run.
  const pid_t pid = start("stopped", {}, {"GATTN_TEST_AWAIT_SIGNAL_AT_STEP=5"});
  for (int i = 0;
       i < 6000 && text("stopped.stderr").find("waiting for a signal") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGTERM);
  const int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text("stopped.stderr");
  ASSERT_NE(text("stopped.stderr").find("stopped by signal 15 at step 5"), std::string::npos)
      << text("stopped.stderr");
  EXPECT_EQ(latest_checkpoint((dir_ / "stopped").string()),
            (dir_ / "stopped" / "checkpoints" / "step_00000005").string());
  const int resumed = wait_for(start("stopped", {"--resume"}));
  ASSERT_TRUE(WIFEXITED(resumed) && WEXITSTATUS(resumed) == 0) << text("stopped.stderr");
  EXPECT_EQ(final_params("stopped"), final_params("whole"));
}

TEST_F(TrainProcess, KillDuringACheckpointWriteLeavesThePreviousOne) {
  const int whole = wait_for(start("whole", {}));
  ASSERT_TRUE(WIFEXITED(whole) && WEXITSTATUS(whole) == 0) << text("whole.stderr");
  const int first = wait_for(start("crash", {"--stop-at-step", "10"}));
  ASSERT_TRUE(WIFEXITED(first) && WEXITSTATUS(first) == 0) << text("crash.stderr");
  const int killed = wait_for(start("crash", {"--resume", "--stop-at-step", "20"},
                                    {"GATTN_FAULT_KILL_AT=checkpoint_halfway"}));
  ASSERT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL);
  EXPECT_EQ(staging_folders("crash"), 1);
  EXPECT_EQ(latest_checkpoint((dir_ / "crash").string()),
            (dir_ / "crash" / "checkpoints" / "step_00000010").string());
  const int resumed = wait_for(start("crash", {"--resume"}));
  ASSERT_TRUE(WIFEXITED(resumed) && WEXITSTATUS(resumed) == 0) << text("crash.stderr");
  EXPECT_EQ(staging_folders("crash"), 0);
  EXPECT_EQ(final_params("crash"), final_params("whole"));
}

}  // namespace
}  // namespace gattn
