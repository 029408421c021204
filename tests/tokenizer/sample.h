// The multilingual test sample and the expectations Hugging Face `tokenizers` wrote for it
// (tests/fixtures/tokenizer/expected.json, made by tools/tokenizer_reference/make_fixtures.py).
// The sample is assembled from Debian packages by assemble_sample.sh on first use; a document
// whose hash differs from the fixtures' fails loudly, naming the package and both versions.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gattn::testing {

std::string fixture_path(const std::string& name);  // tests/fixtures/tokenizer/<name>

uint64_t fnv1a64(std::string_view bytes, uint64_t hash = 0xCBF29CE484222325ull);
std::string ids_hash(std::span<const uint32_t> ids);  // hex FNV-1a 64 of the ids as LE uint32

struct Sample {
  std::string folder;  // the documents, one file each (what training reads)
  std::vector<std::string> names;
  std::vector<std::string> documents;
  nlohmann::json expected;

  struct Chunk {
    size_t document, offset, length;
  };
  std::vector<Chunk> chunks;
  std::string_view text(const Chunk& c) const {
    return std::string_view(documents[c.document]).substr(c.offset, c.length);
  }
  size_t bytes() const;
};

// Assembled and checked once per process; a test that needs it fails if it cannot be had.
const Sample& sample();

}  // namespace gattn::testing
