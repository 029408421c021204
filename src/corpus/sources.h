// The default corpus's three public-domain sources, each read into one document per chapter:
//   kjv     King James Bible (Debian bible-kjv), 1,189 chapters
//   web     World English Bible (sword-text-web, SWORD module engWEB2015eb), with the
//           deuterocanon except books that retell other books' chapters
//   tdavid  Spurgeon's Treasury of David (sword-comm-tdavid, module TDavid), one per psalm
#pragma once
#include <string>
#include <vector>

namespace gattn {

struct Document {
  std::string source;  // "kjv", "web", "tdavid"
  std::string book;    // "Genesis": with chapter, the key that decides the split
  int chapter = 0;
  std::string text;
};

struct SourcePaths {
  std::string sword_dir = "/usr/share/sword";
  std::string bible_program = "/usr/bin/bible";
  std::string bible_data_dir = "/usr/lib";
};

// Verses one a line, without numbers.
std::vector<Document> kjv_documents(const SourcePaths& paths);
// Verses one a line, without numbers, footnotes or editorial headings. Chapters whose entries are
// all empty (the module stores the additions to Daniel outside its versification) are skipped.
std::vector<Document> web_documents(const SourcePaths& paths);
// The commentary on each psalm, its headings and paragraphs one a line; Spurgeon's preface (the
// book's introduction entry) is not a psalm's and is left out.
std::vector<Document> tdavid_documents(const SourcePaths& paths);

// Books of the World English Bible left out: Greek Esther retells Esther chapter by chapter and
// 1 Esdras retells 2 Chronicles 35-36, Ezra and Nehemiah 8, so their chapters would put the same
// story on both sides of the split under other keys.
bool is_retelling_left_out(const std::string& osis_id);

}  // namespace gattn
