#include "corpus/zverse_module.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "corpus/entities.h"
#include "util/error.h"

namespace gattn {

namespace {

namespace fs = std::filesystem;

uint32_t read_u32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
}
uint32_t read_u16(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(b[0]) | uint32_t(b[1]) << 8;
}

std::string read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, ": cannot open for reading (", std::strerror(errno), ")");
  std::string bytes(size_t(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), std::streamsize(bytes.size())))
    fail(path, ": read failed (", std::strerror(errno), ")");
  return bytes;
}

const char* testament_file_stem(Testament testament) {
  return testament == Testament::old_testament ? "ot" : "nt";
}

}  // namespace

ZVerseModule::ZVerseModule(const SwordModuleConf& conf, const std::string& sword_dir)
    : conf_(conf) {
  const std::string& path = conf_.conf_path;
  const std::string driver = conf_.value("ModDrv");
  char prefix;
  if (driver == "zText" || driver == "zText4") {
    prefix = 'b';
  } else if (driver == "zCom" || driver == "zCom4") {
    prefix = 'c';
  } else {
    fail(path, ": ModDrv=", driver.empty() ? "(missing)" : driver,
         " is not supported (expected zText, zText4, zCom or zCom4)");
  }
  const size_t entry_bytes = driver.back() == '4' ? 12 : 10;  // the *4 drivers' u32 sizes
  const std::string compression = conf_.value("CompressType", "LZSS");
  if (compression != "ZIP")
    fail(path, ": CompressType=", compression, " is not supported (expected ZIP)");
  if (!conf_.value("CipherKey").empty())
    fail(path, ": the module is enciphered (CipherKey=...); only unlocked modules can be read");
  const std::string encoding = conf_.value("Encoding", "Latin-1");
  if (encoding != "UTF-8" && encoding != "Latin-1")
    fail(path, ": Encoding=", encoding, " is not supported (expected UTF-8 or Latin-1)");
  latin1_ = encoding == "Latin-1";
  versification_ = &versification_named(conf_.value("Versification", "KJV"), path);
  markup_ = markup_named(conf_.value("SourceType", "Plain"), path);
  const std::string data_path = conf_.value("DataPath");
  if (data_path.empty()) fail(path, ": DataPath= is missing");
  const std::string folder = (fs::path(sword_dir) / data_path).lexically_normal().string();
  open_testament(Testament::old_testament, folder, prefix, entry_bytes);
  open_testament(Testament::new_testament, folder, prefix, entry_bytes);
}

void ZVerseModule::open_testament(Testament testament, const std::string& folder, char prefix,
                                  size_t entry_bytes) {
  TestamentFiles& files = testaments_[int(testament)];
  const std::string stem = (fs::path(folder) / testament_file_stem(testament)).string() + ".";
  files.block_index_path = stem + prefix + "zs";
  files.entry_index_path = stem + prefix + "zv";
  files.data_path = stem + prefix + "zz";
  const size_t expected_entries = versification_->index_entries(testament);
  // A module without this testament (a New Testament, a commentary on one book) may lack its
  // files; then every entry is empty.
  const bool any = fs::exists(files.block_index_path) || fs::exists(files.entry_index_path) ||
                   fs::exists(files.data_path);
  if (!any) {
    files.entries.assign(expected_entries, Location{});
    return;
  }
  for (const std::string* p : {&files.block_index_path, &files.entry_index_path, &files.data_path})
    if (!fs::exists(*p))
      fail(*p, ": missing (module ", conf_.module_name, " is incomplete; reinstall it)");

  const std::string block_index = read_binary_file(files.block_index_path);
  if (block_index.size() % 12 != 0)
    fail(files.block_index_path, ": ", block_index.size(),
         " bytes is not a whole number of 12-byte block entries (truncated?)");
  files.data = read_binary_file(files.data_path);
  for (size_t i = 0; i < block_index.size(); i += 12) {
    const Block b{read_u32(&block_index[i]), read_u32(&block_index[i + 4]),
                  read_u32(&block_index[i + 8])};
    const size_t number = i / 12;
    if (uint64_t(b.offset) + b.compressed_bytes > files.data.size())
      fail(files.block_index_path, ": block ", number, " spans bytes [", b.offset, ", ",
           uint64_t(b.offset) + b.compressed_bytes, ") of ", files.data_path, ", which holds ",
           files.data.size(), " bytes");
    // zlib expands at most about 1032-fold: a larger claim is corruption, not a block to allocate.
    if (b.bytes > uint64_t(b.compressed_bytes) * 1100 + 64)
      fail(files.block_index_path, ": block ", number, " claims ", b.bytes,
           " decompressed bytes from ", b.compressed_bytes, " compressed ones");
    files.blocks.push_back(b);
  }

  const std::string entry_index = read_binary_file(files.entry_index_path);
  if (entry_index.size() % entry_bytes != 0)
    fail(files.entry_index_path, ": ", entry_index.size(), " bytes is not a whole number of ",
         entry_bytes, "-byte entries (truncated?)");
  const size_t entries = entry_index.size() / entry_bytes;
  if (entries != expected_entries)
    fail(files.entry_index_path, ": holds ", entries, " entries, but the ", versification_->name(),
         " versification has ", expected_entries, " for the ",
         testament == Testament::old_testament ? "old" : "new",
         " testament (truncated file or wrong Versification= in ", conf_.conf_path, "?)");
  files.entries.reserve(entries);
  for (size_t i = 0; i < entries; ++i) {
    const char* p = &entry_index[i * entry_bytes];
    Location e{read_u32(p), read_u32(p + 4), entry_bytes == 12 ? read_u32(p + 8) : read_u16(p + 8)};
    if (e.bytes > 0) {
      if (e.block >= files.blocks.size())
        fail(files.entry_index_path, ": entry ", i, " (",
             versification_->describe_entry(testament, i), ") is in block ", e.block, ", but ",
             files.block_index_path, " has ", files.blocks.size(), " blocks");
      const Block& b = files.blocks[e.block];
      if (uint64_t(e.offset) + e.bytes > b.bytes)
        fail(files.entry_index_path, ": entry ", i, " (",
             versification_->describe_entry(testament, i), ") spans bytes [", e.offset, ", ",
             uint64_t(e.offset) + e.bytes, ") of block ", e.block, ", which holds ", b.bytes,
             " bytes");
    }
    files.entries.push_back(e);
  }
}

const std::string& ZVerseModule::decompressed_block(const VersifiedBook& book, int chapter,
                                                    int verse, uint32_t number) {
  const Testament testament = book.testament;
  if (cached_testament_ == int(testament) && cached_block_ == number) return cached_text_;
  const TestamentFiles& files = testaments_[int(testament)];
  const auto needed_by = [&] {
    return cat(conf_.module_name, " ", book.name, " ", chapter, ":", verse);
  };
  const Block& b = files.blocks[number];
  // One byte of room beyond the declared size tells "more than declared" from "exactly".
  cached_text_.assign(size_t(b.bytes) + 1, '\0');
  uLongf produced = b.bytes + 1;
  uLong consumed = b.compressed_bytes;
  const int status =
      uncompress2(reinterpret_cast<Bytef*>(cached_text_.data()), &produced,
                  reinterpret_cast<const Bytef*>(files.data.data() + b.offset), &consumed);
  cached_testament_ = -1;
  if (status != Z_OK)
    fail(files.data_path, ": block ", number, " (bytes [", b.offset, ", ",
         uint64_t(b.offset) + b.compressed_bytes, "), needed by ", needed_by(),
         ") does not decompress: ",
         status == Z_BUF_ERROR && produced > b.bytes
             ? cat("it holds more than the ", b.bytes, " bytes ", files.block_index_path,
                   " declares")
             : cat("zlib error ", status, " (", zError(status), ")"));
  if (produced != b.bytes)
    fail(files.data_path, ": block ", number, " (needed by ", needed_by(), ") decompresses to ",
         produced, " bytes, but ", files.block_index_path, " declares ", b.bytes);
  cached_text_.resize(b.bytes);
  cached_testament_ = int(testament);
  cached_block_ = number;
  return cached_text_;
}

ZVerseModule::Location ZVerseModule::location(const VersifiedBook& book, int chapter,
                                              int verse) const {
  return testaments_[int(book.testament)]
      .entries[versification_->entry_index(book, chapter, verse)];
}

std::string_view ZVerseModule::entry(const VersifiedBook& book, int chapter, int verse) {
  const size_t index = versification_->entry_index(book, chapter, verse);
  const Location e = testaments_[int(book.testament)].entries[index];
  if (e.bytes == 0) return {};
  const std::string& block = decompressed_block(book, chapter, verse, e.block);
  const std::string_view text(block.data() + e.offset, e.bytes);
  if (!latin1_) return text;
  converted_.clear();
  for (unsigned char c : text) append_utf8(converted_, c);
  return converted_;
}

}  // namespace gattn
