// The layout of a packed tile of sixteen Q8_0, Q4_0, Q4_K or Q6_K weight rows (ops/quant_tile.h),
// which ops/quant_tile.cpp packs and the AVX-512 and AVX2 kernels read. Vectors are 64 bytes,
// lane n (four bytes) holding weight row n: the AVX-512 kernels take a vector at a time, the AVX2
// ones each 32-byte half (rows 0-7, then 8-15).
#pragma once
#include <cstdint>

#include "ops/quant_tile.h"

namespace gattn::quant_tile_layout {

// One block of a Q8_0 / Q4_0 tile: eight vectors of the weights (vector j, lane n: values 4j ..
// 4j + 3 of weight row n as unsigned bytes: Q8_0's value + 128, Q4_0's nibble), then the sixteen
// rows' scales as doubles.
inline constexpr int64_t kValuesBytes = 8 * 64;

// One 256-value block of a K-quant tile: 64 vectors of the weights as above (Q4_K's nibbles,
// Q6_K's values + 32), then for Q4_K: eight vectors of the sub-blocks' scales (vector j, lane n:
// row n's scale j as an int32), eight of the mins as int16 pairs (vector i, lane n: row n's min of
// 16-value groups 2i and 2i + 1, i.e. min i twice), the sixteen d and the sixteen dmin as floats;
// for Q6_K: sixteen vectors of the scales as int32, eight of the scales as int16 pairs (groups 2i,
// 2i + 1), the sixteen d as floats.
inline constexpr int64_t kKValuesBytes = 64 * 64;
inline constexpr int64_t kQ4KScales = kKValuesBytes, kQ4KMins = kQ4KScales + 8 * 64,
                         kQ4KD = kQ4KMins + 8 * 64, kQ4KDmin = kQ4KD + 64;
inline constexpr int64_t kQ6KScales = kKValuesBytes, kQ6KPairs = kQ6KScales + 16 * 64,
                         kQ6KD = kQ6KPairs + 8 * 64;
static_assert(kValuesBytes + 16 * 8 <= kQuantTileBlockBytes);
static_assert(kQ4KDmin + 64 <= kQuantTileKBlockBytes && kQ6KD + 64 <= kQuantTileKBlockBytes);

}  // namespace gattn::quant_tile_layout
