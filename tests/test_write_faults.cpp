// Every file write is checked: an injected ENOSPC (io/file.h) is an Error naming the file, a
// failed atomic write leaves the previous file and no temporary behind, and a failed metrics
// record is never dropped silently.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "io/file.h"
#include "train/metrics_writer.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

class WriteFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gattn_faults_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    inject_write_failure(0);
    fs::remove_all(dir_);
  }
  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST_F(WriteFaults, MetricsRecordThatCannotBeWrittenIsAnErrorNamingTheFile) {
  const std::string path = (dir_ / "metrics.jsonl").string();
  MetricsWriter metrics(path);
  inject_write_failure(2);
  metrics.append(R"({"step": 1})");
  EXPECT_EQ(error_of([&] { metrics.append(R"({"step": 2})"); }),
            path + ": write failed (No space left on device)");
  metrics.append(R"({"step": 3})");
  EXPECT_EQ(read_text_file(path), "{\"step\": 1}\n{\"step\": 3}\n");
}

TEST_F(WriteFaults, FailedAtomicWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "summary.json").string();
  write_text_file_atomically(path, "old\n");
  inject_write_failure(1);
  EXPECT_EQ(error_of([&] { write_text_file_atomically(path, "new\n"); }),
            path + ": write failed (No space left on device)");
  EXPECT_EQ(read_text_file(path), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(WriteFaults, ReadingAFolderAsAFileIsAnError) {
  EXPECT_NE(error_of([&] { read_text_file(dir_.string()); }).find("it is a folder, not a file"),
            std::string::npos);
}

}  // namespace
}  // namespace gattn
