#include "corpus/markup.h"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <vector>

#include "corpus/entities.h"
#include "corpus/text_builder.h"
#include "util/error.h"

namespace gattn {

namespace {

// One tag as written: <name attributes>, </name> or <name attributes/>.
struct Tag {
  std::string_view name;
  std::string_view attributes;
  bool closing = false;
  bool self_closing = false;

  // The value of attribute `key` ("" when absent).
  std::string_view attribute(std::string_view key) const {
    size_t pos = 0;
    while (pos < attributes.size()) {
      while (pos < attributes.size() && std::isspace((unsigned char)attributes[pos])) ++pos;
      const size_t key_begin = pos;
      while (pos < attributes.size() && attributes[pos] != '=' &&
             !std::isspace((unsigned char)attributes[pos]))
        ++pos;
      const std::string_view found = attributes.substr(key_begin, pos - key_begin);
      while (pos < attributes.size() && std::isspace((unsigned char)attributes[pos])) ++pos;
      if (pos >= attributes.size() || attributes[pos] != '=') continue;
      ++pos;
      while (pos < attributes.size() && std::isspace((unsigned char)attributes[pos])) ++pos;
      if (pos >= attributes.size()) break;
      const char quote = attributes[pos];
      size_t value_begin = pos, value_end;
      if (quote == '"' || quote == '\'') {
        value_begin = pos + 1;
        value_end = attributes.find(quote, value_begin);
        if (value_end == std::string_view::npos) value_end = attributes.size();
        pos = value_end + 1;
      } else {
        while (pos < attributes.size() && !std::isspace((unsigned char)attributes[pos])) ++pos;
        value_end = pos;
      }
      if (found == key) return attributes.substr(value_begin, value_end - value_begin);
    }
    return {};
  }
};

// The tag starting at text[pos] == '<'; `end` is set past its '>'.
Tag parse_tag(std::string_view text, size_t pos, size_t& end, const std::string& where) {
  char quote = 0;
  size_t i = pos + 1;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      // Quotes delimit values only after '=' (GBF tags have none; text may hold apostrophes).
      if (i > pos + 1 && text[i - 1] == '=') quote = c;
    } else if (c == '>') {
      break;
    }
  }
  if (i >= text.size())
    fail(where, ": unterminated tag starting '",
         text.substr(pos, std::min<size_t>(40, text.size() - pos)), "'");
  end = i + 1;
  std::string_view inside = text.substr(pos + 1, i - pos - 1);
  Tag tag;
  if (!inside.empty() && inside.front() == '/') {
    tag.closing = true;
    inside.remove_prefix(1);
  }
  if (!inside.empty() && inside.back() == '/') {
    tag.self_closing = true;
    inside.remove_suffix(1);
  }
  size_t name_end = 0;
  while (name_end < inside.size() && !std::isspace((unsigned char)inside[name_end])) ++name_end;
  tag.name = inside.substr(0, name_end);
  tag.attributes = inside.substr(name_end);
  return tag;
}

// What a tag means for the plain text.
enum class Role {
  inline_markup,  // content kept, no boundary (<w>, <hi>, <q>, ...)
  block,          // content kept, a line or paragraph boundary around it
  dropped,        // content dropped (<note>, cross references, non-canonical front matter)
  heading,        // dropped in scripture, a line of its own in commentary
};

struct Meaning {
  Role role = Role::inline_markup;
  std::string_view element;  // what it opens or closes; GBF spells the closing tag differently
  bool opens = false, closes = false;  // neither: an empty element or a milestone
  // Milestone pairs (<div sID="x" type="glossary"/> ... <div eID="x"/>) drop what they enclose.
  std::string_view dropped_region_start, region_end;
};

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

Meaning container(Role role, const Tag& tag) {
  Meaning m;
  m.role = role;
  m.element = tag.name;
  m.opens = !tag.closing && !tag.self_closing;
  m.closes = tag.closing;
  return m;
}

// OSIS 2.1: the markup of the installed modules.
Meaning osis_meaning(const Tag& tag) {
  const std::string_view name = tag.name;
  if (name == "div") {
    // Front and back matter around the books (prefaces, introductions, a glossary) is not text
    // of the chapter it happens to be stored with.
    const bool front_or_back =
        is_one_of(tag.attribute("type"),
                  {"front", "introduction", "glossary", "preface", "titlePage", "colophon", "back",
                   "index", "bibliography", "coverPage", "acknowledgement"});
    Meaning m = container(front_or_back ? Role::dropped : Role::block, tag);
    if (tag.self_closing) {
      if (front_or_back) m.dropped_region_start = tag.attribute("sID");
      m.region_end = tag.attribute("eID");
    }
    return m;
  }
  if (is_one_of(name, {"note", "figure", "index"})) return container(Role::dropped, tag);
  if (name == "title")
    return container(tag.attribute("canonical") == "true" ? Role::block : Role::heading, tag);
  if (name == "speaker") return container(Role::heading, tag);
  if (is_one_of(name, {"p", "l", "lg", "lb", "list", "item", "chapter", "verse", "table", "row",
                       "cell", "head", "closer", "salute", "signed"}))
    return container(Role::block, tag);
  return container(Role::inline_markup, tag);
}

// ThML: HTML with Bible extensions (<note>, <scripRef>, <sync>).
Meaning thml_meaning(const Tag& tag) {
  std::string lower(tag.name);
  for (char& c : lower) c = char(std::tolower((unsigned char)c));
  Meaning m;
  if (lower == "note" || lower == "sync" || lower == "img" || lower == "script") {
    m = container(Role::dropped, tag);
  } else if (lower == "div" && is_one_of(tag.attribute("class"), {"sechead", "title"})) {
    m = container(Role::heading, tag);
  } else if (lower.size() == 2 && lower[0] == 'h' && std::isdigit((unsigned char)lower[1])) {
    m = container(Role::heading, tag);
  } else if (is_one_of(lower, {"p", "br", "div", "li", "ul", "ol", "table", "tr", "td", "th",
                               "blockquote", "verse", "pb"})) {
    m = container(Role::block, tag);
  } else {
    m = container(Role::inline_markup, tag);
  }
  if (lower == "br" || lower == "img" || lower == "sync" || lower == "pb") m.opens = false;
  return m;
}

// GBF: two-letter codes, an upper-case pair opening and upper-then-lower closing ("<RF>" ...
// "<Rf>"); Strong's numbers and formatting codes carry no text of their own.
Meaning gbf_meaning(const Tag& tag) {
  const std::string_view code = tag.name.substr(0, 2);
  Meaning m;
  if (code == "CM" || code == "CL") m.role = Role::block;  // paragraph, line break
  // Footnotes (<RF>...<Rf>) and titles (<TS>...<Ts>) are the pairs with content to judge.
  for (const auto& [open, close, role] :
       {std::tuple{"RF", "Rf", Role::dropped}, std::tuple{"TS", "Ts", Role::heading}}) {
    if (code != open && code != close) continue;
    m.role = role;
    m.element = open;
    m.opens = code == open;
    m.closes = code == close;
  }
  return m;
}

struct OpenElement {
  std::string_view element;
  bool dropping;
};

}  // namespace

Markup markup_named(std::string_view source_type, const std::string& conf_path) {
  std::string lower(source_type);
  for (char& c : lower) c = char(std::tolower((unsigned char)c));
  if (lower.empty() || lower == "plain") return Markup::plain;
  if (lower == "osis") return Markup::osis;
  if (lower == "thml") return Markup::thml;
  if (lower == "gbf") return Markup::gbf;
  fail(conf_path, ": SourceType=", source_type,
       " is not supported (expected OSIS, ThML, GBF or Plain)");
}

std::string plain_text(std::string_view marked_up, Markup markup, TextKind kind,
                       const std::string& where) {
  TextBuilder out(kind == TextKind::commentary ? TextBuilder::Breaks::newlines
                                               : TextBuilder::Breaks::spaces);
  std::string decoded;
  if (markup == Markup::plain) {
    append_decoded(decoded, marked_up, where);
    out.text(decoded);
    return out.finish();
  }
  std::vector<OpenElement> open;
  std::vector<std::string_view> dropped_regions;
  const auto dropping = [&] {
    return !dropped_regions.empty() || (!open.empty() && open.back().dropping);
  };
  size_t pos = 0;
  while (pos < marked_up.size()) {
    const size_t lt = marked_up.find('<', pos);
    const size_t text_end = lt == std::string_view::npos ? marked_up.size() : lt;
    if (text_end > pos && !dropping()) {
      decoded.clear();
      append_decoded(decoded, marked_up.substr(pos, text_end - pos), where);
      out.text(decoded);
    }
    if (lt == std::string_view::npos) break;
    size_t tag_end = 0;
    const Tag tag = parse_tag(marked_up, lt, tag_end, where);
    pos = tag_end;
    Meaning m = markup == Markup::osis   ? osis_meaning(tag)
                : markup == Markup::thml ? thml_meaning(tag)
                                         : gbf_meaning(tag);
    if (m.role == Role::heading)
      m.role = kind == TextKind::commentary ? Role::block : Role::dropped;
    const bool was_dropping = dropping();
    if (!m.region_end.empty()) {
      const auto it = std::find(dropped_regions.begin(), dropped_regions.end(), m.region_end);
      if (it != dropped_regions.end()) dropped_regions.erase(it);
    }
    if (!m.dropped_region_start.empty()) dropped_regions.push_back(m.dropped_region_start);
    if (m.opens) {
      open.push_back({m.element, was_dropping || m.role == Role::dropped});
    } else if (m.closes) {
      // Elements may open in one verse's entry and close in another's: a close without its open
      // is ignored, and elements still open when the entry ends simply end with it.
      for (size_t i = open.size(); i-- > 0;)
        if (open[i].element == m.element) {
          open.resize(i);
          break;
        }
    }
    if (was_dropping && dropping()) continue;
    if (m.role == Role::block) out.line_break();
    if (m.role == Role::dropped) out.soft_break();
  }
  return out.finish();
}

}  // namespace gattn
