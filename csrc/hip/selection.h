// Which CK instances serve a kind, in which order, and why a kind has none (csrc/ckgemm.h:
// preferred_instances, kind_rejects). Plain C++ over an instance table (table.h), tested with g++.
#pragma once

#include <string>

#include "table.h"

namespace ckgemm {
namespace ck {

// The block recipe's refusal (docs/ROCM.md, "Scaled fp8 and int8").
constexpr const char* kNoBlockScales =
    "block scales (1x128 for A, 128x128 for B) are not available on ROCm: the pinned CK (amd-aiter "
    "0.1.7.post2.dev18, CK e31a7a4f) has no grouped 1x128 x 128x128 kernel (its grouped quant kernel "
    "scales B in 1x1x128 groups only; A-and-B block scaling is in a newer CK that no package ships); use "
    "the row or tensor recipe";

inline const char* dtype_label(DType d) {
  switch (d) {
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::FP8_E4M3: return "float8_e4m3fn";
    case DType::FP8_E4M3_FNUZ: return "float8_e4m3fnuz";
    case DType::I8: return "int8";
  }
  return "unknown dtype";
}

inline const char* out_label(OutType o) {
  switch (o) {
    case OutType::F16: return "float16";
    case OutType::BF16: return "bfloat16";
    case OutType::F32: return "float32";
    case OutType::I32: return "int32";
  }
  return "unknown output type";
}

inline bool has_kind(const Table& table, const Kind& kind) {
  for (int i = 0; i < table.count; ++i)
    if (table.entries[i].info.kind == kind) return true;
  return false;
}

inline bool has_dtype(const Table& table, DType dtype) {
  for (int i = 0; i < table.count; ++i)
    if (table.entries[i].info.kind.dtype == dtype) return true;
  return false;
}

// Why no instance of `table` computes `kind` ("" when one does): first what the CK backend never
// computes, then what this build left out (CKGEMM_DTYPES).
inline std::string kind_rejects(const Table& table, const Kind& kind) {
  if (has_kind(table, kind)) return "";
  const bool low_precision = kind.dtype != DType::F16 && kind.dtype != DType::BF16;
  if (kind.layout != Layout::RC && kind.layout != Layout::RR) return "unknown layout";
  if (kind.scaling == Scaling::Block) return kNoBlockScales;
  if (kind.scaling == Scaling::Row && !low_precision)
    return std::string("scales apply to fp8 and int8 inputs; ") + dtype_label(kind.dtype) + " GEMMs are unscaled";
  if (kind.scaling == Scaling::Row && kind.out != OutType::BF16 && kind.out != OutType::F32)
    return std::string("scaled CK instances write bfloat16 or float32, not ") + out_label(kind.out) +
           " (float16 output is not instantiated on ROCm)";
  if (kind.scaling == Scaling::None && kind.out != unscaled_out(kind.dtype))
    return std::string("an unscaled ") + dtype_label(kind.dtype) + " GEMM writes " +
           out_label(unscaled_out(kind.dtype)) + " on CK, not " + out_label(kind.out);
  if (!has_dtype(table, kind.dtype))
    return std::string("this build has no CK instance for ") + dtype_label(kind.dtype) +
           " (left out by CKGEMM_DTYPES when the extension was built)";
  return "no CK instance computes this kind";
}

// Below this many rows per group the 16-row padded tile wastes less of each tile than the 128-row
// CompV4 one (a reasoned threshold, not a measured one: nobody here has run the backend).
constexpr int64_t kPaddedFirstBelowRows = 64;

// preferred_instances: the CompV4 tile, then the padded one (which also takes the N, K and K-loop
// counts CompV4 refuses); the padded one first for small groups.
inline int preferred(const Table& table, const Kind& kind, int64_t m_hint, int* out, int cap) {
  const TileId order_large[2] = {TileId::ComputeV4, TileId::Padded};
  const TileId order_small[2] = {TileId::Padded, TileId::ComputeV4};
  const TileId* order = m_hint < kPaddedFirstBelowRows ? order_small : order_large;
  int written = 0;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < table.count && written < cap; ++i)
      if (table.entries[i].info.kind == kind && table.entries[i].tile == order[o]) out[written++] = i;
  return written;
}

}  // namespace ck
}  // namespace ckgemm
