// The native validator (common/validate.h) and router (common/route.h) with the real CUTLASS instance
// table and acceptance rule (cuda/rules.cpp), as a C library for tests/test_native_rules.py and
// tests/test_native_routes.py (ctypes; tests/native_probe.py builds and loads it), built with g++: so the
// Python tests run against the C++ rules themselves, not a restatement.
#include <cstring>
#include <string>

#include "common/route.h"
#include "common/validate.h"

using namespace ckgemm;

namespace {
thread_local std::string g_text;
const char* keep(const std::string& s) {
  g_text = s;
  return g_text.c_str();
}
}  // namespace

extern "C" {

int probe_sizeof_meta() { return static_cast<int>(sizeof(TensorMeta)); }
int probe_sizeof_desc() { return static_cast<int>(sizeof(GroupDesc)); }

// Rule id of the first rule broken (0: accepted); *group gets the group (-1: the call); *out the output
// type and *recipe the recipe of an accepted call.
int probe_validate_list(const TensorMeta* a, int na, const TensorMeta* b, int nb, const TensorMeta* c, int nc,
                        const TensorMeta* sa, int nsa, const TensorMeta* sb, int nsb, int scales_given, int layout,
                        int out_dtype, int grad, int family, int* group, int* out, int* recipe) {
  CallFacts facts;
  const Verdict v = validate_list(a, na, b, nb, c, nc, sa, nsa, sb, nsb, scales_given, layout, out_dtype, grad != 0,
                                  static_cast<Family>(family), &facts);
  *group = v.group;
  *out = static_cast<int>(facts.out);
  *recipe = static_cast<int>(facts.recipe);
  return static_cast<int>(v.rule);
}

int probe_validate_packed(const TensorMeta* a, const TensorMeta* b, const TensorMeta* sizes, const TensorMeta* out,
                          const TensorMeta* sa, const TensorMeta* sb, int layout, int out_dtype, int grad, int family,
                          const int64_t* host_sizes, int* group, int* out_type, int* recipe) {
  CallFacts facts;
  const Verdict v = validate_packed(*a, *b, *sizes, out, sa, sb, layout, out_dtype, grad != 0,
                                    static_cast<Family>(family), host_sizes, &facts);
  *group = v.group;
  *out_type = static_cast<int>(facts.out);
  *recipe = static_cast<int>(facts.recipe);
  return static_cast<int>(v.rule);
}

int probe_instance_count() { return instance_count(); }
const char* probe_instance_name(int id) { return instance_info(id).name; }
void probe_instance_kind(int id, int* fields) {
  const InstanceInfo& i = instance_info(id);
  const int values[] = {static_cast<int>(i.kind.dtype), static_cast<int>(i.kind.out), static_cast<int>(i.kind.layout),
                        static_cast<int>(i.kind.scaling), i.tile_m, i.tile_n, i.tile_k, i.cluster_m, i.cluster_n,
                        i.any_output ? 1 : 0};
  std::memcpy(fields, values, sizeof(values));
}
const char* probe_instance_rejects(int id, const GroupDesc* g) { return keep(instance_rejects(id, *g)); }
const char* probe_kind_rejects(int dtype, int out, int layout, int scaling) {
  return keep(kind_rejects({static_cast<DType>(dtype), static_cast<OutType>(out), static_cast<Layout>(layout),
                            static_cast<Scaling>(scaling)}));
}

// The route of one list-form group, one of `groups` with work in the call: returns the route code; fills
// the padded K and N and, when no instance can take the group, the reason (returned through the text buffer).
int probe_route(int dtype, int out, int layout, int scaling, const GroupDesc* g, int64_t groups, int64_t* k_padded,
                int64_t* n_padded, const char** why) {
  const Kind kind{static_cast<DType>(dtype), static_cast<OutType>(out), static_cast<Layout>(layout),
                  static_cast<Scaling>(scaling)};
  const Route r = route_list_group(kind, *g, groups,
                                   [](int id, const GroupDesc& d) { return instance_rejects(id, d); });
  *k_padded = r.k_padded;
  *n_padded = r.n_padded;
  *why = keep(r.why);
  return r.code;
}

// The route of a packed call of `groups` groups over `rows` rows with every base aligned (C's may be offset
// by c_off bytes and its leading dimension given): as run_packed_on_device routes it (route_packed).
int probe_route_packed(int dtype, int out, int layout, int scaling, int groups, int64_t rows, int64_t n, int64_t k,
                       int64_t c_off, int64_t ldc, const char** why) {
  const Kind kind{static_cast<DType>(dtype), static_cast<OutType>(out), static_cast<Layout>(layout),
                  static_cast<Scaling>(scaling)};
  const auto at = [](int64_t offset) { return reinterpret_cast<void*>((int64_t{1} << 32) + offset); };
  const int64_t ldb = layout == 0 ? k : n, b_rows = layout == 0 ? n : k;
  const bool scaled = scaling != 0;
  PackedArgs p{at(0), at(1 << 28), at((2 << 28) + c_off), at(3 << 28), 0, groups, rows, n, k, k, ldb, ldc,
               groups > 1 ? b_rows * ldb : 0, scaled ? static_cast<const float*>(at(4 << 28)) : nullptr, 1,
               scaled ? static_cast<const float*>(at(5 << 28)) : nullptr, n, nullptr};
  const Route r = route_packed(kind, p);
  *why = keep(r.why);
  return r.code;
}

int probe_route_flags_of(int code) { return route_flags(code); }
int probe_route_instance_of(int code) { return route_instance(code); }
int probe_route_kind_of(int code) { return route_kind(code); }
}
