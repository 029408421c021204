// gattn's chat template engine against jinja2 as Hugging Face runs chat templates: the golden
// renderings of tests/fixtures/chat_templates/cases.json (made by
// tools/reference/make_chat_template_fixtures.py from the built-in templates and features.jinja),
// which parts of the output came from data, bad templates, and the bounds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "infer/builtin_chat_templates.h"
#include "infer/chat_format.h"
#include "infer/jinja/template.h"
#include "io/file.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace gattn::jinja {
namespace {
using nlohmann::json;

const std::string kDir = std::string(GATTN_FIXTURE_DIR) + "/chat_templates/";

Variables variables_of(const nlohmann::ordered_json& j) {
  Variables v;
  for (const auto& [k, x] : j.items()) v.emplace_back(k, Value::from_json(x));  // names: any order
  return v;
}

std::string source_of(const std::string& name) {
  if (const auto builtin = builtin_chat_template(name)) return std::string(*builtin);
  return read_text_file(kDir + name);
}

TEST(Jinja, RendersAsJinja2Does) {
  const auto fixture = nlohmann::ordered_json::parse(read_text_file(kDir + "cases.json"));
  int rendered = 0, raised = 0;
  for (const auto& c : fixture["cases"]) {
    const std::string name = c["name"];
    const Template t(source_of(c["template"]), name);
    if (c.contains("error")) {
      EXPECT_THROW(t.render(variables_of(c["variables"])), Error) << name;
      ++raised;
      continue;
    }
    try {
      EXPECT_EQ(t.render(variables_of(c["variables"])).s, c["expected"].get<std::string>()) << name;
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
    ++rendered;
  }
  EXPECT_GE(rendered, 90);
  EXPECT_GE(raised, 6);
}

// The fixtures were rendered from the built-in templates as they are now (else: regenerate them
// with tools/reference/make_chat_template_fixtures.py).
TEST(Jinja, FixturesMatchTheBuiltInTemplates) {
  const json fixture = parse_json_file(kDir + "cases.json");
  for (const std::string_view name : kBuiltinChatTemplates) {
    ASSERT_TRUE(fixture["builtin_templates"].contains(name)) << name;
    EXPECT_EQ(fixture["builtin_templates"][std::string(name)].get<std::string>(),
              *builtin_chat_template(name))
        << name;
  }
}

TEST(Jinja, RaiseExceptionSaysTheTemplatesMessage) {
  const Template t("{{ raise_exception('No user query found in messages.') }}", "t.jinja");
  try {
    t.render({});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No user query found in messages."), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("t.jinja:1"), std::string::npos);
  }
}

// Data keeps its mark through the string operations a template does to it; literals stay
// unmarked.
TEST(Jinja, OutputKnowsWhichBytesCameFromData) {
  const Template t("<a>{{ m.split('|')[1].strip() ~ '<b>' }}{{ m[:2] }}{{ 'x' ~ n }}", "t");
  const Text out =
      t.render({{"m", Value::from_json(json(" q |<c> "))}, {"n", Value::from_json(json(7))}});
  EXPECT_EQ(out.s, "<a><c><b> qx7");
  std::string marks;
  for (size_t i = 0; i < out.s.size(); ++i) marks += out.is_data(i) ? 'd' : '.';
  EXPECT_EQ(marks, "...ddd...dd..");
}

// Python's answers at the edges: slices with steps past int64's end, indices out of range
// (undefined, printed as nothing), integer overflow (an error, where Python has big integers).
TEST(Jinja, EdgesOfPythonSemantics) {
  const auto render = [](const char* source) { return Template(source, "t").render({}).s; };
  EXPECT_EQ(render("{{ [1, 2, 3][1::9223372036854775807] }}"), "[2]");
  EXPECT_EQ(render("{{ 'abc'[2::-9223372036854775807] }}{{ 'abc'[-9::-1] }}"), "c");
  EXPECT_EQ(render("{{ [1][5] }}|{{ [1][-5] }}|{{ 'ab'[9] }}"), "||");
  EXPECT_EQ(render("{{ 7 // -2 }} {{ -7 % 3 }} {{ 2 ** 62 }}"), "-4 2 4611686018427387904");
  EXPECT_THROW(render("{{ 2 ** 63 }}"), Error);
  EXPECT_THROW(render("{{ -(-9223372036854775807 - 1) }}"), Error);
}

TEST(Jinja, BadTemplatesAreErrorsNamingTheLine) {
  const char* bad[] = {
      "{{ x ",
      "{% if x %}",
      "{% for %}{% endfor %}",
      "{{ 1 + }}",
      "{% foo %}",
      "{% endif %}",
      "{# open",
      "{{ 'unclosed }}",
      "{% raw %}x",
      "{{ x | }}",
      "\n\n{% include 'x' %}",
      "{% break %}",
      "{{ (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1 }}"};
  for (const char* source : bad) EXPECT_THROW(Template(source, "bad.jinja"), Error) << source;
  try {
    Template("a\n\n{% include 'x' %}", "bad.jinja");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jinja:3"), std::string::npos) << e.what();
  }
}

TEST(Jinja, RenderingIsBounded) {
  const char* runaway[] = {
      "{% for i in range(100000000) %}{% endfor %}",
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% "
      "endfor %}",
      "{{ 'x' * 100000000 }}",
      "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
      "{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = [ns.l] %}{% endfor %}",
      "{% set ns = namespace() %}{% set ns.me = ns %}",
      "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor "
      "%}{% endfor %}{% endfor %}",
      "{{ 2 ** 100 }}",
      "{{ 1 // 0 }}",
      "{{ undefined_thing.attribute }}",
      "{{ none() }}",
  };
  for (const char* source : runaway) {
    const Template t(source, "runaway.jinja");
    EXPECT_THROW(t.render({}), Error) << source;
  }
}

TEST(ChatFormat, ReasoningSplitsAsTextArrives) {
  const auto split = [](bool inside, const std::vector<std::string>& pieces) {
    ReasoningSplitter s(inside);
    ReasoningSplitter::Parts all;
    for (const std::string& p : pieces) {
      const auto got = s.feed(p);
      all.reasoning += got.reasoning;
      all.content += got.content;
    }
    const auto rest = s.finish();
    return std::pair(all.reasoning + rest.reasoning, all.content + rest.content);
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(split(false, {"<th", "ink>\nplan", " it\n</th", "ink>\n\nanswer"}),
            P("plan it", "answer"));
  EXPECT_EQ(split(true, {"plan\n", "\n", "</think>\n\nans", "wer\n"}), P("plan", "answer\n"));
  EXPECT_EQ(split(false, {"plain answer"}), P("", "plain answer"));
  EXPECT_EQ(split(false, {"<", "b>bold"}), P("", "<b>bold"));
  EXPECT_EQ(split(true, {"cut off mid-thought\n"}), P("cut off mid-thought\n", ""));
  EXPECT_EQ(split(false, {"\n\n<think>\n\n</think>\n\nquick"}), P("", "quick"));
  // Nothing is held back that cannot be a marker: the reasoning streams as it comes.
  ReasoningSplitter s(true);
  EXPECT_EQ(s.feed("step one, ").reasoning, "step one, ");
  EXPECT_EQ(s.feed("two <").reasoning, "two ");
  EXPECT_EQ(s.feed("x").reasoning, "<x");
}

}  // namespace
}  // namespace gattn::jinja
