// Trains a byte-level BPE tokenizer: counts the pre-tokenized pieces of every document, then
// merges the most frequent adjacent pair again and again. Ids and tie-breaking follow HF's
// BpeTrainer: special tokens first, then the 256 byte tokens in the order of their byte-level
// characters, then merged tokens in creation order; among pairs of equal count the one with the
// smaller (left id, right id) merges first.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_spec.h"

namespace gattn {

TokenizerSpec train_bpe(const std::vector<std::string>& inputs, int vocab_size,
                        const TrainOptions& options);

}  // namespace gattn
