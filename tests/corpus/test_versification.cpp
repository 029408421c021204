// The versification tables and the index layout SWORD's verse-keyed modules use.
#include <gtest/gtest.h>

#include <numeric>

#include "corpus/versification.h"
#include "util/error.h"

namespace gattn {
namespace {

struct Totals {
  int books = 0, chapters = 0, verses = 0;
};
Totals totals(const Versification& v) {
  Totals t;
  for (const VersifiedBook& b : v.books()) {
    ++t.books;
    t.chapters += b.chapters();
    t.verses += std::accumulate(b.verses_per_chapter.begin(), b.verses_per_chapter.end(), 0);
  }
  return t;
}

TEST(Versification, KjvHasTheKjvsBooksChaptersAndVerses) {
  const Versification& kjv = kjv_versification();
  const Totals t = totals(kjv);
  EXPECT_EQ(t.books, 66);
  EXPECT_EQ(t.chapters, 1189);
  EXPECT_EQ(t.verses, 31102);
  // As the installed KJV-versified commentary's index files (sword-comm-tdavid) hold.
  EXPECT_EQ(kjv.index_entries(Testament::old_testament), 24115u);
  EXPECT_EQ(kjv.index_entries(Testament::new_testament), 8246u);
  EXPECT_EQ(kjv.books().front().name, "Genesis");
  EXPECT_EQ(kjv.books()[38].name, "Malachi");
  EXPECT_EQ(kjv.books()[39].name, "Matthew");
  EXPECT_EQ(kjv.books()[39].testament, Testament::new_testament);
  EXPECT_EQ(kjv.find_book("Ps")->verses_per_chapter[118], 176);
  EXPECT_EQ(kjv.find_book("3John")->verses_per_chapter[0], 14);
}

TEST(Versification, NrsvaAddsTheDeuterocanonAndNrsvNumbering) {
  const Versification& nrsva = versification_named("NRSVA", "x.conf");
  const Totals t = totals(nrsva);
  EXPECT_EQ(t.books, 83);
  EXPECT_EQ(t.chapters, 1189 + 208);  // 17 deuterocanonical books
  // As the installed World English Bible's index files (sword-text-web) hold.
  EXPECT_EQ(nrsva.index_entries(Testament::old_testament), 31027u);
  EXPECT_EQ(nrsva.index_entries(Testament::new_testament), 8248u);
  EXPECT_EQ(nrsva.find_book("3John")->verses_per_chapter[0], 15);
  EXPECT_EQ(nrsva.find_book("Rev")->verses_per_chapter[11], 18);
  EXPECT_EQ(nrsva.find_book("Sir")->chapters(), 51);
  EXPECT_EQ(nrsva.find_book("Tob")->testament, Testament::old_testament);
  // Deuterocanonical books sit after Malachi, so Matthew starts the new testament unchanged.
  EXPECT_EQ(nrsva.entry_index(*nrsva.find_book("Matt"), 1, 1), 4u);
}

TEST(Versification, IndexLayoutHasModuleTestamentBookAndChapterHeadings) {
  const Versification& kjv = kjv_versification();
  const VersifiedBook& genesis = *kjv.find_book("Gen");
  EXPECT_EQ(genesis.introduction_index, 2u);
  EXPECT_EQ(kjv.entry_index(genesis, 1, 0), 3u);
  EXPECT_EQ(kjv.entry_index(genesis, 1, 1), 4u);
  EXPECT_EQ(kjv.entry_index(genesis, 2, 0), 3u + 1 + 31);
  const VersifiedBook& exodus = *kjv.find_book("Exod");
  EXPECT_EQ(exodus.introduction_index, 3u + 50 + 1533);  // Genesis: 50 headings, 1,533 verses
  const VersifiedBook& revelation = *kjv.find_book("Rev");
  EXPECT_EQ(kjv.entry_index(revelation, 22, 21) + 1, kjv.index_entries(Testament::new_testament));
  EXPECT_EQ(kjv.describe_entry(Testament::old_testament, 4), "Genesis 1:1");
  EXPECT_EQ(kjv.describe_entry(Testament::old_testament, 3), "Genesis 1 heading");
  EXPECT_EQ(kjv.describe_entry(Testament::old_testament, 2), "Genesis introduction");
  EXPECT_EQ(kjv.describe_entry(Testament::new_testament, 1), "new testament heading");
  EXPECT_EQ(kjv.describe_entry(Testament::new_testament, 0), "module heading");
  EXPECT_THROW(kjv.entry_index(genesis, 51, 1), Error);
  EXPECT_THROW(kjv.entry_index(genesis, 1, 32), Error);
}

TEST(Versification, UnknownNamesFailNamingTheConf) {
  EXPECT_EQ(&versification_named("", "x.conf"), &kjv_versification());
  try {
    versification_named("Vulg", "mods.d/x.conf");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "mods.d/x.conf: Versification=Vulg is not supported (expected KJV or NRSVA)");
  }
}

}  // namespace
}  // namespace gattn
