// The data movement of ckgemm's own int8 RR kernels (csrc/cuda/ws_s8_layout.h, the arithmetic the kernels run),
// checked on the host against definitions written here independently:
//   - the tiles' offsets are TMA's 128-byte swizzle of the dense layout (address bits 4-6 ^= bits 7-9), K-major for
//     the tile the wgmmas read (as the fp8 kernel's TMA writes it), N-major halves for the TMA form's raw tile;
//   - byte_perm's host form and the 4 x 4 transpose give the plain byte transpose;
//   - both forms' threads, moving their blocks as the kernels do, write every byte of a random 128 x 256 tile to
//     its transposed place exactly once;
//   - in every shared-memory load and store of 16 bytes, the eight lanes of a phase hit eight different chunks of
//     128 bytes (no bank conflict);
//   - the register-operand form's fragments: ldmatrix .x4 .trans simulated from its PTX definition on the raw
//     tile, then the byte permutes, give every lane the s8 wgmma A fragment (CuTe's ALayout_64x32) of the columns
//     rs_column_of_row names, and each of its 8 x 8 matrices reads eight different chunks.
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "check.h"
#include "cuda/ws_s8_layout.h"

using namespace ckgemm::ws::s8;

namespace {

constexpr int kK = 128, kN = 256, kTileBytes = kK * kN;

int sw128(int off) { return off ^ (((off >> 7) & 7) << 4); }

void check_offsets() {
  for (int n = 0; n < kN; ++n)
    for (int kc = 0; kc < 8; ++kc) CHECK_EQ(kmajor_offset(n, kc), sw128(n * 128 + kc * 16));
  for (int k = 0; k < kK; ++k)
    for (int nc = 0; nc < 16; ++nc) CHECK_EQ(raw_offset(k, nc), sw128((nc / 8) * kRawHalfBytes + k * 128 + (nc % 8) * 16));
}

uint8_t byte_of(uint32_t w, int i) { return static_cast<uint8_t>(w >> (8 * i)); }

void check_transpose(std::mt19937& rng) {
  for (int trial = 0; trial < 2000; ++trial) {
    uint32_t x[4], y[4];
    for (auto& v : x) v = rng();
    transpose4(x[0], x[1], x[2], x[3], y);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) CHECK_EQ(byte_of(y[c], r), byte_of(x[r], c));
  }
}

// The 16 bytes of B (K x N, row-major) at row k, columns n0 .. n0 + 15, as four words.
void row_words(const std::vector<uint8_t>& b, int k, int n0, uint32_t (&w)[4]) {
  std::memcpy(w, &b[k * kN + n0], 16);
}

// One thread's block moved as the kernels move it: its rows (from B or the raw tile), then column by column,
// 16 bytes of K stored at kmajor_offset. `stores` collects the 16-byte store offsets in issue order.
void move_block(const uint32_t (&rows)[16][4], Block blk, std::vector<uint8_t>& tile, std::vector<int>& written,
                std::vector<int>* stores) {
  for (int c = 0; c < 4; ++c) {
    uint32_t y[4][4];
    transpose_columns(rows, c, y);
    for (int j = 0; j < 4; ++j) {
      const int off = kmajor_offset(blk.nc * 16 + 4 * c + j, blk.kc);
      for (int q = 0; q < 4; ++q) std::memcpy(&tile[off + 4 * q], &y[q][j], 4);
      for (int x = 0; x < 16; ++x) ++written[off + x];
      if (stores) stores->push_back(off);
    }
  }
}

void check_tile(const std::vector<uint8_t>& b, const std::vector<uint8_t>& tile, const std::vector<int>& written,
                const char* form) {
  int wrong = 0, twice = 0;
  for (int n = 0; n < kN; ++n)
    for (int k = 0; k < kK; ++k) wrong += tile[kmajor_offset(n, k / 16) + k % 16] != b[k * kN + n];
  for (int w : written) twice += w != 1;
  CHECK_EQ(wrong, 0);
  CHECK_EQ(twice, 0);
  if (wrong || twice) std::fprintf(stderr, "%s: %d bytes wrong, %d not written exactly once\n", form, wrong, twice);
}

// offsets[thread][instruction]: for each instruction and each phase of eight lanes of a warp, eight chunks.
void check_phases(const std::vector<std::vector<int>>& offsets, const char* what) {
  const int threads = static_cast<int>(offsets.size()), count = static_cast<int>(offsets[0].size());
  for (int i = 0; i < count; ++i)
    for (int t0 = 0; t0 < threads; t0 += 8) {
      std::set<int> chunks;
      for (int t = t0; t < t0 + 8; ++t) chunks.insert((offsets[t][i] >> 4) & 7);
      if (chunks.size() != 8) std::fprintf(stderr, "%s: instruction %d, lanes %d..%d share a bank\n", what, i, t0, t0 + 7);
      CHECK_EQ(static_cast<int>(chunks.size()), 8);
    }
}

void check_register_form(const std::vector<uint8_t>& b) {
  std::vector<uint8_t> tile(kTileBytes, 0);
  std::vector<int> written(kTileBytes, 0);
  std::vector<std::vector<int>> stores(128);
  for (int t = 0; t < 128; ++t) {
    const Block blk = register_block(t);
    uint32_t rows[16][4];
    for (int i = 0; i < 16; ++i) row_words(b, blk.kc * 16 + i, blk.nc * 16, rows[i]);
    move_block(rows, blk, tile, written, &stores[t]);
  }
  check_tile(b, tile, written, "register form");
  check_phases(stores, "register form stores");
}

// The raw tile as TMA writes it: two N halves of 128 (K) x 128 (N), each row swizzled.
std::vector<uint8_t> raw_tile(const std::vector<uint8_t>& b) {
  std::vector<uint8_t> raw(kTileBytes, 0);
  for (int k = 0; k < kK; ++k)
    for (int n = 0; n < kN; ++n) raw[sw128((n / 128) * kRawHalfBytes + k * 128 + n % 128)] = b[k * kN + n];
  return raw;
}

void check_tma_form(const std::vector<uint8_t>& b) {
  const std::vector<uint8_t> raw = raw_tile(b);
  std::vector<uint8_t> tile(kTileBytes, 0);
  std::vector<int> written(kTileBytes, 0);
  std::vector<std::vector<int>> loads(64), stores(64);
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 64; ++t) {
      const Block blk = tma_block(t, h);
      uint32_t rows[16][4];
      for (int i = 0; i < 16; ++i) {
        const int off = raw_offset(blk.kc * 16 + i, blk.nc);
        std::memcpy(rows[i], &raw[off], 16);
        loads[t].push_back(off);
      }
      move_block(rows, blk, tile, written, &stores[t]);
    }
  check_tile(b, tile, written, "TMA form");
  check_phases(loads, "TMA form loads");
  check_phases(stores, "TMA form stores");
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 as PTX defines it: matrix m's row r is the 16 bytes at lane
// 8m + r's address (eight 16-bit elements); with .trans, lane (g, q) gets elements g of rows 2q and 2q + 1.
void ldsm_x4_trans(const std::vector<uint8_t>& smem, const int (&addr)[32], int lane, uint32_t (&d)[4]) {
  const int g = lane / 4, q = lane % 4;
  for (int m = 0; m < 4; ++m) {
    const uint8_t* r0 = &smem[addr[8 * m + 2 * q]];
    const uint8_t* r1 = &smem[addr[8 * m + 2 * q + 1]];
    d[m] = r0[2 * g] | r0[2 * g + 1] << 8 | r1[2 * g] << 16 | static_cast<uint32_t>(r1[2 * g + 1]) << 24;
  }
}

void check_rs_form(const std::vector<uint8_t>& b) {
  const std::vector<uint8_t> raw = raw_tile(b);
  std::vector<std::vector<int>> loads(32);
  for (int nc = 0; nc < 16; ++nc)
    for (int kk = 0; kk < kK / 32; ++kk) {
      int addr[32];
      for (int l = 0; l < 32; ++l) {
        addr[l] = raw_offset(32 * kk + rs_ldsm_k(l), nc);
        loads[l].push_back(addr[l]);
      }
      int wrong = 0;
      for (int l = 0; l < 32; ++l) {
        uint32_t d[4], a[4];
        ldsm_x4_trans(raw, addr, l, d);
        rs_fragment(d, rs_select(l, 0), rs_select(l, 1), a);
        const int g = l / 4, q = l % 4;
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {  // ALayout_64x32: register i byte j is row g + 8 (i % 2), K 4q + j + 16 (i / 2)
            const int row = g + 8 * (i % 2), k = 32 * kk + 4 * q + j + 16 * (i / 2);
            wrong += byte_of(a[i], j) != b[k * kN + 16 * nc + rs_column_of_row(row)];
          }
      }
      CHECK_EQ(wrong, 0);
      if (wrong) std::fprintf(stderr, "register-operand form: chunk %d, K step %d: %d bytes wrong\n", nc, kk, wrong);
    }
  check_phases(loads, "register-operand form loads");
  std::set<int> columns;
  for (int r = 0; r < 16; ++r) columns.insert(rs_column_of_row(r));
  CHECK_EQ(static_cast<int>(columns.size()), 16);
  CHECK_EQ(*columns.rbegin(), 15);
}

}  // namespace

int main() {
  std::mt19937 rng(20261205);
  check_offsets();
  check_transpose(rng);
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<uint8_t> b(kTileBytes);
    for (auto& v : b) v = static_cast<uint8_t>(rng());
    check_register_form(b);
    check_tma_form(b);
    check_rs_form(b);
  }
  std::printf("test_ws_s8_layout: %d checks, %d failures\n", host_test::checks(), host_test::failures());
  return host_test::failures() == 0 ? 0 : 1;
}
