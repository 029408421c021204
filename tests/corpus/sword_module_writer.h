// Writes small SWORD zText/zCom modules for tests, from the format as zverse_module.h describes
// it: a conf in mods.d and per testament a block index, an entry index and zlib blocks.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "corpus/versification.h"

namespace gattn::test {

// A fresh empty folder under the system's temporary folder, removed by the destructor.
struct TempDir {
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

struct SyntheticModule {
  std::string name = "TestBible";
  std::string driver = "zText";  // zText, zText4, zCom, zCom4
  std::string versification = "KJV";
  std::string source_type = "OSIS";
  std::string extra_conf;  // more Key=Value lines
  // Text by (OSIS book id, chapter, verse); verse 0 is the chapter heading.
  std::map<std::tuple<std::string, int, int>, std::string> texts;
  // Entries that share the previous verse's stored text (SWORD "links").
  std::vector<std::tuple<std::string, int, int>> linked_to_previous;
  int entries_per_block = 3;
};

struct WrittenModule {
  std::string conf_path;
  std::string folder;  // where ot.?z? and nt.?z? are
  std::string file(const std::string& testament, const std::string& suffix) const;  // ("ot", "zv")
  char prefix;                                                                      // 'b' or 'c'
};

WrittenModule write_module(const std::string& sword_dir, const SyntheticModule& module);

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);
void put_u32(std::string& bytes, size_t at, uint32_t value);
uint32_t get_u32(const std::string& bytes, size_t at);

}  // namespace gattn::test
