#include "sword_module_writer.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace gattn::test {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& name) {
  path = (fs::temp_directory_path() / ("gattn_corpus_" + name + "_" + std::to_string(::getpid())))
             .string();
  fs::remove_all(path);
  fs::create_directories(path);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string WrittenModule::file(const std::string& testament, const std::string& suffix) const {
  return folder + "/" + testament + "." + prefix + suffix;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string bytes(size_t(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), std::streamsize(bytes.size()));
  return bytes;
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}
void put_u32(std::string& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = char((value >> (8 * i)) & 0xFF);
}
uint32_t get_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | uint8_t(bytes[at + i]);
  return v;
}

namespace {

void append_u32(std::string& bytes, uint32_t value) {
  bytes.resize(bytes.size() + 4);
  put_u32(bytes, bytes.size() - 4, value);
}

std::string zlib_compress(const std::string& text) {
  uLongf size = compressBound(text.size());
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(text.data()), text.size(), 9) != Z_OK)
    throw std::runtime_error("compress2 failed");
  out.resize(size);
  return out;
}

}  // namespace

WrittenModule write_module(const std::string& sword_dir, const SyntheticModule& m) {
  const Versification& v = versification_named(m.versification, "test");
  const bool commentary = m.driver.rfind("zCom", 0) == 0;
  WrittenModule written;
  written.prefix = commentary ? 'c' : 'b';
  const std::string data_path =
      std::string(commentary ? "./modules/comments/zcom/" : "./modules/texts/ztext/") + m.name +
      "/";
  written.folder = (fs::path(sword_dir) / data_path).lexically_normal().string();
  fs::create_directories(written.folder);
  fs::create_directories(fs::path(sword_dir) / "mods.d");
  written.conf_path = (fs::path(sword_dir) / "mods.d" / (m.name + ".conf")).string();
  write_bytes(written.conf_path, "[" + m.name + "]\nDataPath=" + data_path +
                                     "\nModDrv=" + m.driver + "\nSourceType=" + m.source_type +
                                     "\nEncoding=UTF-8\nCompressType=ZIP\nVersification=" +
                                     m.versification + "\n" + m.extra_conf);
  const size_t entry_bytes = m.driver.back() == '4' ? 12 : 10;
  for (Testament t : {Testament::old_testament, Testament::new_testament}) {
    struct Entry {
      uint32_t block = 0, offset = 0, bytes = 0;
    };
    std::vector<Entry> entries(v.index_entries(t));
    std::vector<std::string> blocks;
    std::string current;
    int in_current = 0;
    for (const auto& [key, text] : m.texts) {
      const auto& [osis, chapter, verse] = key;
      const VersifiedBook* book = v.find_book(osis);
      if (!book) throw std::runtime_error("no book " + osis);
      if (book->testament != t) continue;
      Entry& e = entries[v.entry_index(*book, chapter, verse)];
      e = {uint32_t(blocks.size()), uint32_t(current.size()), uint32_t(text.size())};
      current += text;
      if (++in_current == m.entries_per_block) {
        blocks.push_back(current);
        current.clear();
        in_current = 0;
      }
    }
    if (in_current) blocks.push_back(current);
    for (const auto& [osis, chapter, verse] : m.linked_to_previous) {
      const VersifiedBook* book = v.find_book(osis);
      if (book->testament != t) continue;
      const size_t index = v.entry_index(*book, chapter, verse);
      entries[index] = entries[index - 1];
    }
    std::string block_index, entry_index, data;
    for (const std::string& block : blocks) {
      const std::string compressed = zlib_compress(block);
      append_u32(block_index, uint32_t(data.size()));
      append_u32(block_index, uint32_t(compressed.size()));
      append_u32(block_index, uint32_t(block.size()));
      data += compressed;
    }
    for (const Entry& e : entries) {
      append_u32(entry_index, e.block);
      append_u32(entry_index, e.offset);
      if (entry_bytes == 12) {
        append_u32(entry_index, e.bytes);
      } else {
        entry_index += char(e.bytes & 0xFF);
        entry_index += char(e.bytes >> 8);
      }
    }
    const std::string stem = t == Testament::old_testament ? "ot" : "nt";
    write_bytes(written.file(stem, "zs"), block_index);
    write_bytes(written.file(stem, "zv"), entry_index);
    write_bytes(written.file(stem, "zz"), data);
  }
  return written;
}

}  // namespace gattn::test
