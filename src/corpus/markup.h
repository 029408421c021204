// Plain text from the marked-up entries of a SWORD module: tags removed, footnotes, cross
// references and Strong's numbers dropped, character references decoded.
#pragma once
#include <string>
#include <string_view>

namespace gattn {

enum class Markup { plain, osis, thml, gbf };

// The markup a module's SourceType= names: OSIS, ThML, GBF, or Plain (the default when absent).
Markup markup_named(std::string_view source_type, const std::string& conf_path);

enum class TextKind {
  // A Bible's text: editorial section headings and speaker labels are dropped (canonical titles,
  // such as a psalm's superscription, are kept), and line and paragraph breaks become spaces.
  scripture,
  // A commentary's text: its headings are the author's and are kept, each on its own line; line
  // and paragraph breaks become newlines.
  commentary,
};

// The entry's plain text, whitespace collapsed, no leading or trailing whitespace. Malformed
// markup (an unterminated tag, an unknown character entity) fails, naming `where`.
std::string plain_text(std::string_view marked_up, Markup markup, TextKind kind,
                       const std::string& where);

}  // namespace gattn
