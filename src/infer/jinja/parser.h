// Jinja's template syntax, as Hugging Face renders chat templates (trim_blocks and lstrip_blocks
// on, "-" and "+" whitespace control, the loopcontrols extension, {% generation %} as a plain
// block): text, {{ expressions }}, {% if / elif / else %}, {% for ... in ... [if ...] %} with
// {% else %}, {% set %} (names, tuples, namespace attributes, blocks), {% macro %}, {% break %},
// {% continue %}, {% raw %}, {# comments #}. Anything else (include, extends, call, filter
// blocks) is an Error naming the line.
#pragma once
#include <string>
#include <string_view>

#include "infer/jinja/ast.h"

namespace gattn::jinja {

// An Error whose message starts with `origin` and the line for a template it cannot read.
Program parse_template(std::string_view source, const std::string& origin);

}  // namespace gattn::jinja
