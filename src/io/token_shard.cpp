#include "io/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/file.h"
#include "util/checksum.h"
#include "util/error.h"

namespace gattn {

namespace {
constexpr char kMagic[8] = {'G', 'A', 'T', 'T', 'N', 'T', 'O', 'K'};
constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 64;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens,
                       const std::vector<uint64_t>& document_starts, uint32_t vocab_size,
                       uint32_t bos_id, uint64_t text_bytes, uint64_t tokenizer_fingerprint) {
  const uint32_t token_bytes = vocab_size <= 65536 ? 2 : 4;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab_size)
      fail(path, ": token ", tokens[i], " at position ", i, " is not below the vocabulary size ",
           vocab_size);
  uint8_t header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  store(header + 8, kVersion);
  store(header + 12, token_bytes);
  store<uint64_t>(header + 16, tokens.size());
  store<uint64_t>(header + 24, document_starts.size());
  store(header + 32, vocab_size);
  store(header + 36, bos_id);
  store(header + 40, text_bytes);
  std::vector<uint16_t> narrow;
  if (token_bytes == 2) narrow.assign(tokens.begin(), tokens.end());
  const void* ids = token_bytes == 2 ? static_cast<const void*>(narrow.data()) : tokens.data();
  const size_t ids_bytes = tokens.size() * token_bytes;
  StreamingChecksum checksum;  // of what follows the header, which comes first in the file
  checksum.update(ids, ids_bytes);
  checksum.update(document_starts.data(), document_starts.size() * 8);
  store(header + 48, checksum.value());
  store(header + 56, tokenizer_fingerprint);
  write_file_atomically(path, [&](const WriteChunk& write) {
    write(header, kHeaderBytes);
    write(ids, ids_bytes);
    write(document_starts.data(), document_starts.size() * 8);
  });
}

bool looks_like_token_shard(std::string_view head, uint64_t file_bytes) {
  if (head.size() < kHeaderBytes) return false;
  const auto* bytes = reinterpret_cast<const uint8_t*>(head.data());
  if (std::memcmp(bytes, kMagic, 8) == 0) return true;
  const uint32_t version = load<uint32_t>(bytes + 8), token_bytes = load<uint32_t>(bytes + 12);
  const uint64_t tokens = load<uint64_t>(bytes + 16), documents = load<uint64_t>(bytes + 24);
  const uint64_t limit = uint64_t(1) << 40;
  return (version == 1 || version == kVersion) && (token_bytes == 2 || token_bytes == 4) &&
         tokens < limit && documents < limit &&
         kHeaderBytes + tokens * token_bytes + documents * 8 == file_bytes;
}

TokenShard::TokenShard(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  size_ = stat_ok ? size_t(st.st_size) : 0;
  if (stat_ok && size_ >= kHeaderBytes) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) map_ = nullptr;
  }
  ::close(fd);
  if (!stat_ok) fail(path, ": cannot stat");
  if (size_ < kHeaderBytes)
    fail(path, ": not a token shard (", size_, " bytes, shorter than the ", kHeaderBytes,
         "-byte header)");
  if (!map_) fail(path, ": cannot map (", std::strerror(errno), ")");
  try {
    const auto* bytes = static_cast<const uint8_t*>(map_);
    if (std::memcmp(bytes, kMagic, 8) != 0) fail(path, ": not a token shard (wrong magic bytes)");
    const uint32_t version = load<uint32_t>(bytes + 8);
    if (version == 1)
      fail(path,
           ": token shard format version 1 has no checksum and no tokenizer fingerprint, "
           "which this build requires: re-make this shard (`gattn data`)");
    if (version != kVersion)
      fail(path, ": token shard format version ", version, ", this build reads ", kVersion);
    info_.version = version;
    info_.token_bytes = load<uint32_t>(bytes + 12);
    info_.tokens = load<uint64_t>(bytes + 16);
    info_.documents = load<uint64_t>(bytes + 24);
    info_.vocab_size = load<uint32_t>(bytes + 32);
    info_.bos_id = load<uint32_t>(bytes + 36);
    info_.text_bytes = load<uint64_t>(bytes + 40);
    if (info_.token_bytes != 2 && info_.token_bytes != 4)
      fail(path, ": bytes per token is ", info_.token_bytes, ", expected 2 or 4");
    if (info_.bos_id >= info_.vocab_size)
      fail(path, ": BOS id ", info_.bos_id, " is not below the vocabulary size ", info_.vocab_size);
    const uint64_t limit = uint64_t(1) << 40;
    const uint64_t expected =
        info_.tokens < limit && info_.documents < limit
            ? kHeaderBytes + info_.tokens * info_.token_bytes + info_.documents * 8
            : 0;
    if (expected != size_)
      fail(path, ": header promises ", info_.tokens, " tokens and ", info_.documents,
           " documents (", expected, " bytes) but the file has ", size_,
           " bytes (truncated or not a shard)");
    info_.tokenizer_fingerprint = load<uint64_t>(bytes + 56);
    const uint64_t recorded = load<uint64_t>(bytes + 48);
    const uint64_t actual = checksum64(bytes + kHeaderBytes, size_ - kHeaderBytes);
    if (actual != recorded)
      fail(path, ": token data is corrupt: checksum ", checksum_hex(actual),
           ", the header records ", checksum_hex(recorded));
    tokens_ = bytes + kHeaderBytes;
    starts_ = tokens_ + info_.tokens * info_.token_bytes;
    for (uint64_t i = 0; i < info_.tokens; ++i)
      if (token(i) >= info_.vocab_size)
        fail(path, ": token ", token(i), " at position ", i, " is not below the vocabulary size ",
             info_.vocab_size);
    uint64_t previous = 0;
    for (uint64_t d = 0; d < info_.documents; ++d) {
      const uint64_t start = document_start(d);
      if (start >= info_.tokens || (d > 0 && start <= previous) || token(start) != info_.bos_id)
        fail(path, ": document ", d, " starts at ", start,
             ", which is not an increasing position of a BOS token");
      previous = start;
    }
  } catch (...) {
    ::munmap(map_, size_);
    throw;
  }
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, size_);
}

uint32_t TokenShard::token(uint64_t i) const {
  return info_.token_bytes == 2 ? load<uint16_t>(tokens_ + 2 * i) : load<uint32_t>(tokens_ + 4 * i);
}

void TokenShard::read(uint64_t begin, uint64_t count, int32_t* out) const {
  if (begin + count > info_.tokens)
    fail(path_, ": read of tokens [", begin, ", ", begin + count, ") beyond ", info_.tokens);
  for (uint64_t i = 0; i < count; ++i) out[i] = int32_t(token(begin + i));
}

uint64_t TokenShard::document_start(uint64_t d) const { return load<uint64_t>(starts_ + 8 * d); }

}  // namespace gattn
