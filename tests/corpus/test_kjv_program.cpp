// The KJV from the `bible` program: its listing parsed and checked verse by verse, and clear
// errors when the program or its data is missing.
#include <gtest/gtest.h>

#include <filesystem>

#include "corpus/kjv_program.h"
#include "sword_module_writer.h"
#include "util/error.h"

namespace gattn {
namespace {

// The program's abbreviations, which the listing must use.
const char* const kAbbreviations[] = {
    "Ge",    "Exo",  "Lev",  "Num",  "Deu",  "Josh", "Jdgs", "Ruth", "1Sm",  "2Sm",   "1Ki",
    "2Ki",   "1Chr", "2Chr", "Ezra", "Neh",  "Est",  "Job",  "Psa",  "Prv",  "Eccl",  "SSol",
    "Isa",   "Jer",  "Lam",  "Eze",  "Dan",  "Hos",  "Joel", "Amos", "Obad", "Jonah", "Mic",
    "Nahum", "Hab",  "Zep",  "Hag",  "Zec",  "Mal",  "Mat",  "Mark", "Luke", "John",  "Acts",
    "Rom",   "1Cor", "2Cor", "Gal",  "Eph",  "Phi",  "Col",  "1Th",  "2Th",  "1Tim",  "2Tim",
    "Titus", "Phmn", "Heb",  "Jas",  "1Pet", "2Pet", "1Jn",  "2Jn",  "3Jn",  "Jude",  "Rev"};

// A listing in the program's format with a made-up text for every KJV verse.
std::string full_listing() {
  std::string out;
  const auto& books = kjv_versification().books();
  for (size_t b = 0; b < books.size(); ++b)
    for (int c = 1; c <= books[b].chapters(); ++c)
      for (int v = 1; v <= books[b].verses_per_chapter[c - 1]; ++v)
        out += std::string(kAbbreviations[b]) + std::to_string(c) + ":" + std::to_string(v) +
               " Text of " + books[b].name + " " + std::to_string(c) + ":" + std::to_string(v) +
               ".\n";
  return out;
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KjvProgram, ParsesAWholeListingIntoChapters) {
  const std::vector<BibleChapter> chapters = parse_bible_program_listing(full_listing(), "test");
  ASSERT_EQ(chapters.size(), 1189u);
  EXPECT_EQ(chapters[0].book->name, "Genesis");
  EXPECT_EQ(chapters[0].chapter, 1);
  ASSERT_EQ(chapters[0].verses.size(), 31u);
  EXPECT_EQ(chapters[0].verses[0], "Text of Genesis 1:1.");
  EXPECT_EQ(chapters.back().book->name, "Revelation");
  EXPECT_EQ(chapters.back().chapter, 22);
  EXPECT_EQ(chapters.back().verses.back(), "Text of Revelation 22:21.");
}

TEST(KjvProgram, AMissingOrMisplacedVerseFailsWithItsLine) {
  std::string listing = full_listing();
  const size_t gen12 = listing.find("Ge1:2 ");
  listing.erase(gen12, listing.find('\n', gen12) + 1 - gen12);
  EXPECT_EQ(error_of([&] { parse_bible_program_listing(listing, "out"); }),
            "out:2: expected Ge1:2 (the KJV's next verse), found Ge1:3");

  std::string truncated = full_listing();
  truncated.resize(truncated.find("Rev22:21 "));
  EXPECT_EQ(error_of([&] { parse_bible_program_listing(truncated, "out"); }),
            "out: ends after Rev22:20; expected the whole KJV, Ge1:1 to Rev22:21");

  EXPECT_EQ(error_of([&] { parse_bible_program_listing("Cannot open data file\n", "out"); }),
            "out:1: expected 'Book Chapter:Verse text' (e.g. 'Ge1:1 In the beginning...'), found "
            "'Cannot open data file'");
}

TEST(KjvProgram, MissingProgramNamesTheDebianPackage) {
  EXPECT_EQ(error_of([] { read_kjv_with_bible_program("/nonexistent/bible", "/usr/lib"); }),
            "/nonexistent/bible: not found or not executable (the KJV comes from its `bible` "
            "program): install the Debian package bible-kjv");
}

TEST(KjvProgram, FailingProgramReportsItsMessage) {
  test::TempDir dir("kjv_program");
  const std::string program = dir.path + "/bible";
  test::write_bytes(program, "#!/bin/sh\necho \"Cannot open data file $2/bible.data\"\nexit 255\n");
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  EXPECT_EQ(error_of([&] { read_kjv_with_bible_program(program, "/nowhere"); }),
            program +
                " -p /nowhere -f Gen1:1-Rev22:21 failed (exit status 255): 'Cannot open "
                "data file /nowhere/bible.data': install the Debian package bible-kjv "
                "(its text is in bible-kjv-text)");
}

TEST(KjvProgram, ReadsTheListingAProgramPrints) {
  test::TempDir dir("kjv_program_ok");
  test::write_bytes(dir.path + "/listing.txt", full_listing());
  const std::string program = dir.path + "/bible";
  test::write_bytes(program, "#!/bin/sh\ncat '" + dir.path + "/listing.txt'\n");
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  EXPECT_EQ(read_kjv_with_bible_program(program, "/usr/lib").size(), 1189u);
}

}  // namespace
}  // namespace gattn
