// How a pass computes and where it reports: passed with each pass (PassContext::exec) and to
// each op that runs GEMMs, never a process-wide mode. A host builds one (the CLI from its flags,
// the trainer from its run config, a server per request) and may run passes with different
// contexts side by side.
#pragma once

namespace gattn {

// How float GEMMs compute:
// - fp32: OpenBLAS sgemm.
// - bf16: mixed precision on the CPU's bf16 instructions: matmul's inputs rounded to bfloat16
//   (nearest even), products summed in fp32: weight GEMMs through oneDNN (ops/bf16_gemm.h),
//   attention's tiles (tile_matmul) on a register-blocked kernel (ops/bf16_tile.h).
// - bf16_emulated: every GEMM, the attention tiles too, rounds its inputs to bf16 and runs fp32
//   sgemm. The products of bf16 values are exact in fp32, so this computes what bf16 hardware
//   does up to the order of the additions: the oracle the native mode is tested against.
enum class GemmPrecision { fp32, bf16, bf16_emulated };

class GemmLog;
class OpProfile;
class LogSink;

struct ExecContext {
  GemmPrecision precision = GemmPrecision::fp32;  // checked by check_gemm_precision()
  OpProfile* profile = nullptr;                   // the wall time of each op (null: none)
  GemmLog* gemm_log = nullptr;                    // every GEMM's shape (null: none)
  LogSink* log = nullptr;                         // messages of the pass's code (null: none)
  // Prefill products of bf16-stored weight matrices (ops/typed_linear.h): true, on the CPU's bf16
  // GEMM where it has one (the activations rounded to bf16, as llama.cpp does: several times the
  // fp32 rate); false, exactly in fp32 on panels widened from them. GemmPrecision::bf16 implies it.
  bool bf16_weights_on_bf16_gemm = false;
  // Products of block-quantized weights (ops/quantized_linear.h) on the scalar reference kernels,
  // the oracle of the vector ones (tests).
  bool reference_quant_kernels = false;
  // W8A8 as an accuracy model (with weights rounded by model/quantize_model.h
  // round_weights_to_int8_rows): every projection's input (model/pass.h project()) rounded to int8
  // with one absmax scale over the whole input of the pass (rows x in_dim: a massive activation
  // coarsens every other value's step) and multiplied back before an fp32 product. Not an int8
  // kernel: the products are those of the rounded values, summed in fp32. Forward passes only.
  bool int8_projection_inputs = false;
  // The thread count the host runs the pass with (0: as set). OpenMP's and OpenBLAS's pools are
  // the process's: the host applies it (ThreadScope) around the passes.
  int threads = 0;
};

// Fails (gattn::Error) for bf16 where native_bf16_gemm_available() is false.
void check_gemm_precision(GemmPrecision precision);

}  // namespace gattn
