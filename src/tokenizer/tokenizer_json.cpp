#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "io/file.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn {

namespace {

using json = nlohmann::json;

// GPT-2's regex, which HF's ByteLevel pre-tokenizer applies when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string type_name(const json& j) { return j.is_null() ? "null" : j.type_name(); }

// Reads the fields of one JSON object, naming the file and the field path in every error.
class Fields {
 public:
  Fields(const json& object, std::string origin, std::string path)
      : object_(object), origin_(std::move(origin)), path_(std::move(path)) {
    if (!object_.is_object())
      fail(origin_, ": ", where(), ": expected an object, found ", describe(object_));
  }

  std::string where() const { return path_.empty() ? "top level" : path_; }
  std::string field_path(const std::string& name) const {
    return path_.empty() ? name : path_ + "." + name;
  }
  bool has(const std::string& name) const {
    return object_.contains(name) && !object_.at(name).is_null();
  }
  const json& get(const std::string& name) const {
    if (!object_.contains(name))
      fail(origin_, ": ", field_path(name), ": missing (", where(), " needs it)");
    return object_.at(name);
  }
  std::string string(const std::string& name) const {
    const json& j = get(name);
    if (!j.is_string())
      fail(origin_, ": ", field_path(name), ": expected a string, found ", describe(j));
    return j.get<std::string>();
  }
  bool boolean(const std::string& name, bool fallback) const {
    if (!has(name)) return fallback;
    const json& j = object_.at(name);
    if (!j.is_boolean())
      fail(origin_, ": ", field_path(name), ": expected true or false, found ", describe(j));
    return j.get<bool>();
  }
  // Fails unless the field is absent, null, or equal to one of the harmless values.
  void require_absent_or(const std::string& name, const std::vector<json>& harmless,
                         const std::string& why) const {
    if (!has(name)) return;
    const json& j = object_.at(name);
    for (const json& ok : harmless)
      if (j == ok) return;
    fail(origin_, ": ", field_path(name), ": ", describe(j), " is not supported (", why, ")");
  }
  [[noreturn]] void unsupported(const std::string& name, const std::string& what,
                                const std::string& supported) const {
    fail(origin_, ": ", field_path(name), ": ", what, " is not supported (supported: ", supported,
         ")");
  }
  static std::string describe(const json& j) {
    return j.is_structured() ? json_summary(j) : type_name(j) + " " + json_summary(j);
  }

 private:
  const json& object_;
  std::string origin_;
  std::string path_;
};

bool parse_normalizer(const json& j, const std::string& origin, const std::string& path) {
  if (j.is_null()) return false;
  const Fields f(j, origin, path);
  const std::string type = f.string("type");
  if (type == "NFC") return true;
  if (type == "Sequence") {
    const json& list = f.get("normalizers");
    if (!list.is_array())
      fail(origin, ": ", f.field_path("normalizers"), ": expected an array, found ",
           Fields::describe(list));
    bool nfc = false;
    for (size_t i = 0; i < list.size(); ++i)
      nfc = parse_normalizer(list[i], origin, cat(path, ".normalizers[", i, "]")) || nfc;
    return nfc;
  }
  f.unsupported("type", cat("normalizer \"", type, "\""), "NFC, a Sequence of NFC, or null");
}

void parse_byte_level(const Fields& f, TokenizerSpec& spec) {
  if (f.boolean("add_prefix_space", false))
    fail(spec.origin, ": ", f.field_path("add_prefix_space"),
         ": true is not supported (a byte-level pre-tokenizer here adds no prefix space)");
  if (f.boolean("use_regex", true))  // HF's default is true
    spec.splits.push_back({kGpt2Pattern, spec.origin + ": " + f.field_path("use_regex"), false});
}

void parse_split(const Fields& f, TokenizerSpec& spec) {
  const std::string behavior = f.string("behavior");
  if (behavior != "Isolated") f.unsupported("behavior", cat("\"", behavior, "\""), "\"Isolated\"");
  if (f.boolean("invert", false)) f.unsupported("invert", "true", "false");
  const Fields pattern(f.get("pattern"), spec.origin, f.field_path("pattern"));
  if (pattern.has("Regex")) {
    spec.splits.push_back(
        {pattern.string("Regex"), spec.origin + ": " + pattern.field_path("Regex"), false});
  } else if (pattern.has("String")) {
    spec.splits.push_back(
        {pattern.string("String"), spec.origin + ": " + pattern.field_path("String"), true});
  } else {
    fail(spec.origin, ": ", f.field_path("pattern"),
         ": expected {\"Regex\": ...} or {\"String\": ...}");
  }
}

void parse_pre_tokenizer(const json& j, TokenizerSpec& spec) {
  const std::string kSupported =
      "ByteLevel, or a Sequence of Split (behavior Isolated) ending in ByteLevel";
  if (j.is_null())
    fail(spec.origin, ": pre_tokenizer: null is not supported (supported: ", kSupported, ")");
  const Fields top(j, spec.origin, "pre_tokenizer");
  const std::string type = top.string("type");
  if (type == "ByteLevel") return parse_byte_level(top, spec);
  if (type != "Sequence") top.unsupported("type", cat("pre-tokenizer \"", type, "\""), kSupported);
  const json& list = top.get("pretokenizers");
  if (!list.is_array() || list.empty())
    fail(spec.origin, ": pre_tokenizer.pretokenizers: expected a non-empty array, found ",
         Fields::describe(list));
  for (size_t i = 0; i < list.size(); ++i) {
    const Fields f(list[i], spec.origin, cat("pre_tokenizer.pretokenizers[", i, "]"));
    const std::string t = f.string("type");
    const bool last = i + 1 == list.size();
    if (t == "Split" && !last) {
      parse_split(f, spec);
    } else if (t == "ByteLevel" && last) {
      parse_byte_level(f, spec);
    } else {
      f.unsupported("type", cat("\"", t, "\" at this position"), kSupported);
    }
  }
}

void parse_optional_byte_level(const json& j, const std::string& origin, const std::string& name) {
  if (j.is_null()) return;
  const Fields f(j, origin, name);
  const std::string type = f.string("type");
  if (type != "ByteLevel") f.unsupported("type", cat(name, " \"", type, "\""), "ByteLevel or null");
}

uint32_t parse_id(const json& j, const std::string& origin, const std::string& path) {
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > INT32_MAX)
    fail(origin, ": ", path, ": expected a token id (an integer from 0 to 2^31-1), found ",
         Fields::describe(j));
  return uint32_t(j.get<int64_t>());
}

void parse_model(const json& j, TokenizerSpec& spec) {
  if (j.is_null()) fail(spec.origin, ": model: missing (a BPE model is needed)");
  const Fields f(j, spec.origin, "model");
  if (!f.has("type")) fail(spec.origin, ": model.type: missing (expected \"BPE\")");
  const std::string type = f.string("type");
  if (type != "BPE") f.unsupported("type", cat("model \"", type, "\""), "BPE");
  f.require_absent_or("dropout", {json(0.0)}, "encoding must be deterministic");
  f.require_absent_or("continuing_subword_prefix", {json("")}, "byte-level BPE has none");
  f.require_absent_or("end_of_word_suffix", {json("")}, "byte-level BPE has none");
  spec.ignore_merges = f.boolean("ignore_merges", false);
  // unk_token, fuse_unk and byte_fallback never act: every byte has a token (checked on load).

  const json& vocab = f.get("vocab");
  if (!vocab.is_object())
    fail(spec.origin, ": model.vocab: expected an object of token -> id, found ",
         Fields::describe(vocab));
  spec.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items())
    spec.vocab.emplace_back(token, parse_id(id, spec.origin, cat("model.vocab[\"", token, "\"]")));

  const json& merges = f.get("merges");
  if (!merges.is_array())
    fail(spec.origin, ": model.merges: expected an array, found ", Fields::describe(merges));
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {  // the older "left right" form
      const std::string& line = m.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos)
        fail(spec.origin, ": model.merges[", i,
             "]: expected two tokens separated by one space, found \"", line, "\"");
      spec.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(spec.origin, ": model.merges[", i,
           "]: expected [\"left\", \"right\"] or \"left right\", found ", Fields::describe(m));
    }
  }
}

void parse_added_tokens(const json& j, TokenizerSpec& spec) {
  if (j.is_null()) return;
  if (!j.is_array())
    fail(spec.origin, ": added_tokens: expected an array, found ", Fields::describe(j));
  for (size_t i = 0; i < j.size(); ++i) {
    const Fields f(j[i], spec.origin, cat("added_tokens[", i, "]"));
    AddedTokenSpec token;
    token.id = parse_id(f.get("id"), spec.origin, f.field_path("id"));
    token.content = f.string("content");
    if (token.content.empty()) fail(spec.origin, ": ", f.field_path("content"), ": empty");
    token.special = f.boolean("special", false);
    token.normalized = f.boolean("normalized", !token.special);  // HF's default
    for (const char* flag : {"single_word", "lstrip", "rstrip"})
      if (f.boolean(flag, false)) f.unsupported(flag, "true", "false");
    spec.added_tokens.push_back(std::move(token));
  }
}

}  // namespace

TokenizerSpec parse_tokenizer_json(const std::string& text, const std::string& origin) {
  const json root = parse_json_text(text, origin);
  const Fields top(root, origin, "");
  TokenizerSpec spec;
  spec.origin = origin;
  top.require_absent_or("truncation", {}, "encode returns every id");
  top.require_absent_or("padding", {}, "encode returns every id");
  parse_added_tokens(top.has("added_tokens") ? top.get("added_tokens") : json(), spec);
  spec.nfc = parse_normalizer(top.has("normalizer") ? top.get("normalizer") : json(), origin,
                              "normalizer");
  parse_pre_tokenizer(top.has("pre_tokenizer") ? top.get("pre_tokenizer") : json(), spec);
  parse_optional_byte_level(top.has("post_processor") ? top.get("post_processor") : json(), origin,
                            "post_processor");
  parse_optional_byte_level(top.has("decoder") ? top.get("decoder") : json(), origin, "decoder");
  parse_model(top.get("model"), spec);
  return spec;
}

TokenizerSpec read_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_text_file(path), path);
}

std::string tokenizer_json_text(const TokenizerSpec& spec) {
  const auto quote = [](const std::string& s) { return json(s).dump(); };
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
  out += "  \"added_tokens\": [";
  for (size_t i = 0; i < spec.added_tokens.size(); ++i) {
    const AddedTokenSpec& t = spec.added_tokens[i];
    out +=
        cat(i ? "," : "", "\n    {\"id\": ", t.id, ", \"content\": ", quote(t.content),
            ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": ",
            t.normalized ? "true" : "false", ", \"special\": ", t.special ? "true" : "false", "}");
  }
  out += spec.added_tokens.empty() ? "],\n" : "\n  ],\n";
  out += spec.nfc ? "  \"normalizer\": {\"type\": \"NFC\"},\n" : "  \"normalizer\": null,\n";
  out += "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [";
  for (const PreTokenizer::Pattern& split : spec.splits)
    out += cat("\n    {\"type\": \"Split\", \"pattern\": {",
               split.literal ? "\"String\"" : "\"Regex\"", ": ", quote(split.regex),
               "}, \"behavior\": \"Isolated\", \"invert\": false},");
  out +=
      "\n    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, "
      "\"use_regex\": false}\n  ]},\n";
  out +=
      "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"trim_offsets\": false, \"use_regex\": false},\n";
  out +=
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": "
      "false, \"use_regex\": false},\n";
  out += cat(
      "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n",
      "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n",
      "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": ",
      spec.ignore_merges ? "true" : "false", ",\n    \"vocab\": {");
  for (size_t i = 0; i < spec.vocab.size(); ++i)
    out += cat(i ? "," : "", "\n      ", quote(spec.vocab[i].first), ": ", spec.vocab[i].second);
  out += "\n    },\n    \"merges\": [";
  for (size_t i = 0; i < spec.merges.size(); ++i)
    out += cat(i ? "," : "", "\n      [", quote(spec.merges[i].first), ", ",
               quote(spec.merges[i].second), "]");
  out += "\n    ]\n  }\n}\n";
  return out;
}

}  // namespace gattn
