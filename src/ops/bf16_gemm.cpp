#include "ops/bf16_gemm.h"

#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "ops/avx512_kernels.h"
#include "ops/bf16_bits.h"
#include "util/aligned.h"
#include "util/cpu_isa.h"
#include "util/error.h"

namespace gattn {

namespace {
// vector: the AVX-512 conversion is in use (the scalar loop gives the same bits).
void row_to_bf16(const float* x, int n, uint16_t* out, [[maybe_unused]] bool vector) {
  int c = 0;
#ifdef GATTN_X86_KERNELS
  if (vector) c = avx512::to_bf16_bits(x, n, out);
#endif
  for (; c < n; ++c) out[c] = bf16_instruction_bits(x[c]);
}

// One matmul primitive per shape, made once: creating a primitive costs far more than running a
// small one. Executing one primitive from several threads at once is allowed by oneDNN.
struct Shape {
  int m = 0, n = 0, k = 0, ldc = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1, beta = 0;
  auto key() const { return std::tie(m, n, k, ldc, trans_a, trans_b, alpha, beta); }
  bool operator<(const Shape& o) const { return key() < o.key(); }
};

dnnl::engine& engine() {
  static dnnl::engine e = [] {
    active_isa();  // selects the ISA, and caps oneDNN for it, before oneDNN's first use
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

struct Primitive {
  dnnl::memory::desc a, b, c;
  dnnl::matmul matmul;
};

Primitive make_matmul(const Shape& s) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc a({s.m, s.k}, dt::bf16, s.trans_a ? tag::ba : tag::ab);
  const dnnl::memory::desc b({s.k, s.n}, dt::bf16, s.trans_b ? tag::ba : tag::ab);
  const dnnl::memory::desc c({s.m, s.n}, dt::f32, dnnl::memory::dims{s.ldc, 1});
  dnnl::primitive_attr attr;
  if (s.alpha != 1) attr.set_output_scales(0, {s.alpha});
  if (s.beta != 0) {
    dnnl::post_ops post;
    post.append_sum(s.beta);
    attr.set_post_ops(post);
  }
  return {.a = a,
          .b = b,
          .c = c,
          .matmul = dnnl::matmul(
              dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine()))};
}

const Primitive& primitive_for(const Shape& s) {
  static std::mutex mutex;
  static std::map<Shape, Primitive> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(s);
  if (it == cache.end()) it = cache.emplace(s, make_matmul(s)).first;
  return it->second;
}

uint16_t* scratch(std::vector<uint16_t, AlignedAllocator<uint16_t>>& buffer, size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}
}  // namespace

void to_bf16(const float* x, int rows, int cols, int ld, uint16_t* out) {
  const bool vector = avx512_bf16_kernels_in_use();
  if (int64_t(rows) * cols >= (int64_t(1) << 16)) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r)
      row_to_bf16(x + int64_t(r) * ld, cols, out + int64_t(r) * cols, vector);
  } else {
    for (int r = 0; r < rows; ++r)
      row_to_bf16(x + int64_t(r) * ld, cols, out + int64_t(r) * cols, vector);
  }
}

bool native_bf16_gemm_available() {
  static const bool available = [] {
    active_isa();  // selects the ISA, and caps oneDNN for it, before oneDNN's first use
    try {
      // oneDNN reports the ISA it dispatches to; a bf16 matmul on a CPU without bf16 dot products
      // would run through conversions (or not be created), which is not the native mode.
      const int isa = int(dnnl::get_effective_cpu_isa());  // a bit mask of the ISA's features
      if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) return false;
      make_matmul({.m = 4, .n = 4, .k = 4, .ldc = 4});
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

std::string native_bf16_gemm_unavailable_reason() {
  if (native_bf16_gemm_available()) return "";
  if (active_isa() != Isa::avx512 && cpu_features().avx512_bf16)
    return cat("the ISA in use is ", isa_description(), ", without the CPU's avx512_bf16");
  if (!cpu_features().avx512_bf16) return "this CPU has no bf16 dot products (avx512_bf16)";
  return cat("oneDNN (", onednn_isa_name(), ") cannot run a bf16 matmul here");
}

std::string onednn_isa_name() {
  active_isa();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return cat("isa ", int(dnnl::get_effective_cpu_isa()));
  }
}

bool native_bf16_gemm_uses_amx() {
  active_isa();
  const int isa = int(dnnl::get_effective_cpu_isa());
  return native_bf16_gemm_available() &&
         (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

void bf16_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
               bool trans_b, float alpha, float beta, int lda, int ldb, int ldc) {
  thread_local std::vector<uint16_t, AlignedAllocator<uint16_t>> a_bf16, b_bf16;
  const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  uint16_t* a16 = scratch(a_bf16, size_t(a_rows) * a_cols);
  uint16_t* b16 = scratch(b_bf16, size_t(b_rows) * b_cols);
  to_bf16(a, a_rows, a_cols, lda, a16);
  to_bf16(b, b_rows, b_cols, ldb, b16);
  bf16_gemm_rounded(c, a16, b16, m, n, k, trans_a, trans_b, alpha, beta, ldc);
}

void bf16_gemm_rounded(float* c, const uint16_t* a, const uint16_t* b, int m, int n, int k,
                       bool trans_a, bool trans_b, float alpha, float beta, int ldc) {
  const Shape shape{.m = m,
                    .n = n,
                    .k = k,
                    .ldc = ldc,
                    .trans_a = trans_a,
                    .trans_b = trans_b,
                    .alpha = alpha,
                    .beta = beta};
  try {
    const Primitive& p = primitive_for(shape);
    // oneDNN's memory objects take non-const handles; the matmul only reads its inputs.
    dnnl::memory a_mem(p.a, engine(), const_cast<uint16_t*>(a));
    dnnl::memory b_mem(p.b, engine(), const_cast<uint16_t*>(b));
    dnnl::memory c_mem(p.c, engine(), c);
    dnnl::stream stream(engine());
    p.matmul.execute(stream,
                     {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
  } catch (const dnnl::error& e) {
    fail("bf16 GEMM ", m, " x ", n, " x ", k, ": oneDNN failed (", e.what(), ")");
  }
}

}  // namespace gattn
