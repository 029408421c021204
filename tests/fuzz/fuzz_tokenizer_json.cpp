// Fuzz target: a tokenizer.json loaded (parsed, validated, regexes compiled) and used on a line.
#include "fuzz_input.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const gattn::Tokenizer tokenizer = gattn::Tokenizer::load(gattn::fuzz::input_file(data, size));
    const std::vector<uint32_t> ids = tokenizer.encode("Hello, world! x\u0897y 123");
    tokenizer.decode(ids);
  });
}
