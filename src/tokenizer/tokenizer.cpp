#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "io/file.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/tokenizer_spec.h"
#include "tokenizer/trainer.h"
#include "tokenizer/word_cache.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {

struct Tokenizer::Impl {
  explicit Impl(TokenizerSpec spec);
  void encode_append(std::string_view text, std::vector<uint32_t>& out, AddedTokens added) const;
  void encode_append(std::string_view text, std::vector<uint32_t>& out,
                     const std::function<bool(size_t, size_t)>& may_match) const;

  TokenizerSpec spec;  // vocab sorted by id
  PreTokenizer pretokenizer;
  AddedTokenMatcher raw_added;         // matched on the text as given
  AddedTokenMatcher normalized_added;  // matched after normalisation
  BpeModel bpe;
  StringIdMap token_ids;              // tokenizer.json form -> id
  std::vector<std::string> id_token;  // id -> tokenizer.json form
  std::vector<std::string> id_bytes;  // id -> the bytes it decodes to
  std::vector<bool> id_known;
  uint64_t serial;  // tells the per-thread word caches apart
};

namespace {

std::atomic<uint64_t> next_serial{1};

// Ids may leave gaps, but not more than three unused ids per token the file lists.
uint64_t max_token_id(uint64_t tokens_listed) { return 4 * tokens_listed + 256; }

std::string printable(const std::string& token) {
  return token.size() > 60 ? token.substr(0, 57) + "..." : token;
}

}  // namespace

Tokenizer::Impl::Impl(TokenizerSpec s)
    : spec(std::move(s)), pretokenizer(spec.splits), serial(next_serial++) {
  const std::string& origin = spec.origin;
  std::stable_sort(spec.vocab.begin(), spec.vocab.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  for (size_t i = 1; i < spec.vocab.size(); ++i)
    if (spec.vocab[i].second == spec.vocab[i - 1].second)
      fail(origin, ": model.vocab: \"", printable(spec.vocab[i - 1].first), "\" and \"",
           printable(spec.vocab[i].first), "\" share id ", spec.vocab[i].second);
  uint32_t size = spec.vocab.empty() ? 0 : spec.vocab.back().second + 1;
  for (const AddedTokenSpec& t : spec.added_tokens) size = std::max(size, t.id + 1);
  // The id tables below are as long as the largest id: one absurd id must not allocate gigabytes.
  const uint64_t id_limit = max_token_id(spec.vocab.size() + spec.added_tokens.size());
  if (size > id_limit)
    fail(origin, ": token id ", size - 1, " is too large for a file of ", spec.vocab.size(),
         " vocab entries and ", spec.added_tokens.size(), " added tokens (ids must be below ",
         id_limit, ")");
  id_token.resize(size);
  id_bytes.resize(size);
  id_known.assign(size, false);
  token_ids.reserve(size);

  StringIdMap whole_words;
  for (const auto& [token, id] : spec.vocab) {
    token_ids.emplace(token, id);
    id_token[id] = token;
    id_known[id] = true;
    const bool pure = byte_level::token_bytes(token, id_bytes[id]);
    if (spec.ignore_merges && pure) whole_words.emplace(id_bytes[id], id);
  }

  std::array<uint32_t, 256> byte_ids{};
  for (int b = 0; b < 256; ++b) {
    const std::string token = byte_level::token_string(std::string(1, char(b)));
    const auto it = token_ids.find(token);
    if (it == token_ids.end())
      fail(origin, ": model.vocab: no token for byte 0x", "0123456789ABCDEF"[b >> 4],
           "0123456789ABCDEF"[b & 15], " (\"", token,
           "\"): a byte-level vocabulary needs all 256 byte tokens");
    byte_ids[b] = it->second;
  }

  std::vector<MergeRule> merges;
  merges.reserve(spec.merges.size());
  for (size_t i = 0; i < spec.merges.size(); ++i) {
    const auto& [left, right] = spec.merges[i];
    const auto id_of = [&](const std::string& token, const char* role) {
      const auto it = token_ids.find(token);
      if (it == token_ids.end())
        fail(origin, ": model.merges[", i, "]: ", role, " \"", printable(token),
             "\" is not in model.vocab");
      return it->second;
    };
    merges.push_back(
        {id_of(left, "token"), id_of(right, "token"), id_of(left + right, "merged token")});
  }

  // Added tokens get the ids HF gives them on load: a model token's own id, else the next free one.
  std::vector<AddedTokenMatcher::Token> raw, normalized;
  const uint32_t model_size = uint32_t(spec.vocab.size());
  std::optional<uint32_t> largest_added;
  StringIdMap added_ids;
  for (size_t i = 0; i < spec.added_tokens.size(); ++i) {
    const AddedTokenSpec& t = spec.added_tokens[i];
    if (!added_ids.emplace(t.content, t.id).second)
      fail(origin, ": added_tokens[", i, "]: \"", printable(t.content), "\" is listed twice");
    const auto in_model = token_ids.find(t.content);  // holds the model's tokens only, so far
    uint32_t expected;
    if (in_model != token_ids.end()) {
      expected = in_model->second;
    } else if (!largest_added) {
      expected = model_size;
    } else {
      expected = *largest_added >= model_size ? *largest_added + 1 : model_size;
    }
    if (t.id != expected)
      fail(origin, ": added_tokens[", i, "]: \"", printable(t.content), "\" has id ", t.id,
           ", but Hugging Face would give it id ", expected,
           " (its id in model.vocab, or the next id after the model's and earlier added tokens')");
    if (in_model == token_ids.end() && id_known[t.id])
      fail(origin, ": added_tokens[", i, "]: \"", printable(t.content), "\" would take id ", t.id,
           ", which model.vocab gives to \"", printable(id_token[t.id]), "\"");
    largest_added = std::max(largest_added.value_or(0), t.id);
    if (!id_known[t.id]) {
      id_token[t.id] = t.content;
      id_known[t.id] = true;
    }
    id_bytes[t.id] = t.content;  // added tokens decode to their text, not through byte-level
    if (t.normalized && spec.nfc) {
      std::string content;
      append_nfc(t.content, content);
      normalized.push_back({content, t.id});
    } else {
      (t.normalized ? normalized : raw).push_back({t.content, t.id});
    }
  }
  for (const auto& [content, id] : added_ids) token_ids.emplace(content, id);
  raw_added = AddedTokenMatcher(std::move(raw));
  normalized_added = AddedTokenMatcher(std::move(normalized));
  bpe = BpeModel(byte_ids, merges, spec.ignore_merges, std::move(whole_words));
}

void Tokenizer::Impl::encode_append(std::string_view text, std::vector<uint32_t>& out,
                                    AddedTokens added) const {
  WordCache& cache = WordCache::for_this_thread(serial);
  const auto encode_word = [&](std::string_view word) {
    if (word.size() == 1 || word.size() > WordCache::kMaxWordBytes)
      return bpe.encode_word(word, out);
    const uint64_t hash = std::hash<std::string_view>{}(word);
    if (cache.append_ids(word, hash, out)) return;
    const size_t before = out.size();
    bpe.encode_word(word, out);
    cache.insert(word, hash, out.data() + before, out.size() - before);
  };
  const bool match = added == AddedTokens::match;
  const auto push_id = [&](uint32_t id) { out.push_back(id); };
  const auto encode_plain = [&](std::string_view piece) { pretokenizer.split(piece, encode_word); };
  const auto encode_normalized = [&](std::string_view piece) {
    if (!match) return encode_plain(piece);
    normalized_added.split(piece, encode_plain, push_id);
  };
  std::string normalized;
  const auto encode_raw = [&](std::string_view piece) {
    if (!spec.nfc) return encode_normalized(piece);
    normalized.clear();
    append_nfc(piece, normalized);
    encode_normalized(normalized);
  };
  if (!match) return encode_raw(text);
  raw_added.split(text, encode_raw, push_id);
}

void Tokenizer::Impl::encode_append(std::string_view text, std::vector<uint32_t>& out,
                                    const std::function<bool(size_t, size_t)>& may_match) const {
  const auto push_id = [&](uint32_t id) { out.push_back(id); };
  // A piece between matched tokens may hold more (tokens matched after NFC) only if every byte
  // of it may.
  const auto encode_piece = [&](std::string_view piece) {
    const size_t at = size_t(piece.data() - text.data());
    encode_append(piece, out,
                  may_match(at, at + piece.size()) ? AddedTokens::match : AddedTokens::as_text);
  };
  raw_added.split_where(text, may_match, encode_piece, push_id);
}

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::load(const std::string& path) {
  return Tokenizer(std::make_shared<const Impl>(read_tokenizer_json(path)));
}

Tokenizer Tokenizer::from_spec(TokenizerSpec spec) {
  return Tokenizer(std::make_shared<const Impl>(std::move(spec)));
}

void Tokenizer::save(const std::string& path) const {
  const std::string text = tokenizer_json_text(impl_->spec);
  write_text_file_atomically(path, text);
}

uint64_t Tokenizer::fingerprint() const {
  const std::string text = tokenizer_json_text(impl_->spec);
  return checksum64(text.data(), text.size());
}

Tokenizer Tokenizer::train(const std::vector<std::string>& inputs, int vocab_size,
                           const TrainOptions& options) {
  return Tokenizer(std::make_shared<const Impl>(train_bpe(inputs, vocab_size, options)));
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, AddedTokens added) const {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  impl_->encode_append(text, ids, added);
  return ids;
}

void Tokenizer::encode_append(std::string_view text, std::vector<uint32_t>& ids,
                              AddedTokens added) const {
  impl_->encode_append(text, ids, added);
}

std::vector<uint32_t> Tokenizer::encode_where(
    std::string_view text, const std::function<bool(size_t, size_t)>& may_match) const {
  std::vector<uint32_t> ids;
  impl_->encode_append(text, ids, may_match);
  return ids;
}

std::vector<std::vector<uint32_t>> Tokenizer::encode_batch(
    std::span<const std::string_view> texts) const {
  std::vector<std::vector<uint32_t>> ids(texts.size());
  std::exception_ptr error;
  const int64_t n = int64_t(texts.size());
#pragma omp parallel for schedule(static, 1)
  for (int64_t i = 0; i < n; ++i) {
    try {
      ids[i] = encode(texts[i]);
    } catch (...) {
#pragma omp critical(gattn_tokenizer_batch_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return ids;
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  const Impl& impl = *impl_;
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t id = ids[i];
    if (id >= impl.id_known.size() || !impl.id_known[id])
      fail(impl.spec.origin, ": cannot decode id ", id, " (position ", i,
           "): not in the vocabulary (", impl.id_known.size(), " ids)");
    text += impl.id_bytes[id];
  }
  return text;
}

int Tokenizer::vocab_size() const { return int(impl_->id_known.size()); }

uint32_t Tokenizer::end_of_text_id() const {
  const auto id = token_to_id(kEndOfText);
  if (!id) fail(impl_->spec.origin, ": has no ", kEndOfText, " token");
  return *id;
}

std::optional<std::string> Tokenizer::id_to_token(uint32_t id) const {
  if (id >= impl_->id_known.size() || !impl_->id_known[id]) return std::nullopt;
  return impl_->id_token[id];
}

std::optional<uint32_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->token_ids.find(token);
  if (it == impl_->token_ids.end()) return std::nullopt;
  return it->second;
}

const std::vector<std::pair<std::string, std::string>>& Tokenizer::merges() const {
  return impl_->spec.merges;
}

const std::string& Tokenizer::origin() const { return impl_->spec.origin; }

}  // namespace gattn
