#include "io/documents.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/safetensors.h"
#include "io/token_shard.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

void read_jsonl(const std::string& path,
                const std::function<void(std::string_view, const std::string&)>& visit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open for reading");
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    const nlohmann::json j = parse_json_text(line, where);
    if (!j.is_object() || !j.contains("text") || !j.at("text").is_string())
      fail(where, ": expected an object with a string field \"text\"");
    visit(j.at("text").get_ref<const std::string&>(), where);
  }
}

void read_file(const fs::path& path,
               const std::function<void(std::string_view, const std::string&)>& visit) {
  if (path.extension() == ".jsonl") return read_jsonl(path.string(), visit);
  const std::string text = read_text_file(path.string());
  // Any bytes are text to a byte-level tokenizer, so gattn's own binary files given as text are
  // told apart by their layout: they would otherwise be tokenized silently.
  if (looks_like_token_shard(text, text.size()))
    fail(path.string(), ": a token shard (or a damaged one), not text");
  if (looks_like_safetensors(text, text.size()))
    fail(path.string(), ": a safetensors file, not text");
  visit(text, path.string());
}
}  // namespace

void for_each_document(const std::vector<std::string>& inputs,
                       const std::function<void(std::string_view, const std::string&)>& visit) {
  if (inputs.empty()) fail("no input files or folders given");
  for (const std::string& input : inputs) {
    const fs::path path(input);
    if (fs::is_directory(path)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) fail(input, ": folder holds no files");
      for (const fs::path& file : files) read_file(file, visit);
    } else if (fs::exists(path)) {
      read_file(path, visit);
    } else {
      fail(input, ": no such file or folder");
    }
  }
}

}  // namespace gattn
