#include "corpus/sources.h"

#include "corpus/kjv_program.h"
#include "corpus/markup.h"
#include "corpus/zverse_module.h"
#include "util/error.h"

namespace gattn {

namespace {

void append_line(std::string& text, const std::string& line) {
  if (line.empty()) return;
  if (!text.empty()) text += '\n';
  text += line;
}

}  // namespace

bool is_retelling_left_out(const std::string& osis_id) {
  return osis_id == "EsthGr" || osis_id == "1Esd";
}

std::vector<Document> kjv_documents(const SourcePaths& paths) {
  std::vector<Document> documents;
  for (BibleChapter& chapter :
       read_kjv_with_bible_program(paths.bible_program, paths.bible_data_dir)) {
    Document d{"kjv", chapter.book->name, chapter.chapter, {}};
    for (const std::string& verse : chapter.verses)
      append_line(d.text, plain_text(verse, Markup::plain, TextKind::scripture, "kjv"));
    documents.push_back(std::move(d));
  }
  return documents;
}

std::vector<Document> web_documents(const SourcePaths& paths) {
  ZVerseModule web(find_sword_module(paths.sword_dir, "engWEB2015eb", "sword-text-web"),
                   paths.sword_dir);
  std::vector<Document> documents;
  for (const VersifiedBook& book : web.versification().books()) {
    if (is_retelling_left_out(book.osis_id)) continue;
    for (int c = 1; c <= book.chapters(); ++c) {
      Document d{"web", book.name, c, {}};
      // Verse 0, the chapter heading, holds the chapter's opening markup; any text it has (none
      // in this module once headings are dropped) comes first.
      for (int v = 0; v <= book.verses_per_chapter[c - 1]; ++v) {
        const std::string_view entry = web.entry(book, c, v);
        if (entry.empty()) continue;
        append_line(d.text, plain_text(entry, web.markup(), TextKind::scripture,
                                       cat(web.name(), " ", book.name, " ", c, ":", v)));
      }
      if (!d.text.empty()) documents.push_back(std::move(d));
    }
  }
  return documents;
}

std::vector<Document> tdavid_documents(const SourcePaths& paths) {
  ZVerseModule tdavid(find_sword_module(paths.sword_dir, "TDavid", "sword-comm-tdavid"),
                      paths.sword_dir);
  const VersifiedBook* psalms = tdavid.versification().find_book("Ps");
  if (!psalms) fail(tdavid.name(), ": its versification has no book of Psalms");
  std::vector<Document> documents;
  for (int c = 1; c <= psalms->chapters(); ++c) {
    Document d{"tdavid", psalms->name, c, {}};
    ZVerseModule::Location previous;
    for (int v = 0; v <= psalms->verses_per_chapter[c - 1]; ++v) {
      const ZVerseModule::Location location = tdavid.location(*psalms, c, v);
      if (location.bytes == 0 || location == previous) continue;  // empty, or linked to the last
      previous = location;
      append_line(d.text,
                  plain_text(tdavid.entry(*psalms, c, v), tdavid.markup(), TextKind::commentary,
                             cat(tdavid.name(), " ", psalms->name, " ", c, ":", v)));
    }
    if (d.text.empty()) fail(tdavid.name(), ": Psalm ", c, " has no commentary");
    documents.push_back(std::move(d));
  }
  return documents;
}

}  // namespace gattn
