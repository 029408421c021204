// Generation with the KV cache: greedy tokens equal the argmax of full forward passes over the
// growing sequence, stop strings cut the text (and the stream) before them, the context is
// checked, and the ChatML template needs its tokens. A continuation's text grows by each token's
// bytes (equal to decoding the whole completion every step, as it once did), and non-finite
// logits end it with an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "infer/chat_format.h"
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

// The continuation's tokens are `tokens`, each sampled greedily from logits that pick it.
struct Driven {
  std::vector<uint32_t> tokens = {};
  std::string text = {}, finish_reason = {}, streamed = {};
  int64_t decoded = 0;
};
Driven drive(const std::vector<uint32_t>& tokens, const std::vector<std::string>& stop) {
  Driven d;
  const std::vector<uint32_t> prompt = {5, 6};
  Continuation c(tokenizer(), prompt,
                 {.max_tokens = int(tokens.size()), .sampling = {.temperature = 0}, .stop = stop},
                 [&](std::string_view s) { d.streamed += s; });
  for (uint32_t id : tokens) {
    std::vector<float> logits(tokenizer().vocab_size(), 0.0f);
    logits[id] = 1;
    if (!c.next(logits)) break;
  }
  d.tokens = c.tokens();
  d.text = c.text();
  d.finish_reason = c.finish_reason();
  d.decoded = c.decoded_tokens();
  return d;
}

// What the continuation did before it decoded incrementally: the whole completion decoded after
// every token, cut before the first stop string found.
Driven decoding_the_whole(const std::vector<uint32_t>& tokens,
                          const std::vector<std::string>& stop) {
  for (size_t n = 1; n <= tokens.size(); ++n) {
    const std::vector<uint32_t> head(tokens.begin(), tokens.begin() + long(n));
    std::string text = tokenizer().decode(head);
    size_t cut = std::string::npos;
    for (const std::string& s : stop) cut = std::min(cut, text.find(s));
    if (cut != std::string::npos)
      return {.tokens = head, .text = text.substr(0, cut), .finish_reason = "stop"};
  }
  return {.tokens = tokens, .text = tokenizer().decode(tokens), .finish_reason = "length"};
}

TEST(Continuation, TextAndStopStringsEqualDecodingTheWholeCompletion) {
  const std::vector<uint32_t> source = tokenizer().encode(
      "In the beginning \u795e\u306f\u5929\u3068\u5730\u3092\u5275\u9020\u3055\u308c\u305f\u3002 "
      "\u041f\u0440\u0438\u0432\u0435\u0442 \U0001F642 and God said, Let there be light");
  std::mt19937_64 rng(5);
  for (int round = 0; round < 400; ++round) {
    std::vector<uint32_t> tokens;
    const size_t n = 1 + rng() % 30;
    if (round % 4 == 0) {  // any ids: invalid UTF-8, <|endoftext|> as text
      for (size_t i = 0; i < n; ++i) tokens.push_back(uint32_t(rng() % tokenizer().vocab_size()));
    } else {  // characters split over several byte tokens
      const size_t from = rng() % source.size();
      tokens.assign(source.begin() + long(from),
                    source.begin() + long(std::min(source.size(), from + n)));
    }
    // Stop strings taken from the text, most spanning token boundaries, some never there.
    const std::string whole = tokenizer().decode(tokens);
    std::vector<std::string> stop;
    for (int i = int(rng() % 3); i > 0 && !whole.empty(); --i) {
      const size_t at = rng() % whole.size();
      stop.push_back(whole.substr(at, 1 + rng() % 6));
    }
    if (round % 5 == 0) stop.push_back("\x01never\x02");
    const Driven got = drive(tokens, stop), expected = decoding_the_whole(tokens, stop);
    ASSERT_EQ(got.tokens, expected.tokens) << "round " << round;
    ASSERT_EQ(got.text, expected.text) << "round " << round;
    ASSERT_EQ(got.finish_reason, expected.finish_reason) << "round " << round;
    ASSERT_EQ(got.streamed, got.text) << "round " << round;
  }
}

// Each token is decoded once, however long the completion: the work grows with its length, not
// with its square (decoding the whole completion every step was n (n + 1) / 2 tokens).
TEST(Continuation, DecodesEachTokenOnce) {
  const std::vector<uint32_t> verse =
      tokenizer().encode(" and God saw the light, that it was good");
  std::vector<uint32_t> tokens;
  while (tokens.size() < 5000) tokens.insert(tokens.end(), verse.begin(), verse.end());
  const Driven d = drive(tokens, {"never there", "x\ny"});
  ASSERT_EQ(d.tokens.size(), tokens.size());
  EXPECT_EQ(d.decoded, int64_t(tokens.size()));
  EXPECT_EQ(d.text, tokenizer().decode(tokens));
  EXPECT_EQ(d.streamed, d.text);
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
  const nlohmann::json messages = {{{"role", "user"}, {"content", "hello"}}};
  for (const char* name : {"chatml", "qwen3", "qwen3_5"})
    EXPECT_THROW(ChatFormat::choose(name, "", tokenizer(), discard_log())
                     .render(messages, nlohmann::json::object()),
                 Error)
        << name;
}

}  // namespace
}  // namespace gattn
