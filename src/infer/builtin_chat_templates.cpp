// gattn's own chat templates, written for the formats Qwen3 and Qwen3.5 checkpoints use
// (ChatML turns; reasoning in a <think> block), for checkpoints that carry no chat_template.
// tools/reference/make_chat_template_fixtures.py reads them from this file (each between
// R"jinja( and )jinja") and renders them with Python's jinja2 for tests/fixtures/chat_templates.
#include "infer/builtin_chat_templates.h"

namespace gattn {

namespace {
// Turns as <|im_start|>role\ncontent<|im_end|>\n; the reply starts with <|im_start|>assistant\n.
constexpr const char* kChatml = R"jinja({%- for m in messages %}
{{- '<|im_start|>' ~ m.role ~ '\n' ~ m.content ~ '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %})jinja";

// Qwen3: the system message first; an assistant turn after the last user message shows its
// reasoning (reasoning_content, or what its content has before </think>) in a <think> block,
// earlier ones only their answer. Thinking is on unless enable_thinking is false, which closes an
// empty <think> block in the generation prompt.
constexpr const char* kQwen3 = R"jinja({%- if messages and messages[0].role == 'system' %}
{{- '<|im_start|>system\n' ~ messages[0].content ~ '<|im_end|>\n' }}
{%- endif %}
{%- set found = namespace(done=false, last_user=messages|length - 1) %}
{%- for m in messages|reverse %}
{%- if not found.done and m.role == 'user' %}
{%- set found.done = true %}
{%- set found.last_user = messages|length - 1 - loop.index0 %}
{%- endif %}
{%- endfor %}
{%- for m in messages %}
{%- set text = m.content if m.content is string else '' %}
{%- if m.role == 'user' or (m.role == 'system' and not loop.first) %}
{{- '<|im_start|>' ~ m.role ~ '\n' ~ text ~ '<|im_end|>\n' }}
{%- elif m.role == 'assistant' %}
{%- set thought = '' %}
{%- if m.reasoning_content is string %}
{%- set thought = m.reasoning_content %}
{%- elif '</think>' in text %}
{%- set thought = text.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
{%- set text = text.split('</think>')[-1].lstrip('\n') %}
{%- endif %}
{%- if loop.index0 > found.last_user and (loop.last or thought) %}
{{- '<|im_start|>assistant\n<think>\n' ~ thought.strip('\n') ~ '\n</think>\n\n' ~ text.lstrip('\n') }}
{%- else %}
{{- '<|im_start|>assistant\n' ~ text }}
{%- endif %}
{{- '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}
{{- '<think>\n\n</think>\n\n' }}
{%- endif %}
{%- endif %})jinja";

// Qwen3.5: as Qwen3, with every content trimmed, the <think> block on every assistant turn after
// the last user message, a system message only first, at least one user message, and the
// generation prompt opening <think> (thinking on) or closing an empty one (enable_thinking false).
constexpr const char* kQwen3_5 = R"jinja({%- if not messages %}
{{- raise_exception('No messages provided.') }}
{%- endif %}
{%- if messages[0].role == 'system' %}
{{- '<|im_start|>system\n' ~ (messages[0].content if messages[0].content is string else '')|trim ~ '<|im_end|>\n' }}
{%- endif %}
{%- set found = namespace(done=false, last_user=messages|length - 1) %}
{%- for m in messages|reverse %}
{%- if not found.done and m.role == 'user' %}
{%- set found.done = true %}
{%- set found.last_user = messages|length - 1 - loop.index0 %}
{%- endif %}
{%- endfor %}
{%- if not found.done %}
{{- raise_exception('No user query found in messages.') }}
{%- endif %}
{%- for m in messages %}
{%- set text = (m.content if m.content is string else '')|trim %}
{%- if m.role == 'system' %}
{%- if not loop.first %}
{{- raise_exception('System message must be at the beginning.') }}
{%- endif %}
{%- elif m.role == 'user' %}
{{- '<|im_start|>user\n' ~ text ~ '<|im_end|>\n' }}
{%- elif m.role == 'assistant' %}
{%- set thought = '' %}
{%- if m.reasoning_content is string %}
{%- set thought = m.reasoning_content %}
{%- elif '</think>' in text %}
{%- set thought = text.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
{%- set text = text.split('</think>')[-1].lstrip('\n') %}
{%- endif %}
{%- set thought = thought|trim %}
{%- if loop.index0 > found.last_user %}
{{- '<|im_start|>assistant\n<think>\n' ~ thought ~ '\n</think>\n\n' ~ text }}
{%- else %}
{{- '<|im_start|>assistant\n' ~ text }}
{%- endif %}
{{- '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}
{{- '<think>\n\n</think>\n\n' }}
{%- else %}
{{- '<think>\n' }}
{%- endif %}
{%- endif %})jinja";
}  // namespace

std::optional<std::string_view> builtin_chat_template(std::string_view name) {
  if (name == "chatml") return kChatml;
  if (name == "qwen3") return kQwen3;
  if (name == "qwen3_5") return kQwen3_5;
  return std::nullopt;
}

}  // namespace gattn
