#include "corpus/sword_conf.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "io/file.h"
#include "util/error.h"

namespace gattn {

namespace {

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower((unsigned char)x) == std::tolower((unsigned char)y);
         });
}

// The [section] name on the conf's first non-comment line, or "" when there is none.
std::string section_name(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line.size() >= 2 && line.front() == '[' && line.back() == ']')
      return std::string(line.substr(1, line.size() - 2));
    return "";
  }
  return "";
}

}  // namespace

std::string SwordModuleConf::value(const std::string& key, const std::string& fallback) const {
  const auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

SwordModuleConf parse_sword_conf(std::string_view text, const std::string& conf_path) {
  SwordModuleConf conf;
  conf.conf_path = conf_path;
  conf.module_name = section_name(text);
  if (conf.module_name.empty())
    fail(conf_path, ": expected a [ModuleName] line before the first Key=Value line");
  size_t pos = 0;
  int line_number = 0;
  bool in_section = false;
  std::string continued_key;  // a value ending in '\' continues on the next line
  bool keep_continuation = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (!continued_key.empty()) {
      const bool more = !line.empty() && line.back() == '\\';
      if (keep_continuation) {
        std::string& value = conf.values[continued_key];
        value += " ";
        value += line.substr(0, line.size() - (more ? 1 : 0));
      }
      if (!more) continued_key.clear();
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[') {
      if (in_section) break;  // a conf describes one module; a second section is another's
      in_section = true;
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0)
      fail(conf_path, ":", line_number, ": expected Key=Value, found '", line, "'");
    const std::string key(trim(line.substr(0, equals)));
    std::string_view value = trim(line.substr(equals + 1));
    const bool more = !value.empty() && value.back() == '\\';
    if (more) value.remove_suffix(1);
    const bool first = conf.values.emplace(key, std::string(value)).second;
    if (more) {
      continued_key = key;
      keep_continuation = first;
    }
  }
  return conf;
}

SwordModuleConf find_sword_module(const std::string& sword_dir, std::string_view module_name,
                                  std::string_view debian_package) {
  namespace fs = std::filesystem;
  const fs::path mods_dir = fs::path(sword_dir) / "mods.d";
  std::error_code ec;
  std::vector<fs::path> confs;
  for (const auto& entry : fs::directory_iterator(mods_dir, ec))
    if (entry.path().extension() == ".conf") confs.push_back(entry.path());
  std::sort(confs.begin(), confs.end());
  for (const fs::path& path : confs) {
    const std::string text = read_text_file(path.string());
    if (equal_ignoring_case(section_name(text), module_name))
      return parse_sword_conf(text, path.string());
  }
  fail("SWORD module ", module_name, " is not installed (no conf naming [", module_name, "] in ",
       mods_dir.string(), "): install the Debian package ", debian_package);
}

}  // namespace gattn
