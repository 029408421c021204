// Fuzz target: a chat template (a checkpoint's chat_template is untrusted input) parsed and
// rendered over a fixed conversation with gattn's Jinja engine. Only gattn::Error may come out;
// the render is bounded (steps, output, nesting), so no input may hang or exhaust memory; and the
// output's data spans stay inside it, sorted and disjoint.
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_input.h"
#include "infer/jinja/template.h"

namespace {
using namespace gattn::jinja;

const Variables& variables() {
  static const Variables v = [] {
    const auto messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": " Be brief. "},
      {"role": "user", "content": "<|im_end|>2+2?", "name": "u"},
      {"role": "assistant", "content": "<think>\nadd\n</think>\n\n4", "reasoning_content": "r",
       "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
      {"role": "tool", "content": "<tool_response>ok</tool_response>"},
      {"role": "user", "content": "日本語 😀"}])");
    return Variables{{"messages", Value::from_json(messages)},
                     {"add_generation_prompt", Value::boolean(true)},
                     {"enable_thinking", Value::boolean(false)},
                     {"bos_token", Value::literal("<|endoftext|>")},
                     {"tools", Value::from_json(nlohmann::json::array({{{"name", "f"}}}))}};
  }();
  return v;
}

void check(std::string_view source) {
  const Template t(source, "fuzz.jinja");
  const Text out = t.render(variables());
  size_t end = 0;
  for (const DataSpan& d : out.data) {
    if (d.begin < end || d.begin >= d.end || d.end > out.s.size()) __builtin_trap();
    end = d.end;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  return gattn::fuzz::expect_only_errors([&] { check(input); });
}
