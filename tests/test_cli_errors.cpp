// The gattn binary on inputs that used to be read as something else, crash, hang or exit 0:
// each case must exit non-zero with a message naming the user's file or flag.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/token_shard.h"
#include "model/weights.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr
};

Outcome run_shell(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

const std::string kTokenizer = std::string(GATTN_FIXTURE_DIR) + "/tokenizer/gattn_trained.json";
const std::string kOtherTokenizer = std::string(GATTN_FIXTURE_DIR) + "/tokenizer/tiny_nfc.json";

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gattn_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream text(path("text.txt"));
    for (int i = 0; i < 40; ++i) text << "In the beginning was the word, and the word was text.\n";
    std::vector<uint32_t> tokens;
    for (int i = 0; i < 400; ++i) tokens.push_back(i % 50 == 0 ? 0 : uint32_t(1 + i % 97));
    std::vector<uint64_t> starts;
    for (uint64_t i = 0; i < tokens.size(); i += 50) starts.push_back(i);
    write_token_shard(path("val.bin"), tokens, starts, 8200, 0, 1000);
    model_ = checkpoint("model", 8200);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A tiny checkpoint at `name`; `change` may edit its parameters before it is written.
  std::string checkpoint(const std::string& name, int vocab_size,
                         const std::function<void(Weights&)>& change = {}) {
    const Config config = config_from_json({{"vocab_size", vocab_size},
                                            {"hidden_size", 16},
                                            {"num_hidden_layers", 1},
                                            {"num_attention_heads", 2},
                                            {"intermediate_size", 32},
                                            {"max_position_embeddings", 64}},
                                           "test");
    Weights weights(config);
    weights.init(1);
    if (change) change(weights);
    save_model(path(name), weights);
    return path(name);
  }
  Outcome gattn(const std::string& args) {
    return run_shell(std::string(GATTN_BINARY) + " " + args);
  }
  std::string eval_args(const std::string& data) {
    return "eval --checkpoint " + model_ + " --seq 16 --data " + data;
  }
  void copy_with(const std::string& name, size_t offset, const std::string& bytes) {
    fs::copy_file(path("val.bin"), path(name));
    std::fstream f(path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(bytes.data(), bytes.size());
  }

  fs::path dir_;
  std::string model_;
};

#define EXPECT_FAILS_WITH(outcome, text)                                        \
  do {                                                                          \
    const Outcome o_ = (outcome);                                               \
    EXPECT_NE(o_.exit_code, 0) << o_.output;                                    \
    EXPECT_NE(o_.output.find(text), std::string::npos) << "got: " << o_.output; \
  } while (0)

// gattn quantize: a model whose rows are not whole blocks is refused naming the tensor; an
// existing file is kept unless --force, and never replaced by a file read from itself; what it
// writes evaluates.
TEST_F(CliErrors, QuantizeRefusesByNameAndKeepsFiles) {
  const std::string args = "quantize --checkpoint " + model_ + " --tokenizer " + kTokenizer;
  EXPECT_FAILS_WITH(gattn(args + " --type q4_k_m --out " + path("q.gguf")),
                    "model.embed_tokens.weight: rows of 16 values are not whole q4_K blocks of "
                    "256; llama.cpp would store it as q5_0");
  EXPECT_FALSE(fs::exists(path("q.gguf")));
  const Outcome wrote = gattn(args + " --type bf16 --out " + path("m.gguf"));
  ASSERT_EQ(wrote.exit_code, 0) << wrote.output;
  const auto size = fs::file_size(path("m.gguf"));
  EXPECT_FAILS_WITH(gattn(args + " --type f32 --out " + path("m.gguf")), "pass --force");
  EXPECT_FAILS_WITH(gattn("quantize --checkpoint " + path("m.gguf") + " --type f32 --force --out " +
                          path("m.gguf")),
                    "is the checkpoint being read");
  EXPECT_EQ(fs::file_size(path("m.gguf")), size);
  const Outcome eval =
      gattn("eval --checkpoint " + path("m.gguf") + " --seq 16 --data " + path("val.bin"));
  EXPECT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_NE(eval.output.find("perplexity"), std::string::npos) << eval.output;
}

TEST_F(CliErrors, NonexistentDataIsNamedNotAskedToBeTokenized) {
  EXPECT_FAILS_WITH(gattn(eval_args(path("absent.bin"))),
                    "gattn: error: " + path("absent.bin") + ": no such file or folder");
}

TEST_F(CliErrors, ShardWithBadMagicOrVersionIsNeverReadAsText) {
  copy_with("magic.bin", 7, "X");
  EXPECT_FAILS_WITH(gattn(eval_args(path("magic.bin"))),
                    path("magic.bin") + ": not a token shard (wrong magic bytes)");
  EXPECT_FAILS_WITH(gattn(eval_args(path("magic.bin")) + " --tokenizer " + kTokenizer),
                    path("magic.bin") + ": not a token shard (wrong magic bytes)");
  copy_with("version.bin", 8, std::string("\x09\0\0\0", 4));
  EXPECT_FAILS_WITH(gattn(eval_args(path("version.bin"))),
                    path("version.bin") + ": token shard format version 9");
  // Where only text is read (gattn data), gattn's binary files are told apart by their layout.
  const std::string data =
      "data --tokenizer " + kTokenizer + " --out " + path("out.bin") + " --input ";
  EXPECT_FAILS_WITH(gattn(data + path("magic.bin")),
                    path("magic.bin") + ": a token shard (or a damaged one), not text");
  EXPECT_FAILS_WITH(gattn(data + model_ + "/model.safetensors"),
                    model_ + "/model.safetensors: a safetensors file, not text");
}

TEST_F(CliErrors, TextWhoseIdsExceedTheModelNamesTheTokenizerNotATemporary) {
  const std::string small = checkpoint("small", 300);
  EXPECT_FAILS_WITH(
      gattn("eval --checkpoint " + small + " --data " + path("text.txt") + " --tokenizer " +
            kTokenizer),
      "gattn: error: " + kTokenizer + ": tokens go up to 8192 but the model's vocab_size is 300");
}

TEST_F(CliErrors, BitsPerByteWithAnotherTokenizerIsAnError) {
  ASSERT_EQ(gattn("data --tokenizer " + kTokenizer + " --input " + path("text.txt") + " --out " +
                  path("text.bin"))
                .exit_code,
            0);
  EXPECT_EQ(gattn(eval_args(path("text.bin")) + " --tokenizer " + kTokenizer).exit_code, 0);
  EXPECT_FAILS_WITH(gattn(eval_args(path("text.bin")) + " --tokenizer " + kOtherTokenizer),
                    path("text.bin") + ": was made with another tokenizer than " + kOtherTokenizer);
}

// A 3e38 weight made the loss -nan and the exit status 0.
TEST_F(CliErrors, NonFiniteLossFailsNamingTheFirstWindow) {
  // The final norm scales every hidden state to ~3e38, and rows 5 and 6 of the LM head turn it
  // into infinite logits of both signs.
  const std::string broken = checkpoint("broken", 8200, [](Weights& m) {
    const TensorSpec* norm = m.layout().find("model.norm.weight");
    const TensorSpec* head = m.layout().find(
        m.config().tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    ASSERT_TRUE(norm && head);
    for (int64_t i = 0; i < 16; ++i) {
      m.data()[norm->offset + i] = 3e38f;
      m.data()[head->offset + 5 * 16 + i] = 3e38f;
      m.data()[head->offset + 6 * 16 + i] = -3e38f;
    }
  });
  for (const std::string command : {"eval", "analyze --from-position 4"})
    EXPECT_FAILS_WITH(
        gattn(command + " --checkpoint " + broken + " --seq 16 --data " + path("val.bin")),
        broken + ": the loss is not finite (");
}

TEST_F(CliErrors, FlippedCheckpointByteIsAnErrorNamingTheTensor) {
  {
    std::fstream f(model_ + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);
    const char c = char(f.get());
    f.seekp(-3, std::ios::end);
    f.put(char(c ^ 4));
  }
  EXPECT_FAILS_WITH(gattn(eval_args(path("val.bin"))), "is corrupt: its data has checksum");
}

TEST_F(CliErrors, CountFlagsMustBePositive) {
  EXPECT_FAILS_WITH(gattn(eval_args(path("val.bin")) + " --threads -1"),
                    "gattn: error: --threads: must be a positive integer, got -1");
  EXPECT_FAILS_WITH(gattn(eval_args(path("val.bin")) + " --threads 0"),
                    "--threads: must be a positive integer, got 0");
  EXPECT_FAILS_WITH(gattn(eval_args(path("val.bin")) + " --windows -1"),
                    "--windows: must be 0 or a positive integer, got -1");
  EXPECT_FAILS_WITH(gattn(eval_args(path("val.bin")) + " --batch 0"),
                    "--batch: must be a positive integer, got 0");
  EXPECT_FAILS_WITH(gattn("eval --checkpoint " + model_ + " --seq 1 --data " + path("val.bin")),
                    "--seq: must be an integer from 2 to 1048576, got 1");
  EXPECT_FAILS_WITH(gattn("export --checkpoint " + model_ + " --out " + path("x") +
                          " --format qwen3 --max-shard-bytes 0"),
                    "--max-shard-bytes: must be a positive integer, got 0");
  EXPECT_FAILS_WITH(gattn("passkey --checkpoint " + model_ + " --tokenizer t.json --lengths 64 -5"),
                    "--lengths: must be a positive integer, got -5");
  EXPECT_FAILS_WITH(gattn("serve --checkpoint " + model_ + " --port 70000"),
                    "--port: must be an integer from 0 to 65535, got 70000");
  EXPECT_FAILS_WITH(gattn("serve --checkpoint " + model_ + " --timeout-s 0"),
                    "--timeout-s: must be a positive number, got 0");
}

// Under a 2 GiB address-space limit, 32 OpenBLAS threads looped forever failing to map buffers;
// 1000 is beyond any machine's cores, so the clamp is always exercised.
// (AddressSanitizer reserves terabytes of address space, so a sanitized binary runs unlimited.)
TEST_F(CliErrors, ThreadsBeyondTheCoresAreClampedAndNeverHang) {
  const std::string limit = GATTN_SANITIZED ? "" : "ulimit -v 2097152; ";
  const Outcome o = run_shell(limit + "timeout 120 " + std::string(GATTN_BINARY) + " " +
                              eval_args(path("val.bin")) + " --threads 1000");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("gattn: 1000 threads requested, using "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("loss "), std::string::npos) << o.output;
}

TEST_F(CliErrors, EncodingAFolderIsAnError) {
  EXPECT_FAILS_WITH(
      gattn("tokenizer encode --tokenizer " + kTokenizer + " --input " + dir_.string()),
      dir_.string() + ": cannot open for reading (it is a folder, not a file)");
}

}  // namespace
}  // namespace gattn
