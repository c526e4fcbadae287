// ckgemm C++ ABI: what the torch bindings hand to the native backend linked into this build. No torch
// types and no vendor headers, so backend translation units (CUTLASS .cu, CK-tile .hip) and the host
// tests (g++) compile without torch.
//
// Exactly one backend is linked into a build (CUTLASS on CUDA, CK-tile on ROCm); both define the
// functions declared at the bottom. Semantics (every backend): C[g] = A[g] @ op(B[g]) with
//   RC: A [m,k] row-major (lda), B stored [n,k] row-major (ldb), C [m,n] row-major (ldc)
//   RR: A [m,k] row-major (lda), B stored [k,n] row-major (ldb), C [m,n] row-major (ldc)
// Leading dimensions count elements. m == 0 or n == 0: nothing to do. k == 0: C[g] is zero-filled.
// Scaled (Scaling::Row / Block): C = (A * sA) @ op(B * sB) in fp32, rounded once to the output type,
// with scales indexed in the logical [m, k] / [n, k] orientation (see GroupDesc::sa / sb).
//
// Division of labour: the bindings validate (common/validate.h) and route (common/route.h: which
// instance takes each group, which inputs are repacked, which outputs staged) using the backend's
// instance table and acceptance rule below; the backend's run_* only launch what they are given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ckgemm {

// Values match DtypeRule.abi_code in ckgemm/dtypes.py.
enum class DType : int32_t { F16 = 0, BF16 = 1, FP8_E4M3 = 2, FP8_E4M3_FNUZ = 3, I8 = 4 };
// Output element types (ckgemm/backends/routes.py OUT_DTYPES has the same order).
enum class OutType : int32_t { F16 = 0, BF16 = 1, F32 = 2, I32 = 3 };
enum class Layout : int32_t { RC = 0, RR = 1 };
// Scale recipes the kernels see. The tensor recipe (one scale per matrix) reaches them as Row: the
// bindings expand it to per-row / per-column vectors first.
enum class Scaling : int32_t { None = 0, Row = 1, Block = 2 };
constexpr int kScaleBlock = 128;  // Block: 1 x 128 for A, 128 x 128 for B

enum class Status : int32_t {
  Ok = 0,
  NotInstantiated = 1,  // no instance of this id / kind in the build
  Unsupported = 2,      // a group breaks the instance's rules (the router should not have sent it)
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
inline int out_bytes(OutType t) { return t == OutType::F16 || t == OutType::BF16 ? 2 : 4; }
// The unscaled output type of an input type (the dtype table).
inline OutType unscaled_out(DType t) {
  switch (t) {
    case DType::F16: return OutType::F16;
    case DType::BF16: return OutType::BF16;
    case DType::I8: return OutType::I32;
    default: return OutType::F32;
  }
}

// One GEMM group. Scales (float32), per group:
//   Row:   sa[i] for row i of A (m values), sb[j] for column j of C (n values);
//   Block: sa[i * ceil(k/128) + kb] (m x ceil(k/128), compact), sb[nb * ceil(k/128) + kb]
//          (ceil(n/128) x ceil(k/128), compact).
struct GroupDesc {
  const void* a;
  const void* b;
  void* c;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  const float* sa;
  const float* sb;
};

// What kind of GEMM an instance computes.
struct Kind {
  DType dtype;
  OutType out;
  Layout layout;
  Scaling scaling;
};

inline bool operator==(const Kind& x, const Kind& y) {
  return x.dtype == y.dtype && x.out == y.out && x.layout == y.layout && x.scaling == y.scaling;
}

// One compiled kernel instance, as the router sees it. Names say what the instance is (schedule, tile
// M x N x K, cluster), e.g. "coop_128x256x64_c1x2"; ckgemm.last_dispatch() prefixes the backend.
struct InstanceInfo {
  const char* name;
  Kind kind;
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  bool any_output;  // writes any C (no alignment rule on C); otherwise C follows the instance's rules
  bool packed_only = false;  // takes packed calls only (instance_rejects refuses every list group)
};

// Packed (MoE) form: the per-group descriptors are built on the device from group_sizes, with no
// host sync. Group g covers rows [sum(sizes[:g]), sum(sizes[:g+1])) of A and C and uses B[g]. Its
// scales: sa + row * sa_row_stride (Row: stride 1; Block: ceil(k/128)) and sb + g * sb_group_stride
// (Row: n; Block: ceil(n/128) * ceil(k/128)).
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
  const float* sa;
  int64_t sa_row_stride;
  const float* sb;
  int64_t sb_group_stride;
  int32_t* sizes_ok;  // device int32 or null. Non-null: the builder writes 1 when the sizes are valid,
                      // 0 when one is negative or they do not sum to `rows` (every group then runs
                      // with m = 0). Null: invalid sizes print a message and trap the kernel (the
                      // stream's next sync raises), which costs no extra launch.
};

// Device scratch the caller allocates on the launch stream (argument arrays, workspace).
struct Buffers {
  void* device;
  size_t device_bytes;
};

// What a run did, for error messages.
struct RunReport {
  int32_t launched_groups;  // groups handed to the GEMM kernel
  int32_t group;            // first offending group when status != Ok, else -1
  char message[256];        // human-readable detail when status != Ok
};

// ---- implemented by the backend linked into this build ----
const char* backend_name();  // "cutlass" or "ck"
int instance_count();
const InstanceInfo& instance_info(int id);
// THE acceptance rule of an instance: why it cannot take this group as it is ("" when it can). The
// router (common/route.h) and the runner both call it; nothing else restates it.
std::string instance_rejects(int id, const GroupDesc& g);
// The same for a packed call: every group shares N, K, strides and bases, and M varies per group.
std::string instance_rejects_packed(int id, const PackedArgs& p);
// Why no instance of this build computes `kind` ("" when one does), e.g. "block scales need a CK with
// grouped 1x128 x 128x128 scaling; the pinned CK has none". The op refuses such calls with this text.
std::string kind_rejects(const Kind& kind);
// Instances of this kind in the order the backend prefers them for groups of about `m_hint` rows
// (and n, k), `groups` such groups in the call (with n, how many tiles the call makes); writes at most
// `cap` ids to `out` and returns how many it wrote. The router (common/route.h) then moves the instance
// CKGEMM_CONFIG names, if any, to the front.
int preferred_instances(const Kind& kind, int64_t m_hint, int64_t n, int64_t k, int64_t groups, int* out, int cap);
// Whether the current device runs this input dtype ("" when it does, else why not: e.g. the fp8
// flavour a gfx942 does not decode). Cached per device.
std::string device_rejects(DType dtype);

// Scratch for a launch of `groups` groups on instance `id`, and for a packed call on it (which may depend on
// more than the group count: the own fp8 kernel's copy of A's block scales takes rows x k-blocks floats).
size_t list_buffer_bytes(int id, int groups, int sm_count);
size_t packed_buffer_bytes(int id, const PackedArgs& args, int sm_count);
// List form: every group is one the router sent to instance `id` (m, n, k > 0). The descriptors are
// host memory, read during the call (copied into kernel parameters), so the call can be captured in a
// CUDA/HIP graph.
Status run_list(int id, const GroupDesc* groups, int count, const Buffers& buffers, void* stream, int sm_count,
                RunReport* report);
// Packed form on instance `id` (rows, n, k > 0); its argument builder also checks the sizes on the device.
Status run_packed(int id, const PackedArgs& args, const Buffers& buffers, void* stream, int sm_count,
                  RunReport* report);

}  // namespace ckgemm
