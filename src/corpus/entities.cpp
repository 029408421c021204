#include "corpus/entities.h"

#include <cctype>
#include <utility>

#include "util/error.h"

namespace gattn {

namespace {

// A non-breaking space becomes a plain one and a soft hyphen nothing: neither helps a corpus.
constexpr std::pair<std::string_view, std::string_view> kNamed[] = {
    {"amp", "&"},         {"lt", "<"},          {"gt", ">"},          {"quot", "\""},
    {"apos", "'"},        {"nbsp", " "},        {"shy", ""},          {"ndash", "\u2013"},
    {"mdash", "\u2014"},  {"lsquo", "\u2018"},  {"rsquo", "\u2019"},  {"ldquo", "\u201C"},
    {"rdquo", "\u201D"},  {"hellip", "\u2026"}, {"laquo", "\u00AB"},  {"raquo", "\u00BB"},
    {"middot", "\u00B7"}, {"para", "\u00B6"},   {"sect", "\u00A7"},   {"deg", "\u00B0"},
    {"times", "\u00D7"},  {"dagger", "\u2020"}, {"Dagger", "\u2021"}, {"aelig", "\u00E6"},
    {"AElig", "\u00C6"},  {"oelig", "\u0153"},  {"OElig", "\u0152"},  {"eacute", "\u00E9"},
    {"egrave", "\u00E8"}, {"ecirc", "\u00EA"},  {"euml", "\u00EB"},   {"aacute", "\u00E1"},
    {"agrave", "\u00E0"}, {"acirc", "\u00E2"},  {"auml", "\u00E4"},   {"iacute", "\u00ED"},
    {"icirc", "\u00EE"},  {"iuml", "\u00EF"},   {"oacute", "\u00F3"}, {"ocirc", "\u00F4"},
    {"ouml", "\u00F6"},   {"uacute", "\u00FA"}, {"ucirc", "\u00FB"},  {"uuml", "\u00FC"},
    {"ccedil", "\u00E7"}, {"ntilde", "\u00F1"},
};

bool is_name_char(char c) { return std::isalnum((unsigned char)c) != 0; }

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

void append_decoded(std::string& out, std::string_view text, const std::string& where) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t amp = text.find('&', pos);
    if (amp == std::string_view::npos) {
      out += text.substr(pos);
      return;
    }
    out += text.substr(pos, amp - pos);
    // A reference is '&' name ';' or '&#' digits ';' with nothing else in between.
    size_t end = amp + 1;
    const bool numeric = end < text.size() && text[end] == '#';
    if (numeric) ++end;
    const bool hex = numeric && end < text.size() && (text[end] == 'x' || text[end] == 'X');
    if (hex) ++end;
    const size_t name_begin = end;
    while (end < text.size() && end - name_begin < 32 && is_name_char(text[end])) ++end;
    if (end == name_begin || end >= text.size() || text[end] != ';') {
      out += '&';
      pos = amp + 1;
      continue;
    }
    const std::string_view name = text.substr(name_begin, end - name_begin);
    if (numeric) {
      char32_t cp = 0;
      for (char c : name) {
        const int digit = std::isdigit((unsigned char)c) ? c - '0'
                          : hex && std::isxdigit((unsigned char)c)
                              ? std::tolower((unsigned char)c) - 'a' + 10
                              : -1;
        if (digit < 0) fail(where, ": malformed character reference &#", name, ";");
        cp = cp * (hex ? 16 : 10) + char32_t(digit);
        if (cp > 0x10FFFF) break;
      }
      if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        fail(where, ": character reference &#", hex ? "x" : "", name,
             "; is not a Unicode character");
      append_utf8(out, cp);
    } else {
      bool known = false;
      for (const auto& [entity, value] : kNamed)
        if (entity == name) {
          out += value;
          known = true;
          break;
        }
      if (!known) fail(where, ": unknown character entity &", name, ";");
    }
    pos = end + 1;
  }
}

}  // namespace gattn
