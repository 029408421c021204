// A SWORD module's configuration file (mods.d/<module>.conf): the module name in brackets, then
// Key=Value lines saying where its files are, which driver reads them, their markup, encoding
// and versification.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace gattn {

struct SwordModuleConf {
  std::string module_name;  // the [section] name, e.g. "engWEB2015eb"
  std::string conf_path;
  std::map<std::string, std::string> values;  // the first value of each key

  // The value of `key`, or `fallback` when the conf does not set it.
  std::string value(const std::string& key, const std::string& fallback = "") const;
};

SwordModuleConf parse_sword_conf(std::string_view text, const std::string& conf_path);

// Finds the module named `module_name` (case-insensitive, as SWORD matches names) among the
// confs in `sword_dir`/mods.d. When it is not installed, fails naming the Debian package that
// provides it.
SwordModuleConf find_sword_module(const std::string& sword_dir, std::string_view module_name,
                                  std::string_view debian_package);

}  // namespace gattn
