#include "sample.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "io/file.h"

namespace gattn::testing {

std::string fixture_path(const std::string& name) {
  return std::string(GATTN_TOKENIZER_FIXTURES) + "/" + name;
}

uint64_t fnv1a64(std::string_view bytes, uint64_t hash) {
  for (const char c : bytes) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return hash;
}

std::string ids_hash(std::span<const uint32_t> ids) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (const uint32_t id : ids) {
    const char le[4] = {char(id), char(id >> 8), char(id >> 16), char(id >> 24)};
    hash = fnv1a64(std::string_view(le, 4), hash);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

size_t Sample::bytes() const {
  size_t total = 0;
  for (const std::string& d : documents) total += d.size();
  return total;
}

namespace {

std::map<std::string, std::string> installed_packages(const std::string& file) {
  std::map<std::string, std::string> versions;
  std::ifstream in(file);
  std::string package, version;
  while (in >> package >> version) versions[package] = version;
  return versions;
}

// Fills `s`, or returns what went wrong.
std::string load_sample(Sample& s) {
  const std::string dir = GATTN_TOKENIZER_SAMPLE_DIR;
  const std::string command = "bash '" + std::string(GATTN_TOKENIZER_ASSEMBLE) + "' '" + dir + "'";
  if (std::system(command.c_str()) != 0)
    return "assembling the sample failed (" + command +
           "); are the Debian packages of scripts/packages/tokenizer.txt installed?";
  s.folder = dir + "/documents";
  s.expected = nlohmann::json::parse(read_text_file(fixture_path("expected.json")));
  const auto installed = installed_packages(dir + "/packages.txt");
  std::string problems;
  for (const auto& doc : s.expected.at("documents")) {
    const std::string name = doc.at("name");
    const std::string text = read_text_file(s.folder + "/" + name);
    char hash[17];
    std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
    if (text.size() != doc.at("bytes").get<size_t>() ||
        hash != doc.at("fnv1a64").get<std::string>())
      problems += "\n  " + name + ": " + std::to_string(text.size()) + " bytes, hash " + hash +
                  "; the fixtures were made from " + doc.at("bytes").dump() + " bytes, hash " +
                  doc.at("fnv1a64").get<std::string>();
    s.names.push_back(name);
    s.documents.push_back(text);
  }
  if (!problems.empty()) {
    problems = "the assembled sample is not the one the fixtures were made from:" + problems +
               "\n  packages (fixtures -> installed):";
    for (const auto& [package, version] : s.expected.at("packages").items()) {
      const auto it = installed.find(package);
      problems += "\n    " + package + " " + version.get<std::string>() + " -> " +
                  (it == installed.end() ? "?" : it->second);
    }
    return problems +
           "\n  install those versions, or regenerate the fixtures with "
           "tools/tokenizer_reference/make_fixtures.sh --select";
  }
  for (const auto& c : s.expected.at("chunks"))
    s.chunks.push_back({c.at(0).get<size_t>(), c.at(1).get<size_t>(), c.at(2).get<size_t>()});
  return "";
}

}  // namespace

const Sample& sample() {
  static Sample s;
  static std::string problem;
  static std::once_flag once;
  std::call_once(once, [] { problem = load_sample(s); });
  if (!problem.empty()) ADD_FAILURE() << problem;
  return s;
}

}  // namespace gattn::testing
