// Generation with the KV cache: greedy tokens equal the argmax of full forward passes over the
// growing sequence, stop strings cut the text (and the stream) before them, the context is
// checked, the ChatML template needs its tokens, and non-finite logits end a continuation with
// an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "infer/chat_template.h"
#include "infer/generate.h"
#include "model/train_state.h"
#include "util/error.h"

namespace gattn {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer t =
      Tokenizer::load(std::string(GATTN_FIXTURE_DIR) + "/tokenizer/gattn_trained.json");
  return t;
}

Config tiny(GatePosition gate) {
  Config c;
  c.vocab_size = tokenizer().vocab_size();
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 12;
  c.intermediate_size = 48;
  c.max_position_embeddings = 96;
  c.initializer_range = 0.3;  // peaked logits: no near-ties between the top two
  c.gate.position = gate;
  return c;
}

TEST(Generate, GreedyEqualsTheArgmaxOfFullForwardPasses) {
  for (GatePosition gate : {GatePosition::none, GatePosition::sdpa, GatePosition::value}) {
    Weights w(tiny(gate));
    w.init(21);
    const std::vector<uint32_t> prompt = tokenizer().encode("In the beginning God created");
    GenerateOptions o{.max_tokens = 12, .sampling = {.temperature = 0}, .prefill_chunk = 3};
    const GenerateResult r = generate(w, tokenizer(), prompt, o);
    ASSERT_EQ(r.tokens.size(), 12u);
    EXPECT_EQ(r.finish_reason, "length");
    std::vector<int32_t> ids(prompt.begin(), prompt.end());
    TrainState full(w);
    const int V = w.config().vocab_size;
    for (uint32_t generated : r.tokens) {
      std::vector<float> logits(ids.size() * V);
      full.forward({ids.data(), nullptr, 1, int(ids.size())}, logits.data());
      const float* last = logits.data() + (ids.size() - 1) * V;
      EXPECT_EQ(generated, uint32_t(std::max_element(last, last + V) - last));
      ids.push_back(int32_t(generated));
    }
    EXPECT_EQ(r.text, tokenizer().decode(std::span(r.tokens)));
  }
}

TEST(Generate, StopsBeforeAStopStringAndStreamsTheSameText) {
  Weights w(tiny(GatePosition::sdpa));
  w.init(22);
  const std::vector<uint32_t> prompt = tokenizer().encode("Blessed is the man");
  GenerateOptions o{.max_tokens = 20, .sampling = {.temperature = 0}};
  const std::string free_text = generate(w, tokenizer(), prompt, o).text;
  ASSERT_GT(free_text.size(), 8u);
  const std::string stop = free_text.substr(free_text.size() / 2, 3);
  o.stop = {stop};
  std::string streamed;
  const GenerateResult r =
      generate(w, tokenizer(), prompt, o, [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.text, free_text.substr(0, free_text.find(stop)));
  EXPECT_EQ(streamed, r.text);
}

TEST(Generate, RejectsAPromptBeyondTheContext) {
  Weights w(tiny(GatePosition::none));
  const std::vector<uint32_t> prompt(90, 5);
  EXPECT_THROW(generate(w, tokenizer(), prompt, {.max_tokens = 7}), Error);
  EXPECT_THROW(generate(w, tokenizer(), {}, {.max_tokens = 1}), Error);
  EXPECT_NO_THROW(generate(w, tokenizer(), prompt, {.max_tokens = 6}));
}

// Non-finite logits at one step: an Error naming the position (prompt and generated tokens
// before it); the text so far stays what it was.
TEST(Continuation, NonFiniteLogitsEndGenerationWithAnError) {
  const std::vector<uint32_t> prompt = tokenizer().encode("In the beginning");
  Continuation c(tokenizer(), prompt, {.max_tokens = 10, .sampling = {.temperature = 0.7}});
  std::vector<float> logits(tokenizer().vocab_size(), 0.0f);
  logits[100] = 5;
  ASSERT_TRUE(c.next(logits));
  const std::string text = c.text();
  logits[7] = std::nanf("");
  try {
    c.next(logits);
    ADD_FAILURE() << "NaN logits gave token " << c.last();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logits for the token at position " +
                                         std::to_string(prompt.size() + 1) +
                                         " are not finite (nan for token id 7"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.text(), text);
  EXPECT_EQ(c.tokens().size(), 1u);
}

TEST(Generate, ChatTemplateNeedsChatmlTokens) {
  EXPECT_THROW(chatml_prompt_ids(tokenizer(), "hello"), Error);
}

}  // namespace
}  // namespace gattn
