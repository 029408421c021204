// The King James Bible as Debian's bible-kjv package prints it: `bible -f Gen1:1-Rev22:21`
// writes one verse a line, "Ge1:1 In the beginning God created the heaven and the earth.".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "corpus/versification.h"

namespace gattn {

struct BibleChapter {
  const VersifiedBook* book;  // in kjv_versification()
  int chapter;
  std::vector<std::string> verses;  // verse v at [v - 1], without its reference
};

// Runs `program` (reading its data from `data_dir`, not the current folder) and returns the
// 1,189 chapters. A missing program or data file fails, naming the Debian package to install.
std::vector<BibleChapter> read_kjv_with_bible_program(const std::string& program,
                                                      const std::string& data_dir);

// Parses the program's listing; every verse of the KJV versification must appear once, in
// order. `where` names the listing in errors, which also give the line.
std::vector<BibleChapter> parse_bible_program_listing(std::string_view listing,
                                                      const std::string& where);

}  // namespace gattn
