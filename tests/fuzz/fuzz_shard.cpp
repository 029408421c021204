// Fuzz target: a token shard opened (header, sizes, checksum, ids, document starts) and read.
#include <vector>

#include "fuzz_input.h"
#include "io/token_shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const gattn::TokenShard shard(gattn::fuzz::input_file(data, size));
    std::vector<int32_t> ids(shard.info().tokens);
    shard.read(0, shard.info().tokens, ids.data());
  });
}
