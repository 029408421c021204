// The Bigram-Backcopy source (Guo et al., arXiv 2410.13835): a synthetic token stream known to grow
// attention sinks in 1-3 layer transformers. Tokens 0..V-1 follow a bigram Markov chain, except
// after a trigger token (the k most frequent under the chain's stationary distribution), where the
// next token is a copy of the token before the trigger. Token V is BOS. A head that copies must
// attend to the previous token at triggers and do nothing elsewhere, which softmax can only do by
// attending to a token whose value is near zero: the sink.
//
// Our choices where the paper's code differs (it estimates the bigram from real text): each row of
// the transition matrix is drawn from a symmetric Dirichlet(concentration); the stream starts from
// a non-trigger token, so two triggers are never adjacent and copies never chain.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gattn {

struct BigramBackcopySpec {
  int vocab = 64;              // ordinary tokens; BOS is token `vocab`
  int triggers = 3;            // k
  double concentration = 0.1;  // Dirichlet parameter of each transition row (smaller: sparser)
  uint64_t chain_seed = 0;     // the transition matrix and the triggers
};

struct BigramBackcopyChain {
  BigramBackcopySpec spec;
  std::vector<double> transition;  // [vocab, vocab], rows sum to 1
  std::vector<int> triggers;       // sorted
  std::vector<bool> is_trigger;    // [vocab]
  std::vector<double> stationary;  // of the bigram chain alone
};

BigramBackcopyChain make_bigram_backcopy_chain(const BigramBackcopySpec& spec);

struct BigramBackcopyStream {
  std::vector<uint32_t> tokens;  // BOS, then the stream
  double entropy_nats = 0;       // mean -log p(next | past) under the true source over the stream's
                            // targets: the loss of a perfect model, windows' first tokens aside
  double trigger_share = 0;  // fraction of targets that are copies
};

// `length` tokens of the stream after BOS, sampled with `seed`.
BigramBackcopyStream sample_bigram_backcopy(const BigramBackcopyChain& chain, uint64_t length,
                                            uint64_t seed);

// Writes DIR/train.bin, DIR/val.bin (token shards: one document each) and DIR/source.json (the
// spec, the triggers, the entropy of each split). Returns source.json's content.
std::string write_bigram_backcopy(const BigramBackcopySpec& spec, uint64_t train_tokens,
                                  uint64_t val_tokens, uint64_t seed, const std::string& dir);

}  // namespace gattn
