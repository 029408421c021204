// Whole-file reads and crash-safe writes: data goes to a temporary file in the same folder,
// is fsync'ed, then renamed over the target, and the folder is fsync'ed, so a reader sees either
// the old file or the complete new one, never a torn one.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace gattn {

std::string read_text_file(const std::string& path);

// Writes all `bytes` to the open file `fd`, retrying short writes and EINTR; any failure is an
// Error naming `path`. Every write gattn makes to a file goes through here.
void write_all(int fd, const void* data, size_t bytes, const std::string& path);

// Fault injection for tests, armed by the host (library code never reads the environment; the
// CLI arms them from GATTN_FAULT_WRITE_ENOSPC and GATTN_FAULT_KILL_AT at start-up, so a test can
// make a full disk or a crash happen at an exact write of the gattn binary). Writes are not
// passes: these are the process's, not an ExecContext's.
// The nth call of write_all from now on (1-based) fails with ENOSPC; 0 turns it off.
void inject_write_failure(long long nth);
// kill_point(name) then dies as kill -9 would ("" disarms).
void arm_kill_point(const std::string& name);
void kill_point(const char* name);

// Streams the file's content through write(chunk, bytes) calls made by `produce`.
using WriteChunk = std::function<void(const void* data, size_t bytes)>;
void write_file_atomically(const std::string& path,
                           const std::function<void(const WriteChunk&)>& produce);
void write_text_file_atomically(const std::string& path, const std::string& text);

}  // namespace gattn
