// Identical ids to Hugging Face `tokenizers` on a 7.6 MB multilingual sample (English, Japanese,
// Chinese, Russian, Ukrainian, Greek, Polish, French, German, Spanish, Arabic, Unicode's
// NormalizationTest.txt and emoji-test.txt, and hand-written edge cases), for a tokenizer that
// gattn trained (no normaliser), one that HF trained as Qwen2 (NFC + Qwen2 regex) and one HF
// trained as GPT-2 (ByteLevel's own regex): every chunk's ids, some id by id.
#include <gtest/gtest.h>

#include "sample.h"
#include "tokenizer/tokenizer.h"

namespace gattn {
namespace {

using testing::sample;

std::string excerpt(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 160))
    out += (c == '\n' ? std::string("\\n") : std::string(1, c));
  return out;
}

class HfEquality : public ::testing::TestWithParam<std::string> {
 protected:
  const nlohmann::json& expected() const {
    return sample().expected.at("tokenizers").at(GetParam());
  }
  Tokenizer tokenizer() const { return Tokenizer::load(testing::fixture_path(GetParam())); }
};

TEST_P(HfEquality, EveryChunkOfTheSampleGetsHfIds) {
  const testing::Sample& s = sample();
  ASSERT_FALSE(s.chunks.empty());
  const Tokenizer tok = tokenizer();
  std::vector<std::string_view> texts;
  for (const auto& c : s.chunks) texts.push_back(s.text(c));
  const auto ids = tok.encode_batch(texts);
  const auto& want = expected().at("chunk_ids");
  ASSERT_EQ(want.size(), ids.size());
  size_t mismatches = 0, compared = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    compared += ids[i].size();
    if (ids[i].size() == want[i][0].get<size_t>() && testing::ids_hash(ids[i]) == want[i][1])
      continue;
    if (++mismatches <= 5)
      ADD_FAILURE() << GetParam() << ": chunk " << i << " of " << s.names[s.chunks[i].document]
                    << " (offset " << s.chunks[i].offset << ", " << s.chunks[i].length
                    << " bytes): " << ids[i].size() << " ids, HF " << want[i][0]
                    << "; text: " << excerpt(texts[i]);
  }
  EXPECT_EQ(mismatches, 0u) << "chunks whose ids differ from HF's";
  EXPECT_EQ(compared, expected().at("total_ids").get<size_t>());
  std::printf("%s: %zu ids in %zu chunks (%zu bytes, %zu documents) identical to HF\n",
              GetParam().c_str(), compared, ids.size(), s.bytes(), s.documents.size());
}

TEST_P(HfEquality, StretchesMatchHfIdByIdWithOneCallEach) {
  const testing::Sample& s = sample();
  const Tokenizer tok = tokenizer();
  for (const auto& span : expected().at("full")) {
    const testing::Sample::Chunk c{span.at("document"), span.at("offset"), span.at("length")};
    const std::vector<uint32_t> want = span.at("ids");
    EXPECT_EQ(tok.encode(s.text(c)), want) << GetParam() << ": " << s.names[c.document];
  }
}

TEST_P(HfEquality, VocabSizeMatchesHf) {
  EXPECT_EQ(tokenizer().vocab_size(), expected().at("vocab_size").get<int>());
}

// Names the cases after the files: gattn_trained, hf_trained.
std::string file_stem(const ::testing::TestParamInfo<std::string>& param) {
  return param.param.substr(0, param.param.find('.'));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfEquality,
                         ::testing::Values("gattn_trained.json", "hf_trained.json",
                                           "hf_gpt2_style.json"),
                         file_stem);

}  // namespace
}  // namespace gattn
