// Reads text documents from the inputs users give: plain-text files (one document each),
// folders (every file below, in sorted path order) and JSONL files (one {"text": ...} per line).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

// Calls visit(text, where) for every document, in a deterministic order; `where` names the file
// (and line, for JSONL) for error messages. A path ending in .jsonl is read as JSONL.
void for_each_document(
    const std::vector<std::string>& inputs,
    const std::function<void(std::string_view text, const std::string& where)>& visit);

}  // namespace gattn
