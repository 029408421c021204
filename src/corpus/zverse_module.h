// Reads SWORD's compressed verse-keyed modules: Bibles (zText, zText4) and commentaries (zCom,
// zCom4). Per testament ("ot", "nt") a module has three files:
//   ?zs  block index: per block (offset in ?zz, compressed bytes, decompressed bytes), 3 x u32
//   ?zv  entry index: per entry (block, offset in the decompressed block, bytes), u32 u32 u16
//        (u32 u32 u32 for the *4 drivers, whose entries may exceed 64 KiB)
//   ?zz  the zlib-compressed blocks, back to back
// with '?' = 'b' for Bibles and 'c' for commentaries, all integers little-endian. The entry
// index holds one entry per position of the module's versification (see versification.h); an
// entry of 0 bytes is empty. Every index is checked against its files when the module is opened.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "corpus/markup.h"
#include "corpus/sword_conf.h"
#include "corpus/versification.h"

namespace gattn {

class ZVerseModule {
 public:
  // Opens the module `conf` describes, its files under `sword_dir`/DataPath.
  ZVerseModule(const SwordModuleConf& conf, const std::string& sword_dir);

  const std::string& name() const { return conf_.module_name; }
  const Versification& versification() const { return *versification_; }
  Markup markup() const { return markup_; }

  // Where an entry's text is stored. Commentaries "link" a range of verses to one text: their
  // entries share a location, and a reader takes that text once.
  struct Location {
    uint32_t block = 0, offset = 0, bytes = 0;
    bool operator==(const Location&) const = default;
  };
  Location location(const VersifiedBook& book, int chapter, int verse) const;

  // The marked-up text (UTF-8) of (book, chapter, verse), verse 0 being the chapter's heading
  // entry; "" when the entry is empty. Valid until the next call.
  std::string_view entry(const VersifiedBook& book, int chapter, int verse);

 private:
  struct Block {
    uint32_t offset, compressed_bytes, bytes;
  };
  struct TestamentFiles {
    std::string block_index_path, entry_index_path, data_path;
    std::vector<Block> blocks;
    std::vector<Location> entries;
    std::string data;  // the whole ?zz file
  };

  void open_testament(Testament testament, const std::string& folder, char prefix,
                      size_t entry_bytes);
  // The block holding (book, chapter, verse)'s entry, which error messages name.
  const std::string& decompressed_block(const VersifiedBook& book, int chapter, int verse,
                                        uint32_t block);

  SwordModuleConf conf_;
  const Versification* versification_;
  Markup markup_;
  bool latin1_;  // Encoding= other than UTF-8: SWORD's default is Latin-1
  TestamentFiles testaments_[2];
  // Entries are read in order, so one decompressed block serves a whole run of them.
  int cached_testament_ = -1;
  uint32_t cached_block_ = 0;
  std::string cached_text_;
  std::string converted_;
};

}  // namespace gattn
