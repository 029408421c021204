// The train/validation split, by (book, chapter) across all sources: the two Bibles translate the
// same chapters and the commentary quotes the psalms, so a chapter is on one side for all three.
#pragma once
#include <cstdint>
#include <string_view>

namespace gattn {

// A hash of (seed, book, chapter), fixed by this code alone (not by a standard library's
// std::hash or distributions), so a split is the same on every machine.
uint64_t chapter_hash(uint64_t seed, std::string_view book, int chapter);

// True when the chapter's hash falls below val_percent of the hash range (in steps of 0.0001%).
bool is_validation_chapter(uint64_t seed, std::string_view book, int chapter, double val_percent);

// The order documents are written in: a seeded shuffle, so a reader streaming the file meets all
// sources and books mixed, not 1,189 KJV chapters first.
uint64_t document_order_key(uint64_t seed, std::string_view source, std::string_view book,
                            int chapter);

}  // namespace gattn
