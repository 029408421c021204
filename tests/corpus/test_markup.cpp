// Markup to plain text: what is kept, what is dropped, where spaces and newlines go.
#include <gtest/gtest.h>

#include <random>

#include "corpus/markup.h"
#include "util/error.h"

namespace gattn {
namespace {

std::string scripture(std::string_view s, Markup m = Markup::osis) {
  return plain_text(s, m, TextKind::scripture, "test");
}
std::string commentary(std::string_view s, Markup m = Markup::osis) {
  return plain_text(s, m, TextKind::commentary, "test");
}

TEST(Markup, OsisKeepsWordsDropsNotesAndStrongs) {
  // As the World English Bible stores Genesis 1:1: the note stands between two words.
  EXPECT_EQ(scripture("<w lemma=\"strong:H0430\">In</w> <w lemma=\"strong:H0853\">the</w> "
                      "beginning, God<note placement=\"foot\"><reference type=\"annotateRef\">1:1 "
                      "</reference>The Hebrew word rendered \xE2\x80\x9CGod\xE2\x80\x9D is "
                      "\xE2\x80\x9C\xD7\x90\xD7\x9C\xE2\x80\x9D (Elohim).</note><w "
                      "lemma=\"strong:H1254\">created</w> the heavens."),
            "In the beginning, God created the heavens.");
}

TEST(Markup, DroppedNoteLeavesASpaceOnlyBetweenWords) {
  EXPECT_EQ(scripture("She conceived,<note>n</note>and gave birth"),
            "She conceived, and gave birth");
  EXPECT_EQ(scripture("\xE2\x80\x9CTo descendants<note>n</note>\xE2\x80\x9D, as of many"),
            "\xE2\x80\x9CTo descendants\xE2\x80\x9D, as of many");
  EXPECT_EQ(scripture("Isaac.<note>n</note>"), "Isaac.");
  EXPECT_EQ(scripture("said,<note>n</note>\xE2\x80\x9C"
                      "A forest"),
            "said, \xE2\x80\x9C"
            "A forest");
  EXPECT_EQ(scripture("(<note>n</note>Selah)"), "(Selah)");
  EXPECT_EQ(scripture("Bethsphage,<note>n</note> to the Mount"), "Bethsphage, to the Mount");
}

TEST(Markup, ScriptureKeepsCanonicalTitlesDropsEditorialOnesAndSpeakers) {
  EXPECT_EQ(scripture("<title canonical=\"true\" type=\"psalm\">A Psalm by David.</title> <lg "
                      "sID=\"a\"/><l sID=\"b\"/>Yahweh, how my adversaries have increased!<l "
                      "eID=\"b\"/><l sID=\"c\"/>Many are those<l eID=\"c\"/>"),
            "A Psalm by David. Yahweh, how my adversaries have increased! Many are those");
  EXPECT_EQ(
      scripture("<chapter sID=\"Ps.1\"/> <title>BOOK 1</title> <title type=\"main\">x</title>"),
      "");
  EXPECT_EQ(scripture("<speaker>Beloved</speaker> <l sID=\"x\"/>Let him kiss me"),
            "Let him kiss me");
}

TEST(Markup, CommentaryKeepsHeadingsAsLinesAndBreaksAsNewlines) {
  EXPECT_EQ(commentary("<title type=\"x-s\">Psalm 1 OVERVIEW</title> <div sID=\"a\" "
                       "type=\"x-p\"/> <hi type=\"italic\">This Psalm</hi> is the "
                       "<reference osisRef=\"Ps.1\">preface</reference>. <div eID=\"a\" "
                       "type=\"x-p\"/><lg sID=\"g\"/><l sID=\"l1\"/>He walketh not<l "
                       "eID=\"l1\"/> <l sID=\"l2\"/>Nor standeth<l eID=\"l2\"/>"),
            "Psalm 1 OVERVIEW\nThis Psalm is the preface.\nHe walketh not\nNor standeth");
}

TEST(Markup, FrontAndBackMatterIsDroppedInBothForms) {
  // Milestone form, as the last verse of Revelation carries the WEB's glossary.
  EXPECT_EQ(scripture("Amen. <div canonical=\"true\" eID=\"b\" osisID=\"Rev\" type=\"book\"/> "
                      "<div sID=\"g\" type=\"glossary\"/><title>Glossary</title> <div sID=\"i\" "
                      "type=\"introduction\"/>Abba: father.<div eID=\"i\" type=\"introduction\"/>"
                      "<div eID=\"g\" type=\"glossary\"/>"),
            "Amen.");
  EXPECT_EQ(scripture("<div type=\"introduction\">About this book.</div>Text."), "Text.");
}

TEST(Markup, DecodesCharacterReferences) {
  EXPECT_EQ(scripture("TR &amp;NU &lt;x&gt; &#8212; &#x2019; &quot;q&quot; a&nbsp;b"),
            "TR &NU <x> \u2014 \u2019 \"q\" a b");
  EXPECT_EQ(scripture("fish & chips; AT&T"), "fish & chips; AT&T");  // not references
}

TEST(Markup, MalformedInputFailsNamingWhere) {
  const auto error = [](std::string_view s) {
    try {
      plain_text(s, Markup::osis, TextKind::scripture, "Mod Genesis 1:1");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("a &bogus; b"), "Mod Genesis 1:1: unknown character entity &bogus;");
  EXPECT_EQ(error("a &#xD800; b"),
            "Mod Genesis 1:1: character reference &#xD800; is not a "
            "Unicode character");
  EXPECT_EQ(error("a <w lemma=\"x\""),
            "Mod Genesis 1:1: unterminated tag starting '<w lemma=\"x\"'");
}

TEST(Markup, WhitespaceCollapsesAndEdgesAreTrimmed) {
  EXPECT_EQ(scripture("  a \t\n b  <lb/>  c  "), "a b c");
  EXPECT_EQ(commentary("  a \t b  <lb/> <lb/> c  "), "a b\nc");
}

TEST(Markup, ThmlDropsNotesAndSyncKeepsScripRefText) {
  EXPECT_EQ(scripture("<div class=\"sechead\">The Word</div>In the beginning<sync type=\"Strongs\" "
                      "value=\"G746\"/> was the Word<note>or: reason</note>.<br/>See <scripRef "
                      "passage=\"Gen 1:1\">Gen 1:1</scripRef>.",
                      Markup::thml),
            "In the beginning was the Word. See Gen 1:1.");
  EXPECT_EQ(commentary("<h3>Verse 1</h3><p>First.</p><p>Second.</p>", Markup::thml),
            "Verse 1\nFirst.\nSecond.");
}

TEST(Markup, GbfDropsFootnotesAndStrongsNumbers) {
  EXPECT_EQ(scripture("<TS>The Creation<Ts>In the beginning<WH7225> God<WH430><RF>Elohim<Rf> "
                      "created<WH1254> <FI>the<Fi> heaven.<CM>And",
                      Markup::gbf),
            "In the beginning God created the heaven. And");
  EXPECT_EQ(commentary("<TS>Title<Ts>One.<CM>Two.", Markup::gbf), "Title\nOne.\nTwo.");
}

TEST(Markup, RandomInputGivesTextOrAnError) {
  // Random strings over markup's special characters: text or a gattn::Error, never a crash.
  const std::string alphabet = "<>/&#;=\"' \nxa1tileoRFT";
  std::mt19937_64 rng(7);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s(rng() % 40, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    for (Markup m : {Markup::osis, Markup::thml, Markup::gbf, Markup::plain}) {
      for (TextKind k : {TextKind::scripture, TextKind::commentary}) {
        try {
          plain_text(s, m, k, "random");
        } catch (const Error&) {
          ++errors;
        }
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(Markup, SourceTypeNames) {
  EXPECT_EQ(markup_named("OSIS", "x.conf"), Markup::osis);
  EXPECT_EQ(markup_named("ThML", "x.conf"), Markup::thml);
  EXPECT_EQ(markup_named("GBF", "x.conf"), Markup::gbf);
  EXPECT_EQ(markup_named("", "x.conf"), Markup::plain);
  EXPECT_THROW(markup_named("TEI", "x.conf"), Error);
}

}  // namespace
}  // namespace gattn
