// Encoding and decoding: HF's ids on small tokenizers built to exercise merge order, repeated
// pairs, two pairs making one token, added tokens (leftmost-longest; raw or normalised), NFC and
// ignore_merges; exact round trips of any bytes; every single token decodes; threads agree.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "io/file.h"
#include "sample.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace gattn {
namespace {

using testing::fixture_path;

const Tokenizer& gattn_trained() {
  static const Tokenizer t = Tokenizer::load(fixture_path("gattn_trained.json"));
  return t;
}

std::vector<uint32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<uint32_t>>(); }

TEST(Encode, SmallTokenizersGiveHfIds) {
  const nlohmann::json expected =
      nlohmann::json::parse(read_text_file(fixture_path("expected.json"))).at("tiny");
  ASSERT_EQ(expected.size(), 2u);
  for (const auto& [file, cases] : expected.items()) {
    const Tokenizer tok = Tokenizer::load(fixture_path(file));
    for (const auto& c : cases) {
      const std::string text = c.at("text");
      EXPECT_EQ(tok.encode(text), ids_of(c.at("ids"))) << file << ": \"" << text << "\"";
    }
  }
}

TEST(Encode, LiteralEndOfTextInTextIsTheSpecialToken) {
  const Tokenizer& tok = gattn_trained();
  const uint32_t eot = tok.end_of_text_id();
  EXPECT_EQ(eot, 0u);
  EXPECT_EQ(tok.encode("<|endoftext|>"), std::vector<uint32_t>{eot});
  const auto ids = tok.encode("one<|endoftext|>two");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), eot), 1);
  EXPECT_EQ(tok.decode(ids), "one<|endoftext|>two");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), eot), 1);
  const auto partial = tok.encode("<|endoftext|");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), eot), 0);
}

TEST(Encode, EmptyTextHasNoIds) { EXPECT_TRUE(gattn_trained().encode("").empty()); }

std::string random_bytes(std::mt19937_64& rng) {
  static const std::vector<std::string> atoms = {
      "the",      " of",       "'s",   "\n",     "  ",       "\t",
      "é",        "e\xCC\x81", "世界", "Привет", "🙂",     "<|endoftext|>",
      "<|endof",  "123",       "\xFF", "\xC3",   "\xE4\xB8", "\xED\xA0\x80",
      "\xF0\x9F", "\x80\x80",  "\0",   "\u3000", "\u00a0",   "\u180e",
      "\r\n"};
  std::string text;
  const int n = int(rng() % 60);
  for (int i = 0; i < n; ++i)
    text += rng() % 3 == 0 ? std::string(1, char(rng())) : atoms[rng() % atoms.size()];
  return text;
}

TEST(Encode, AnyBytesRoundTripExactlyInvalidUtf8Included) {
  std::mt19937_64 rng(11);
  const Tokenizer& tok = gattn_trained();
  for (int round = 0; round < 3000; ++round) {
    const std::string text = random_bytes(rng);
    ASSERT_EQ(tok.decode(tok.encode(text)), text) << "round " << round;
  }
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += char(b);
  EXPECT_EQ(tok.decode(tok.encode(every_byte)), every_byte);
}

TEST(Encode, InvalidBytesKeepTheirOwnPiecesAndValidTextAroundThemIsUnchanged) {
  const Tokenizer& tok = gattn_trained();
  const auto plain = tok.encode(" hello");
  auto with_bad = tok.encode("\xFF hello");
  ASSERT_GE(with_bad.size(), plain.size() + 1);
  EXPECT_EQ(std::vector<uint32_t>(with_bad.end() - long(plain.size()), with_bad.end()), plain);
}

TEST(Encode, NfcTokenizerNormalisesValidTextAndKeepsInvalidBytes) {
  const Tokenizer tok = Tokenizer::load(fixture_path("hf_trained.json"));
  EXPECT_EQ(tok.encode("caf\x65\xCC\x81"), tok.encode("caf\xC3\xA9"));  // e + U+0301 == é
  EXPECT_EQ(tok.decode(tok.encode("caf\x65\xCC\x81")), "caf\xC3\xA9");
  // The invalid byte blocks composition: e, U+0301 stay apart, and the byte survives.
  EXPECT_EQ(tok.decode(tok.encode("e\xFF\xCC\x81")), "e\xFF\xCC\x81");
  // A mark newer than Unicode 9.0 (U+1DF6) is not reordered, as HF's NFC does not know it.
  EXPECT_EQ(tok.decode(tok.encode("a\u1df6\u0316")), "a\u1df6\u0316");
  // An older mark is: U+0316 (class 220) moves before U+0301 (230), which then composes into á.
  EXPECT_EQ(tok.decode(tok.encode("a\u0301\u0316")), "\u00e1\u0316");
}

// Text from users (chat messages) is encoded with added tokens as text: no added token's id comes
// out, whether raw, normalised, special or not, and text without them is encoded as before.
TEST(Encode, AddedTokensAsTextNeverBecomeTheirIds) {
  const Tokenizer tok = Tokenizer::load(fixture_path("tiny_nfc.json"));
  const auto is_added = [](uint32_t id) { return id >= 268; };  // 268..272: the added tokens
  const std::string text =
      "a<|endoftext|>b<x><y>c e\xCC\x81"
      "a bcd<x";
  const auto matched = tok.encode(text);
  const auto as_text = tok.encode(text, Tokenizer::AddedTokens::as_text);
  EXPECT_EQ(std::count_if(matched.begin(), matched.end(), is_added), 4);
  EXPECT_TRUE(std::none_of(as_text.begin(), as_text.end(), is_added));
  EXPECT_EQ(tok.decode(as_text), tok.decode(matched));  // the same NFC text
  for (const char* plain : {"abc aaaa ca", "cabc\n\n  \xC3\xA9 a", ""})
    EXPECT_EQ(tok.encode(plain, Tokenizer::AddedTokens::as_text), tok.encode(plain)) << plain;
  std::mt19937_64 rng(12);
  const Tokenizer& trained = gattn_trained();
  for (int round = 0; round < 1000; ++round) {
    const std::string bytes = random_bytes(rng);
    const auto ids = trained.encode(bytes, Tokenizer::AddedTokens::as_text);
    ASSERT_EQ(trained.decode(ids), bytes) << "round " << round;
    ASSERT_EQ(std::count(ids.begin(), ids.end(), trained.end_of_text_id()), 0) << bytes;
  }
}

// GPT-2's table written out independently of src/tokenizer/byte_level.cpp.
std::string bytes_of_token(const std::string& token) {
  std::vector<int> byte_of(512, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    byte_of[printable ? b : next++] = b;
  }
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const auto c0 = static_cast<uint8_t>(token[i]);
    uint32_t cp = c0;
    size_t n = 1;
    if (c0 >= 0xC0) {  // the table's characters are all below U+0800: one or two bytes
      cp = ((c0 & 0x1Fu) << 6) | (static_cast<uint8_t>(token[i + 1]) & 0x3Fu);
      n = 2;
    }
    EXPECT_LT(cp, 512u) << token;
    out += char(byte_of[cp]);
    i += n;
  }
  return out;
}

TEST(Decode, EverySingleTokenDecodesToItsBytesAndHfAgreesOnTheUtf8Ones) {
  const testing::Sample& s = testing::sample();
  for (const std::string file : {"gattn_trained.json", "hf_trained.json", "hf_gpt2_style.json"}) {
    const Tokenizer tok = Tokenizer::load(fixture_path(file));
    const auto& want = s.expected.at("tokenizers").at(file).at("single_tokens");
    uint64_t hash = 0xCBF29CE484222325ull;
    int utf8_tokens = 0, other = 0;
    for (uint32_t id = 0; id < uint32_t(tok.vocab_size()); ++id) {
      const std::string token = *tok.id_to_token(id);
      const std::string bytes = tok.decode(std::vector<uint32_t>{id});
      if (token != kEndOfText) {
        ASSERT_EQ(bytes, bytes_of_token(token)) << file << " id " << id;
      }
      if (!utf8::is_valid(bytes)) {
        ++other;
        continue;
      }
      const uint32_t length = uint32_t(bytes.size());
      const char head[8] = {char(id),           char(id >> 8),     char(id >> 16),
                            char(id >> 24),     char(length),      char(length >> 8),
                            char(length >> 16), char(length >> 24)};
      hash = testing::fnv1a64(bytes, testing::fnv1a64(std::string_view(head, 8), hash));
      ++utf8_tokens;
    }
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
    EXPECT_EQ(hex, want.at("fnv1a64").get<std::string>()) << file;
    EXPECT_EQ(utf8_tokens, want.at("utf8_tokens").get<int>()) << file;
    EXPECT_EQ(other, want.at("other_tokens").get<int>()) << file;
  }
}

TEST(Encode, LoadedFilesSaveAndLoadBackToTheSameIds) {
  const std::string text = read_text_file(fixture_path("edge_cases.txt"));
  for (const std::string file :
       {"gattn_trained.json", "hf_trained.json", "hf_gpt2_style.json", "tiny_nfc.json"}) {
    const Tokenizer tok = Tokenizer::load(fixture_path(file));
    const std::string copy = ::testing::TempDir() + "gattn_resaved_" + file;
    tok.save(copy);
    const Tokenizer back = Tokenizer::load(copy);
    EXPECT_EQ(back.encode(text), tok.encode(text)) << file;
    EXPECT_EQ(back.merges(), tok.merges()) << file;
    EXPECT_EQ(back.vocab_size(), tok.vocab_size()) << file;
    std::remove(copy.c_str());
  }
}

TEST(Decode, AnIdOutsideTheVocabularyIsAnError) {
  const Tokenizer& tok = gattn_trained();
  const std::vector<uint32_t> ids = {5, uint32_t(tok.vocab_size())};
  try {
    tok.decode(ids);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gattn_trained.json: cannot decode id 8192 (position 1): "
                                         "not in the vocabulary (8192 ids)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Encode, BatchThreadsAndCachesAgreeWithOneCallAtATime) {
  std::mt19937_64 rng(3);
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) texts.push_back(random_bytes(rng) + " the same words again");
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  const Tokenizer& a = gattn_trained();
  const Tokenizer b = Tokenizer::load(fixture_path("hf_trained.json"));
  std::vector<std::vector<uint32_t>> want_a, want_b;
  for (const std::string& t : texts) want_a.push_back(a.encode(t));
  for (const std::string& t : texts) want_b.push_back(b.encode(t));
  EXPECT_EQ(a.encode_batch(views), want_a);
  EXPECT_EQ(b.encode_batch(views), want_b);
  // Threads that alternate between two tokenizers: each thread's word cache must never mix them.
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const bool use_a = (i + size_t(t)) % 2 == 0;
        if ((use_a ? a : b).encode(texts[i]) != (use_a ? want_a : want_b)[i]) ++wrong;
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace gattn
