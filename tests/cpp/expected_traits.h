// The tile traits every CK instance has, written down once: tests/cpp/ck_host_probe.hip checks the
// real instances (read from CK's types) against it, and the g++ tests build their fake instances from
// it, so the host tests exercise the rules with the numbers the real kernels have.
#pragma once

#include <string>

#include "hip/instance.h"

namespace ckgemm {
namespace ck {

inline TileTraits expected_traits(DType dtype, OutType out, TileId tile) {
  const int a = element_bytes(dtype), c = out_bytes(out);
  const bool v4 = tile == TileId::ComputeV4;
  // 16-byte vector loads and stores, except the padded tile's A loads: CK caps a vector at what one
  // thread loads per K tile, and its 16 x 128 A tile over 256 threads is 8 elements each.
  const int vec_a = v4 ? 16 / a : (16 / a < 8 ? 16 / a : 8);
  return TileTraits{v4 ? "compute_v4_128x128x64" : "padded_16x64x128",
                    v4 ? 128 : 16,
                    v4 ? 128 : 64,
                    v4 ? 64 : 128,
                    vec_a,
                    16 / a,
                    16 / c,
                    !v4,
                    !v4,
                    v4,
                    a,
                    c};
}

inline bool same_traits(const TileTraits& x, const TileTraits& y) {
  return std::string(x.name) == y.name && x.m_tile == y.m_tile && x.n_tile == y.n_tile && x.k_tile == y.k_tile &&
         x.vec_a == y.vec_a && x.vec_b == y.vec_b && x.vec_c == y.vec_c && x.pad_n == y.pad_n && x.pad_k == y.pad_k &&
         x.double_lds == y.double_lds && x.a_bytes == y.a_bytes && x.c_bytes == y.c_bytes;
}

}  // namespace ck
}  // namespace ckgemm
