// Fuzz target: the prompt ids of chat messages by the built-in "chatml" chat template
// (ChatFormat), from a chat request body as the server reads it and from raw bytes as gattn
// generate --chat reads a file (any bytes; 0x1E separates messages, the first piece is the role).
// Only gattn::Error may come out, and no control token may come from a role or a content: the
// ids hold one <|im_start|> per message and one for the reply, one <|im_end|> per message, and no
// other added token.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "infer/chat_format.h"
#include "serve/openai_request.h"
#include "tokenizer/byte_level.h"

namespace {
using nlohmann::json;

constexpr uint32_t kFirstAdded = 259, kStart = 260, kEnd = 261;

json added_token(uint32_t id, const char* content, bool special, bool normalized) {
  return {{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", normalized}, {"special", special}};
}

// Byte-level BPE with every byte, a few merges, NFC, and added tokens of each kind: specials
// (<|endoftext|>, ChatML's two), a plain one (<x>) and one matched after NFC (éa).
const gattn::Tokenizer& tokenizer() {
  static const gattn::Tokenizer t = [] {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
      vocab[gattn::byte_level::token_string(std::string(1, char(b)))] = b;
    vocab["th"] = 256;
    vocab["the"] = 257;
    vocab["\xC4\xA0the"] = 258;  // " the"
    const json j = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens",
         {added_token(259, "<|endoftext|>", true, false),
          added_token(kStart, "<|im_start|>", true, false),
          added_token(kEnd, "<|im_end|>", true, false), added_token(262, "<x>", false, false),
          added_token(263,
                      "\xC3\xA9"
                      "a",
                      false, true)}},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", gattn::kQwen2Pattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"},
             {"add_prefix_space", false},
             {"trim_offsets", false},
             {"use_regex", false}}}}}},
        {"post_processor", nullptr},
        {"decoder",
         {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", json::array({json::array({"t", "h"}), json::array({"th", "e"}),
                                  json::array({"\xC4\xA0", "the"})})}}}};
    const std::string path = "/tmp/gattn_fuzz_chat_tokenizer_" + std::to_string(::getpid());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const std::string text = j.dump();
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
      __builtin_trap();
    try {
      gattn::Tokenizer loaded = gattn::Tokenizer::load(path);
      std::remove(path.c_str());
      return loaded;
    } catch (const gattn::Error& e) {  // the target's own tokenizer: a bug here, not an input
      std::fprintf(stderr, "fuzz_chat_template: %s\n", e.what());
      std::abort();
    }
  }();
  return t;
}

void check(const std::vector<gattn::ChatMessage>& messages) {
  static const gattn::ChatFormat chatml =
      gattn::ChatFormat::choose("chatml", "", tokenizer(), gattn::discard_log());
  json j = json::array();
  for (const gattn::ChatMessage& m : messages) j.push_back({{"role", m.role}, {"content", m.content}});
  const std::vector<uint32_t> ids = chatml.render(j, json::object()).ids;
  size_t starts = 0, ends = 0;
  for (const uint32_t id : ids) {
    starts += id == kStart;
    ends += id == kEnd;
    if (id >= kFirstAdded && id != kStart && id != kEnd) __builtin_trap();
  }
  if (starts != messages.size() + 1 || ends != messages.size() || ids.front() != kStart)
    __builtin_trap();
}

// The input's bytes as messages: pieces between 0x1E bytes, the first the role of them all.
std::vector<gattn::ChatMessage> raw_messages(std::string_view input) {
  std::vector<std::string> pieces(1);
  for (const char c : input) {
    if (c == '\x1E')
      pieces.emplace_back();
    else
      pieces.back() += c;
  }
  if (pieces.size() == 1) return {{.role = "user", .content = pieces[0]}};
  std::vector<gattn::ChatMessage> messages;
  for (size_t i = 1; i < pieces.size(); ++i)
    messages.push_back({.role = pieces[0], .content = pieces[i]});
  return messages;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  gattn::fuzz::expect_only_errors([&] { check(raw_messages(input)); });
  return gattn::fuzz::expect_only_errors([&] { check(gattn::parse_chat_request(input).messages); });
}
