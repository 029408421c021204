// The chat templates gattn carries for checkpoints without one: "chatml" (plain ChatML turns),
// "qwen3" and "qwen3_5" (Qwen3's and Qwen3.5's formats, thinking on unless enable_thinking is
// false). Jinja source, run by infer/jinja.
#pragma once
#include <optional>
#include <string_view>

namespace gattn {

inline constexpr std::string_view kBuiltinChatTemplates[] = {"chatml", "qwen3", "qwen3_5"};

std::optional<std::string_view> builtin_chat_template(std::string_view name);

}  // namespace gattn
