// The whole corpus from the installed Debian packages (scripts/packages/corpus.txt), built twice:
// counts, no markup left, no (book, chapter) on both sides, sizes, and identical bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "corpus/corpus.h"
#include "corpus/sources.h"
#include "corpus/sword_conf.h"
#include "corpus/zverse_module.h"
#include "io/documents.h"
#include "sword_module_writer.h"
#include "util/error.h"

namespace gattn {
namespace {

struct Doc {
  std::string source, book, text;
  int chapter;
};

std::vector<Doc> read_jsonl(const std::string& path) {
  std::vector<Doc> docs;
  std::istringstream in(test::read_bytes(path));
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
    std::vector<std::string> keys;
    for (const auto& item : j.items()) keys.push_back(item.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"text", "source", "book", "chapter"})) << line;
    docs.push_back({j["source"], j["book"], j["text"], j["chapter"]});
  }
  return docs;
}

// What one build wrote and reported; the checks below each look at one property of it.
struct Built {
  std::string dir;
  CorpusStats stats;
  std::map<std::string, std::vector<Doc>> docs;  // by split
};

void check_two_runs_write_identical_bytes(const Built& built) {
  for (const char* file : {"train.jsonl", "val.jsonl", "stats.json"})
    EXPECT_TRUE(test::read_bytes(built.dir + "/a/" + file) ==
                test::read_bytes(built.dir + "/b/" + file))
        << file;
}

void check_every_source_has_its_chapters(const Built& built) {
  std::map<std::string, std::set<std::pair<std::string, int>>> keys;
  for (const auto& [split, docs] : built.docs)
    for (const Doc& d : docs)
      EXPECT_TRUE(keys[d.source].emplace(d.book, d.chapter).second)
          << "twice: " << d.source << " " << d.book << " " << d.chapter;
  // KJV: every chapter of the KJV versification.
  std::set<std::pair<std::string, int>> kjv;
  for (const VersifiedBook& b : kjv_versification().books())
    for (int c = 1; c <= b.chapters(); ++c) kjv.emplace(b.name, c);
  EXPECT_EQ(kjv.size(), 1189u);
  EXPECT_EQ(keys["kjv"], kjv);
  // WEB: the same 1,189 chapters plus 180 of the deuterocanon: Tobit 14, Judith 16, Wisdom 19,
  // Sirach 51, Baruch 6, 1-4 Maccabees 16+15+7+18, Prayer of Manasseh 1, Psalm 151 1, 2 Esdras 16.
  std::set<std::pair<std::string, int>> web = kjv;
  const Versification& nrsva = versification_named("NRSVA", "test");
  for (const char* osis : {"Tob", "Jdt", "Wis", "Sir", "Bar", "1Macc", "2Macc", "PrMan", "AddPs",
                           "3Macc", "2Esd", "4Macc"}) {
    const VersifiedBook& b = *nrsva.find_book(osis);
    for (int c = 1; c <= b.chapters(); ++c) web.emplace(b.name, c);
  }
  EXPECT_EQ(web.size(), 1369u);
  EXPECT_EQ(keys["web"], web);
  // Treasury of David: the 150 psalms.
  std::set<std::pair<std::string, int>> psalms;
  for (int c = 1; c <= 150; ++c) psalms.emplace("Psalms", c);
  EXPECT_EQ(keys["tdavid"], psalms);
  EXPECT_EQ(built.stats.per_source.at("kjv")[kTrain].documents +
                built.stats.per_source.at("kjv")[kVal].documents,
            1189);
  EXPECT_EQ(built.stats.per_source.at("web")[kTrain].documents +
                built.stats.per_source.at("web")[kVal].documents,
            1369);
  EXPECT_EQ(built.stats.per_source.at("tdavid")[kTrain].documents +
                built.stats.per_source.at("tdavid")[kVal].documents,
            150);
}

void check_no_chapter_on_both_sides(const Built& built) {
  std::set<std::pair<std::string, int>> train, val;
  for (const Doc& d : built.docs.at("train")) train.emplace(d.book, d.chapter);
  for (const Doc& d : built.docs.at("val")) val.emplace(d.book, d.chapter);
  for (const auto& key : val) EXPECT_EQ(train.count(key), 0u) << key.first << " " << key.second;
  EXPECT_EQ(built.stats.keys_on_both_sides, 0);
  EXPECT_EQ(built.stats.chapter_keys[kVal], int64_t(val.size()));
  // 5% of 1,369 keys: binomial mean 68.5, standard deviation 8.1; three deviations either side.
  EXPECT_GE(val.size(), 44u);
  EXPECT_LE(val.size(), 93u);
  // A validation psalm is held out from all three sources.
  bool some_psalm_in_val = false;
  for (const Doc& d : built.docs.at("val")) some_psalm_in_val |= d.source == "tdavid";
  EXPECT_TRUE(some_psalm_in_val);
}

// '<' opening a tag ("<w", "</", "<!", "<?"), and '&' opening a character reference.
bool has_tag(std::string_view text) {
  for (size_t i = text.find('<'); i != std::string_view::npos; i = text.find('<', i + 1))
    if (i + 1 < text.size() && (std::isalpha((unsigned char)text[i + 1]) || text[i + 1] == '/' ||
                                text[i + 1] == '!' || text[i + 1] == '?'))
      return true;
  return false;
}
bool has_entity(std::string_view text) {
  for (size_t i = text.find('&'); i != std::string_view::npos; i = text.find('&', i + 1)) {
    size_t j = i + 1;
    if (j < text.size() && text[j] == '#') ++j;
    const size_t name = j;
    while (j < text.size() && std::isalnum((unsigned char)text[j])) ++j;
    if (j > name && j < text.size() && text[j] == ';') return true;
  }
  return false;
}

void check_no_markup_or_entities_left(const Built& built) {
  EXPECT_TRUE(has_tag("a <w lemma=\"x\">b"));  // the checks themselves can fail
  EXPECT_TRUE(has_entity("a &amp; b &#8212;"));
  EXPECT_FALSE(has_tag("1 < 2") || has_entity("AT&T, fish & chips"));
  for (const auto& [split, docs] : built.docs)
    for (const Doc& d : docs) {
      const std::string what = d.source + " " + d.book + " " + std::to_string(d.chapter);
      EXPECT_FALSE(has_tag(d.text)) << what;
      EXPECT_FALSE(has_entity(d.text)) << what;
      EXPECT_FALSE(d.text.empty()) << what;
      EXPECT_EQ(d.text.find("  "), std::string::npos) << what;
      EXPECT_EQ(d.text.find("\n\n"), std::string::npos) << what;
    }
}

void check_sizes_are_in_the_expected_range(const Built& built) {
  const auto bytes = [&](const char* source) {
    return built.stats.per_source.at(source)[kTrain].bytes +
           built.stats.per_source.at(source)[kVal].bytes;
  };
  // Measured when written: KJV 4.14 MB, WEB 4.77 MB, Treasury of David 11.78 MB.
  EXPECT_GT(bytes("kjv"), 4'000'000);
  EXPECT_LT(bytes("kjv"), 4'300'000);
  EXPECT_GT(bytes("web"), 4'500'000);
  EXPECT_LT(bytes("web"), 5'000'000);
  EXPECT_GT(bytes("tdavid"), 11'000'000);
  EXPECT_LT(bytes("tdavid"), 12'500'000);
  const int64_t total = built.stats.total[kTrain].bytes + built.stats.total[kVal].bytes;
  EXPECT_GT(total, 19'000'000);
  EXPECT_LT(total, 22'000'000);
}

void check_texts_read_as_the_sources_print_them(const Built& built) {
  std::map<std::tuple<std::string, std::string, int>, const Doc*> by_key;
  for (const auto& [split, docs] : built.docs)
    for (const Doc& d : docs) by_key[{d.source, d.book, d.chapter}] = &d;
  const auto text = [&](const char* source, const char* book, int chapter) {
    return by_key.at({source, book, chapter})->text;
  };
  const auto starts_with = [&](const char* source, const char* book, int chapter,
                               const std::string& prefix) {
    const std::string t = text(source, book, chapter);
    EXPECT_EQ(t.substr(0, prefix.size()), prefix) << source << " " << book << " " << chapter;
  };
  starts_with("kjv", "Genesis", 1, "In the beginning God created the heaven and the earth.\n");
  starts_with("web", "Genesis", 1, "In the beginning, God created the heavens and the earth.\n");
  starts_with("kjv", "Psalms", 23, "The LORD is my shepherd; I shall not want.\n");
  starts_with("web", "Psalms", 3, "A Psalm by David, when he fled from Absalom his son. Yahweh");
  starts_with("tdavid", "Psalms", 23, "Psalm 23 OVERVIEW\nThere is no inspired title");
  // 1,189 chapters of verses one a line: the KJV's 31,102 verses.
  int64_t kjv_lines = 0;
  for (const auto& [key, d] : by_key)
    if (d->source == "kjv") kjv_lines += 1 + std::count(d->text.begin(), d->text.end(), '\n');
  EXPECT_EQ(kjv_lines, 31102);
}

void check_the_data_pipeline_reads_the_files(const Built& built) {
  for (int split : {kTrain, kVal}) {
    const std::string name = split == kTrain ? "train" : "val";
    int64_t documents = 0, bytes = 0;
    for_each_document({built.dir + "/a/" + name + ".jsonl"},
                      [&](std::string_view text, const std::string&) {
                        ++documents;
                        bytes += int64_t(text.size());
                      });
    EXPECT_EQ(documents, built.stats.total[split].documents) << name;
    EXPECT_EQ(bytes, built.stats.total[split].bytes) << name;
  }
}

// The integration test runs the whole build twice (once for determinism), in one process: ctest
// runs each test case in a process of its own, and a build per case would multiply the time.
TEST(CorpusBuild, WholeCorpusFromTheInstalledPackages) {
  test::TempDir dir("build");
  Built built;
  built.dir = dir.path;
  CorpusOptions options;
  options.out_dir = dir.path + "/a";
  built.stats = build_corpus(options);
  options.out_dir = dir.path + "/b";
  build_corpus(options);
  for (const char* split : {"train", "val"})
    built.docs[split] = read_jsonl(dir.path + "/a/" + split + ".jsonl");
  check_two_runs_write_identical_bytes(built);
  check_every_source_has_its_chapters(built);
  check_no_chapter_on_both_sides(built);
  check_no_markup_or_entities_left(built);
  check_sizes_are_in_the_expected_range(built);
  check_texts_read_as_the_sources_print_them(built);
  check_the_data_pipeline_reads_the_files(built);
}

TEST(CorpusSources, WebChapterHeadingsSitWhereTheVersificationPutsThem) {
  // Every kept chapter's heading entry opens that chapter (<chapter osisID="Gen.1" .../>): the
  // NRSVA table and the reader place all of the module's 1,369 chapters where it stores them.
  const std::string sword_dir = SourcePaths{}.sword_dir;
  ZVerseModule web(find_sword_module(sword_dir, "engWEB2015eb", "sword-text-web"), sword_dir);
  ASSERT_EQ(web.versification().name(), "NRSVA");
  int checked = 0;
  for (const VersifiedBook& b : web.versification().books()) {
    if (is_retelling_left_out(b.osis_id) || b.osis_id == "PrAzar" || b.osis_id == "Sus" ||
        b.osis_id == "Bel")
      continue;
    for (int c = 1; c <= b.chapters(); ++c, ++checked) {
      const std::string marker = "osisID=\"" + b.osis_id + "." + std::to_string(c) + "\"";
      EXPECT_NE(std::string(web.entry(b, c, 0)).find(marker), std::string::npos)
          << b.name << " " << c;
    }
  }
  EXPECT_EQ(checked, 1369);
}

TEST(CorpusOptionsCheck, RejectsABadPercentBeforeReadingAnything) {
  CorpusOptions options;
  options.out_dir = "/nonexistent/out";
  options.val_percent = 101;
  try {
    build_corpus(options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--val-percent: expected a number in [0, 100], found 101");
  }
}

}  // namespace
}  // namespace gattn
