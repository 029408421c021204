// Fuzz target: a GGUF file (header, metadata, tensor infos, offsets) read; every metadata value
// asked for through the typed getters; the qwen3 or qwen35 config and the tokenizer its metadata
// describe; the model loaded as stored (block formats read in place) and dequantized into f32.
#include "fuzz_input.h"
#include "infer/gguf_tokenizer.h"
#include "io/gguf.h"
#include "io/gguf_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gattn::fuzz::expect_only_errors([&] {
    const gattn::GgufReader reader(gattn::fuzz::input_file(data, size));
    for (const auto& entry : reader.metadata()) {
      const std::string& key = entry.first;
      gattn::fuzz::expect_only_errors([&] { reader.get_int(key); });
      gattn::fuzz::expect_only_errors([&] { reader.get_string(key); });
      gattn::fuzz::expect_only_errors([&] { reader.get_ints(key); });
      gattn::fuzz::expect_only_errors([&] { reader.get_floats(key); });
      gattn::fuzz::expect_only_errors([&] { reader.get_bools(key); });
    }
    volatile uint8_t sink = 0;
    for (const gattn::GgufTensor& t : reader.tensors())
      if (t.bytes > 0) sink = sink + t.data[t.bytes - 1];  // the last byte is inside the file
    gattn::fuzz::expect_only_errors([&] { gattn::gguf_config(reader); });
    for (const gattn::WeightDtype storage : {gattn::WeightDtype::bf16, gattn::WeightDtype::f32})
      gattn::fuzz::expect_only_errors(
          [&] { gattn::load_gguf_model(reader.path(), gattn::discard_log(), storage); });
    gattn::fuzz::expect_only_errors([&] {
      const gattn::Tokenizer t = gattn::Tokenizer::from_spec(gattn::gguf_tokenizer_spec(reader));
      t.decode(t.encode("Hello, world! 1234 ünïcode <|endoftext|>"));
    });
  });
}
