// ckgemm C++ ABI: what the torch bindings hand to a native backend. No torch types and no vendor
// headers, so backend translation units (CUTLASS .cu, CK-tile .hip.cpp) compile without torch.
//
// Exactly one backend is linked into a build (CUTLASS on CUDA, CK-tile on ROCm); both define the
// functions declared at the bottom. Semantics (every backend): C[g] = A[g] @ op(B[g]) with
//   RC: A [m,k] row-major (lda), B stored [n,k] row-major (ldb), C [m,n] row-major (ldc)
//   RR: A [m,k] row-major (lda), B stored [k,n] row-major (ldb), C [m,n] row-major (ldc)
// Leading dimensions count elements. m == 0 or n == 0: nothing to do. k == 0: C[g] is zero-filled.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ckgemm {

// Values match DtypeRule.abi_code in ckgemm/dtypes.py.
enum class DType : int32_t { F16 = 0, BF16 = 1, FP8_E4M3 = 2, FP8_E4M3_FNUZ = 3, I8 = 4 };
enum class Layout : int32_t { RC = 0, RR = 1 };

// Kernel configuration, named by what it is for; each backend maps it onto its instances.
//   Large: compute-bound tiles for large per-group M (CUTLASS cooperative / CK compute pipeline).
//   Small: small or unaligned M/N (CUTLASS ping-pong with direct-store epilogue / CK padded tile).
enum class Config : int32_t { Large = 0, Small = 1 };

enum class Status : int32_t {
  Ok = 0,
  NotInstantiated = 1,  // this dtype/layout/config was not compiled into the build
  Unsupported = 2,      // a group breaks the kernel's alignment rules (see RunReport::group)
  InvalidArgument = 3,  // bad descriptor (negative size, leading dimension too small, null pointer)
  BackendError = 4,     // the vendor library refused the arguments or the launch failed
};

inline const char* status_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::NotInstantiated: return "not instantiated in this build";
    case Status::Unsupported: return "group not supported by the kernel";
    case Status::InvalidArgument: return "invalid argument";
    case Status::BackendError: return "backend error";
  }
  return "unknown status";
}

inline int element_bytes(DType t) { return t == DType::F16 || t == DType::BF16 ? 2 : 1; }
inline int output_bytes(DType t) { return t == DType::F16 || t == DType::BF16 ? 2 : 4; }

// One GEMM group, as the list forms give it.
struct GroupDesc {
  const void* a;
  const void* b;
  void* c;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
};

struct Problem {
  DType dtype;
  Layout layout;
  Config config;
};

// Packed (MoE) form: the per-group descriptors are built on the device from group_sizes, with no
// host sync. Group g covers rows [sum(sizes[:g]), sum(sizes[:g+1])) of A and C and uses B[g].
struct PackedArgs {
  const void* a;  // [rows, k], leading dimension lda
  const void* b;  // [groups, n, k] (RC) or [groups, k, n] (RR); b_group_stride elements apart
  void* c;        // [rows, n], leading dimension ldc
  const void* group_sizes;  // device array of `groups` int32 or int64
  int32_t sizes_are_int64;
  int32_t groups;
  int64_t rows, n, k;
  int64_t lda, ldb, ldc;
  int64_t b_group_stride;
  int32_t* sizes_ok;  // device int32 or null. Non-null: the builder writes 1 when the sizes are valid,
                      // 0 when one is negative or they do not sum to `rows` (every group then runs
                      // with m = 0). Null: invalid sizes print a message and trap the kernel (the
                      // stream's next sync raises), which costs no extra launch.
};

// Scratch the caller allocates: device memory (on the launch stream) and pinned host memory that
// stays valid until the stream has consumed it (the list forms stage their arguments there).
struct Buffers {
  void* device;
  size_t device_bytes;
  void* host;
  size_t host_bytes;
};

struct BufferSizes {
  size_t device_bytes;
  size_t host_bytes;
};

// What a run did, for ckgemm.last_dispatch() and for error messages.
struct RunReport {
  int32_t launched_groups;  // groups handed to the GEMM kernel
  int32_t zero_filled;      // k == 0 groups written as zeros
  int32_t skipped;          // m == 0 or n == 0 groups
  int32_t group;            // first offending group when status != Ok, else -1
  char message[256];        // human-readable detail when status != Ok
};

// ---- implemented by the backend linked into this build ----
const char* backend_name();  // "cutlass" or "ck"
bool is_instantiated(const Problem& p);
BufferSizes list_buffer_sizes(const Problem& p, int groups, int sm_count);
Status run_list(const Problem& p, const GroupDesc* groups, int count, const Buffers& buffers, void* stream,
                int sm_count, RunReport* report);
BufferSizes packed_buffer_sizes(const Problem& p, int groups, int sm_count);
Status run_packed(const Problem& p, const PackedArgs& args, const Buffers& buffers, void* stream, int sm_count,
                  RunReport* report);

}  // namespace ckgemm
