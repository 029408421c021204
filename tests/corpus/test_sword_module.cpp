// The zText/zCom reader on modules written by the test itself: reading back, links, Latin-1,
// and a clear error for every kind of damage (never a crash or silently wrong text).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "corpus/sources.h"
#include "corpus/sword_conf.h"
#include "corpus/zverse_module.h"
#include "sword_module_writer.h"
#include "util/error.h"

namespace gattn {
namespace {

using test::TempDir;

test::SyntheticModule small_bible() {
  test::SyntheticModule m;
  m.texts = {
      {{"Gen", 1, 0}, "<chapter osisID=\"Gen.1\" sID=\"Gen.1\"/><title>The Creation</title>"},
      {{"Gen", 1, 1},
       "<w lemma=\"strong:H0430\">In</w> the beginning, God<note placement=\"foot\">Elohim"
       "</note><w>created</w> the heavens &amp; the earth."},
      {{"Gen", 1, 2}, "The earth was formless."},
      {{"Ps", 23, 1},
       "<title canonical=\"true\" type=\"psalm\">A Psalm by David.</title> "
       "Yahweh is my shepherd:<lb/>I shall lack nothing."},
      {{"Matt", 1, 1}, "The book of the genealogy of Jesus Christ."},
      {{"Rev", 22, 21},
       "Amen. <div sID=\"g1\" type=\"glossary\"/>Abba: father.<div eID=\"g1\" "
       "type=\"glossary\"/>"},
  };
  return m;
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

ZVerseModule open(const std::string& sword_dir, const std::string& name = "TestBible") {
  return ZVerseModule(find_sword_module(sword_dir, name, "sword-test-package"), sword_dir);
}

TEST(SwordModule, ReadsBackEveryEntryOfASyntheticZText) {
  TempDir dir("zText");
  const test::SyntheticModule m = small_bible();
  test::write_module(dir.path, m);
  ZVerseModule module = open(dir.path, "testbible");  // SWORD matches names ignoring case
  EXPECT_EQ(module.name(), "TestBible");
  EXPECT_EQ(module.versification().name(), "KJV");
  EXPECT_EQ(module.markup(), Markup::osis);
  for (const auto& [key, text] : m.texts) {
    const auto& [osis, chapter, verse] = key;
    EXPECT_EQ(module.entry(*module.versification().find_book(osis), chapter, verse), text)
        << osis << " " << chapter << ":" << verse;
  }
  const VersifiedBook& genesis = *module.versification().find_book("Gen");
  EXPECT_EQ(module.entry(genesis, 1, 3), "");  // never written: empty
  EXPECT_EQ(module.entry(genesis, 50, 26), "");
}

TEST(SwordModule, ReadsZCom4WithLinkedEntriesAndEntriesBeyond64KiB) {
  TempDir dir("zCom4");
  test::SyntheticModule m;
  m.name = "TestCommentary";
  m.driver = "zCom4";
  const std::string long_text(70000, 'x');  // needs the 4-byte entry sizes of zCom4
  m.texts = {{{"Ps", 1, 1}, "On verses 1 and 2."}, {{"Ps", 2, 1}, long_text}};
  m.linked_to_previous = {{"Ps", 1, 2}};
  const test::WrittenModule written = test::write_module(dir.path, m);
  EXPECT_EQ(written.prefix, 'c');
  ZVerseModule module = open(dir.path, "TestCommentary");
  const VersifiedBook& psalms = *module.versification().find_book("Ps");
  EXPECT_EQ(module.entry(psalms, 1, 2), "On verses 1 and 2.");
  EXPECT_EQ(module.location(psalms, 1, 1), module.location(psalms, 1, 2));
  EXPECT_EQ(module.entry(psalms, 2, 1), long_text);
}

TEST(SwordModule, ReadsNrsvaAndConvertsLatin1) {
  TempDir dir("nrsva");
  test::SyntheticModule m = small_bible();
  m.versification = "NRSVA";
  m.texts = {{{"Sir", 1, 1}, "All wisdom comes from the Lord."},
             {{"3John", 1, 15}, "Peace be to you."},
             {{"Rev", 12, 18}, "Then I stood on the sand of the sea."},
             {{"Gen", 1, 1}, std::string("caf\xE9", 4)}};
  test::write_module(dir.path, m);
  std::string conf = test::read_bytes(dir.path + "/mods.d/TestBible.conf");
  conf.replace(conf.find("Encoding=UTF-8\n"), 15, "");  // SWORD's default encoding is Latin-1
  test::write_bytes(dir.path + "/mods.d/TestBible.conf", conf);
  ZVerseModule module = open(dir.path);
  const Versification& v = module.versification();
  EXPECT_EQ(v.name(), "NRSVA");
  EXPECT_EQ(module.entry(*v.find_book("Sir"), 1, 1), "All wisdom comes from the Lord.");
  EXPECT_EQ(module.entry(*v.find_book("3John"), 1, 15), "Peace be to you.");
  EXPECT_EQ(module.entry(*v.find_book("Rev"), 12, 18), "Then I stood on the sand of the sea.");
  EXPECT_EQ(module.entry(*v.find_book("Gen"), 1, 1), "caf\u00E9");
}

TEST(SwordModule, MissingModuleNamesTheDebianPackage) {
  TempDir dir("missing");
  EXPECT_EQ(error_of([&] { open(dir.path); }),
            "SWORD module TestBible is not installed (no conf naming [TestBible] in " + dir.path +
                "/mods.d): install the Debian package sword-test-package");
}

// Each case damages one file of a valid module, then expects an error naming that file and the
// entry or block.
struct Damage {
  const char* name;
  std::function<void(const test::WrittenModule&)> damage;
  const char* expected_error;  // a substring of the message
};

class DamagedModule : public ::testing::TestWithParam<Damage> {};

TEST_P(DamagedModule, FailsWithAClearError) {
  TempDir dir(std::string("damaged_") + GetParam().name);
  const test::WrittenModule written = test::write_module(dir.path, small_bible());
  GetParam().damage(written);
  const std::string error = error_of([&] {
    ZVerseModule module = open(dir.path);
    for (const VersifiedBook& book : module.versification().books())
      for (int c = 1; c <= book.chapters(); ++c)
        for (int v = 0; v <= book.verses_per_chapter[c - 1]; ++v) module.entry(book, c, v);
  });
  EXPECT_NE(error.find(GetParam().expected_error), std::string::npos) << error;
}

// Genesis 1:1 is entry 4 of ot.bzv (module heading, testament heading, Genesis introduction,
// Genesis 1 heading); small_bible() stores 3 entries a block, Genesis 1:0-2 in block 0.
constexpr size_t kGen11 = 4;

INSTANTIATE_TEST_SUITE_P(
    Corpus, DamagedModule,
    ::testing::Values(
        Damage{"truncated_entry_index",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zv"));
                 test::write_bytes(w.file("ot", "zv"), b.substr(0, b.size() - 3));
               },
               "ot.bzv: 241147 bytes is not a whole number of 10-byte entries (truncated?)"},
        Damage{"entry_index_one_entry_short",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zv"));
                 test::write_bytes(w.file("ot", "zv"), b.substr(0, b.size() - 10));
               },
               "ot.bzv: holds 24114 entries, but the KJV versification has 24115 for the old "
               "testament"},
        Damage{"truncated_block_index",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zs"));
                 test::write_bytes(w.file("ot", "zs"), b.substr(0, b.size() - 1));
               },
               "ot.bzs: 23 bytes is not a whole number of 12-byte block entries (truncated?)"},
        Damage{"truncated_data",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zz"));
                 test::write_bytes(w.file("ot", "zz"), b.substr(0, b.size() - 5));
               },
               "ot.bzs: block 1 spans bytes"},
        Damage{"block_offset_beyond_file",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zs"));
                 test::put_u32(b, 0, 1u << 30);
                 test::write_bytes(w.file("ot", "zs"), b);
               },
               "ot.bzs: block 0 spans bytes [1073741824, "},
        Damage{"implausible_decompressed_size",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zs"));
                 test::put_u32(b, 8, 0xFFFFFFF0u);
                 test::write_bytes(w.file("ot", "zs"), b);
               },
               "ot.bzs: block 0 claims 4294967280 decompressed bytes"},
        Damage{"entry_in_missing_block",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zv"));
                 test::put_u32(b, kGen11 * 10, 7);
                 test::write_bytes(w.file("ot", "zv"), b);
               },
               "ot.bzv: entry 4 (Genesis 1:1) is in block 7, but"},
        Damage{"entry_beyond_its_block",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zv"));
                 test::put_u32(b, kGen11 * 10 + 4, 5000);
                 test::write_bytes(w.file("ot", "zv"), b);
               },
               "ot.bzv: entry 4 (Genesis 1:1) spans bytes [5000, "},
        Damage{"corrupt_zlib_stream",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zz"));
                 for (size_t i = 2; i < 12; ++i) b[i] = char(0xFF);
                 test::write_bytes(w.file("ot", "zz"), b);
               },
               "ot.bzz: block 0 (bytes [0, "},
        Damage{"decompressed_size_disagrees",
               [](const test::WrittenModule& w) {
                 std::string b = test::read_bytes(w.file("ot", "zs"));
                 test::put_u32(b, 8, test::get_u32(b, 8) + 1);
                 test::write_bytes(w.file("ot", "zs"), b);
               },
               "decompresses to"},
        Damage{"data_file_missing",
               [](const test::WrittenModule& w) { std::filesystem::remove(w.file("nt", "zz")); },
               "nt.bzz: missing (module TestBible is incomplete; reinstall it)"},
        Damage{"unsupported_driver",
               [](const test::WrittenModule& w) {
                 std::string conf = test::read_bytes(w.conf_path);
                 conf.replace(conf.find("zText"), 5, "RawText");
                 test::write_bytes(w.conf_path, conf);
               },
               "ModDrv=RawText is not supported (expected zText, zText4, zCom or zCom4)"},
        Damage{"unsupported_versification",
               [](const test::WrittenModule& w) {
                 std::string conf = test::read_bytes(w.conf_path);
                 conf.replace(conf.find("=KJV"), 4, "=Synodal");
                 test::write_bytes(w.conf_path, conf);
               },
               "Versification=Synodal is not supported (expected KJV or NRSVA)"},
        Damage{"unsupported_compression",
               [](const test::WrittenModule& w) {
                 std::string conf = test::read_bytes(w.conf_path);
                 conf.replace(conf.find("=ZIP"), 4, "=LZSS");
                 test::write_bytes(w.conf_path, conf);
               },
               "CompressType=LZSS is not supported (expected ZIP)"},
        Damage{"enciphered",
               [](const test::WrittenModule& w) {
                 test::write_bytes(w.conf_path, test::read_bytes(w.conf_path) + "CipherKey=x\n");
               },
               "the module is enciphered"},
        Damage{"conf_line_without_equals",
               [](const test::WrittenModule& w) {
                 test::write_bytes(w.conf_path, test::read_bytes(w.conf_path) + "Garbage\n");
               },
               "TestBible.conf:8: expected Key=Value, found 'Garbage'"}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(SwordModule, CorruptBlockErrorNamesTheVerseThatNeededIt) {
  TempDir dir("corrupt_names_verse");
  const test::WrittenModule w = test::write_module(dir.path, small_bible());
  std::string b = test::read_bytes(w.file("ot", "zz"));
  for (size_t i = 2; i < 12; ++i) b[i] = char(0xFF);
  test::write_bytes(w.file("ot", "zz"), b);
  ZVerseModule module = open(dir.path);
  const std::string error =
      error_of([&] { module.entry(*module.versification().find_book("Gen"), 1, 1); });
  EXPECT_NE(error.find("needed by TestBible Genesis 1:1) does not decompress: zlib error"),
            std::string::npos)
      << error;
}

TEST(SwordModule, RandomDamageGivesAnErrorOrText) {
  // Truncations and byte flips anywhere in the three files: every outcome must be text or a
  // gattn::Error (run under ASan/UBSan, a crash or overread fails the suite).
  TempDir dir("random_damage");
  test::SyntheticModule m = small_bible();
  m.entries_per_block = 2;
  const test::WrittenModule w = test::write_module(dir.path, m);
  const std::vector<std::string> files = {w.file("ot", "zs"), w.file("ot", "zv"),
                                          w.file("ot", "zz")};
  std::vector<std::string> pristine;
  for (const std::string& f : files) pristine.push_back(test::read_bytes(f));
  std::mt19937_64 rng(1);
  int errors = 0;
  for (int trial = 0; trial < 90; ++trial) {
    const size_t which = rng() % files.size();
    std::string bytes = pristine[which];
    if (trial % 3 == 0) {
      bytes.resize(rng() % bytes.size());
    } else {
      // Flip bytes near the start, where the blocks and the headings' entries are.
      const size_t span = std::min<size_t>(bytes.size(), 64);
      for (int flips = 1 + int(rng() % 4); flips > 0; --flips)
        bytes[rng() % span] ^= char(1 + rng() % 255);
    }
    test::write_bytes(files[which], bytes);
    try {
      // Opening checks every index entry; reading the written ones decompresses every block.
      ZVerseModule module = open(dir.path);
      for (const auto& [key, text] : m.texts) {
        const auto& [osis, chapter, verse] = key;
        module.entry(*module.versification().find_book(osis), chapter, verse);
      }
    } catch (const Error&) {
      ++errors;
    }
    test::write_bytes(files[which], pristine[which]);
  }
  EXPECT_GT(errors, 30);  // most damage is detected; the rest only changes text
}

// The source readers on synthetic modules with the installed modules' names.
TEST(SwordSources, WebDocumentsAreChaptersOfPlainVerses) {
  TempDir dir("web_source");
  test::SyntheticModule m = small_bible();
  m.name = "engWEB2015eb";
  test::write_module(dir.path, m);
  SourcePaths paths;
  paths.sword_dir = dir.path;
  const std::vector<Document> docs = web_documents(paths);
  ASSERT_EQ(docs.size(), 4u);  // the chapters with text
  EXPECT_EQ(docs[0].source, "web");
  EXPECT_EQ(docs[0].book, "Genesis");
  EXPECT_EQ(docs[0].chapter, 1);
  EXPECT_EQ(docs[0].text,
            "In the beginning, God created the heavens & the earth.\nThe earth was formless.");
  EXPECT_EQ(docs[1].book, "Psalms");
  EXPECT_EQ(docs[1].text, "A Psalm by David. Yahweh is my shepherd: I shall lack nothing.");
  EXPECT_EQ(docs[2].book, "Matthew");
  EXPECT_EQ(docs[3].book, "Revelation");
  EXPECT_EQ(docs[3].text, "Amen.");  // the glossary stored with the last verse is dropped
}

TEST(SwordSources, TreasuryOfDavidIsOneDocumentPerPsalmWithLinksReadOnce) {
  TempDir dir("tdavid_source");
  test::SyntheticModule m;
  m.name = "TDavid";
  m.driver = "zCom4";
  m.entries_per_block = 1000;
  for (int psalm = 1; psalm <= 150; ++psalm)
    m.texts[{"Ps", psalm, 1}] = "<title type=\"x-s\">EXPOSITION</title> On Psalm " +
                                std::to_string(psalm) + ".<div type=\"x-p\"/>Amen.";
  m.linked_to_previous = {{"Ps", 1, 2}, {"Ps", 1, 3}};
  test::write_module(dir.path, m);
  SourcePaths paths;
  paths.sword_dir = dir.path;
  const std::vector<Document> docs = tdavid_documents(paths);
  ASSERT_EQ(docs.size(), 150u);
  EXPECT_EQ(docs[0].source, "tdavid");
  EXPECT_EQ(docs[0].book, "Psalms");
  EXPECT_EQ(docs[0].text, "EXPOSITION\nOn Psalm 1.\nAmen.");  // linked verses 2-3 not repeated
  EXPECT_EQ(docs[149].chapter, 150);
}

}  // namespace
}  // namespace gattn
