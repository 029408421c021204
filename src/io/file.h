// Whole-file reads and crash-safe writes: data goes to a temporary file in the same folder,
// is fsync'ed, then renamed over the target, and the folder is fsync'ed, so a reader sees either
// the old file or the complete new one, never a torn one.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace gattn {

std::string read_text_file(const std::string& path);

// Streams the file's content through write(chunk, bytes) calls made by `produce`.
using WriteChunk = std::function<void(const void* data, size_t bytes)>;
void write_file_atomically(const std::string& path,
                           const std::function<void(const WriteChunk&)>& produce);
void write_text_file_atomically(const std::string& path, const std::string& text);

}  // namespace gattn
