// SWORD's versification systems ("v11n"): which books, chapters and verses a Bible or commentary
// module indexes, and where each (book, chapter, verse) sits in a testament's index file.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

enum class Testament { old_testament = 0, new_testament = 1 };

struct VersifiedBook {
  std::string osis_id;  // "Gen", as SWORD and OSIS name it
  std::string name;     // "Genesis": the corpus's book name and the first half of its split key
  Testament testament;
  std::vector<int> verses_per_chapter;
  // Positions in the testament's index: the book's introduction entry, and for chapter c the
  // chapter heading (verse 0) at chapter_heading_index[c - 1], verse v at that position + v.
  size_t introduction_index = 0;
  std::vector<size_t> chapter_heading_index;

  int chapters() const { return int(verses_per_chapter.size()); }
};

class Versification {
 public:
  Versification(std::string name, std::vector<VersifiedBook> books);

  const std::string& name() const { return name_; }
  const std::vector<VersifiedBook>& books() const { return books_; }
  // Entries in that testament's index file: two headings (module, testament), then per book an
  // introduction and per chapter a heading followed by its verses.
  size_t index_entries(Testament testament) const { return entries_[int(testament)]; }
  // verse 0 is the chapter's heading entry; chapter and verse must be in range.
  size_t entry_index(const VersifiedBook& book, int chapter, int verse) const;
  // "Genesis 1:3", "Genesis 1 heading", "Genesis introduction", "old testament heading": for
  // error messages about an index entry.
  std::string describe_entry(Testament testament, size_t index) const;
  const VersifiedBook* find_book(std::string_view osis_id) const;

 private:
  std::string name_;
  std::vector<VersifiedBook> books_;
  size_t entries_[2] = {0, 0};
};

// The versification a module's conf names in its Versification= key (SWORD's default is KJV).
// Supported: KJV (66 books, 31,102 verses) and NRSVA (KJV's books with NRSV verse counts, plus
// the deuterocanon between the testaments). Anything else fails, naming `conf_path`.
const Versification& versification_named(std::string_view name, const std::string& conf_path);
const Versification& kjv_versification();

}  // namespace gattn
