// A folder written as a whole (io/staged_folder.h): what it refuses before writing, and that the
// target holds the old folder or the new one whatever happens in between.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/file.h"
#include "io/staged_folder.h"
#include "temp_folder.h"
#include "util/error.h"

namespace gattn {
namespace {
namespace fs = std::filesystem;

class Staged : public TempFolderTest {
 protected:
  static void write(const std::string& file, const std::string& text) {
    std::ofstream(file) << text;
  }
  static std::string read(const std::string& file) { return read_text_file(file); }
  template <typename Body>
  static std::string error_of(Body body) {
    try {
      body();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // Entries of the test folder whose name contains ".tmp.": staging folders left behind.
  int staging_left() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_))
      n += e.path().filename().string().find(".tmp.") != std::string::npos;
    return n;
  }
};

TEST_F(Staged, RefusesTargetsThatAreNotFolders) {
  write(path("file"), "x");
  const auto check = [](const std::string& t) {
    return [t] { check_output_folder(t, ExistingFolder::replace, "--out"); };
  };
  EXPECT_NE(error_of(check("")).find("--out is empty"), std::string::npos);
  EXPECT_NE(error_of(check(path("file"))).find("file: it is a file, not a folder"),
            std::string::npos);
  EXPECT_NE(error_of(check(path("file") + "/sub/x")).find(path("file") + " is a file"),
            std::string::npos);
  EXPECT_EQ(error_of(check(path("new/deeper"))), "");
}

TEST_F(Staged, ANonEmptyFolderIsReplacedOnlyWhenAsked) {
  fs::create_directories(path("empty"));
  fs::create_directories(path("used"));
  write(path("used/old.txt"), "old");
  EXPECT_EQ(error_of([&] { check_output_folder(path("empty"), ExistingFolder::refuse, "--out"); }),
            "");
  EXPECT_NE(error_of([&] {
              StagedFolder s(path("used"), ExistingFolder::refuse);
            }).find("the folder is not empty; pass --force"),
            std::string::npos);
  for (const std::string& target : {path("empty"), path("used"), path("absent")}) {
    StagedFolder s(target, ExistingFolder::replace);
    write(s.file("new.txt"), "new " + target);
    s.publish();
  }
  EXPECT_EQ(read(path("used/new.txt")), "new " + path("used"));
  EXPECT_FALSE(fs::exists(path("used/old.txt"))) << "nothing of the old folder survives";
  EXPECT_EQ(read(path("empty/new.txt")), "new " + path("empty"));
  EXPECT_EQ(read(path("absent/new.txt")), "new " + path("absent"));
  EXPECT_EQ(staging_left(), 0);
}

TEST_F(Staged, AWriteThatFailsLeavesTheOldFolderWhole) {
  fs::create_directories(path("used"));
  write(path("used/old.txt"), "old");
  EXPECT_NE(error_of([&] {
              StagedFolder s(path("used"), ExistingFolder::replace);
              write(s.file("half.txt"), "half");
              inject_write_failure(1);
              write_text_file_atomically(s.file("new.txt"), "new");
              s.publish();
            }).find("write failed (No space left on device)"),
            std::string::npos);
  inject_write_failure(0);
  EXPECT_EQ(read(path("used/old.txt")), "old");
  EXPECT_FALSE(fs::exists(path("used/half.txt")));
  EXPECT_EQ(staging_left(), 0) << "the staging folder is removed";
}

// D3: --out equal to the source, inside it or containing it destroyed the source.
TEST_F(Staged, TheSourceCannotBeTheTarget) {
  fs::create_directories(path("src/inner"));
  fs::create_directory_symlink(path("src"), path("alias"));
  const auto error = [&](const std::string& target) {
    return error_of([&] { check_output_apart_from_source(path("src"), target); });
  };
  for (const std::string& same : {path("src"), path("src/"), path("src/inner/.."), path("alias")})
    EXPECT_NE(error(same).find("is the source " + path("src")), std::string::npos) << same;
  EXPECT_NE(error(path("src/inner")).find("or lies inside it"), std::string::npos);
  EXPECT_NE(error(path("alias/new")).find("or lies inside it"), std::string::npos);
  EXPECT_NE(error(dir_.string()).find("contains the source"), std::string::npos);
  EXPECT_EQ(error(path("other")), "");
  EXPECT_EQ(error(path("srcx")), "") << "a name that only starts like the source";
}

}  // namespace
}  // namespace gattn
