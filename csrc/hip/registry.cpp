// The instance table of this build (instances.inc, filtered by the CKGEMM_CK_<DTYPE> macros) and the
// host-only half of the ckgemm ABI (csrc/ckgemm.h) over it: instance ids, infos, acceptance rules,
// kind refusals, preference order and scratch sizes. Plain C++ with no HIP or CK headers; the
// device-facing half (device_rejects, run_list, run_packed) is runner.hip.
#include <string>
#include <vector>

#include "../instance_stages.h"
#include "instance.h"
#include "rules.h"
#include "selection.h"
#include "table.h"

namespace ckgemm {
namespace ck {

namespace {

std::vector<Entry> build_table() {
  std::vector<Entry> entries;
  auto add = [&](const Kind& kind, TileId tile, const Instance* inst) {
    entries.push_back(Entry{info_of(inst->traits, kind), tile, inst});
    if (kind.dtype == DType::FP8_E4M3_FNUZ)  // the same kernel under the OCP fp8 kind (instance.h)
      entries.push_back(Entry{info_of(inst->traits, Kind{DType::FP8_E4M3, kind.out, kind.layout, kind.scaling}),
                              tile, inst});
  };
#define CKGEMM_INSTANCE(file, dtype, out, layout, scaling, tile)                                    \
  add(Kind{DType::dtype, OutType::out, Layout::layout, Scaling::scaling}, TileId::tile,             \
      instance<DType::dtype, OutType::out, Layout::layout, Scaling::scaling, TileId::tile>());
#include "instances.inc"
#undef CKGEMM_INSTANCE
  return entries;
}

std::string no_such_instance(int id) {
  return "no CK instance with id " + std::to_string(id) + " (this build has " +
         std::to_string(instance_table().count) + ")";
}

size_t group_args_bytes(int id, int groups) {
  return instance_table().at(id) != nullptr && groups > 0 ? static_cast<size_t>(groups) * sizeof(GroupArgs) : 0;
}

}  // namespace

const Table& instance_table() {
  static const std::vector<Entry> entries = build_table();
  static const Table table{entries.data(), static_cast<int>(entries.size())};
  return table;
}

}  // namespace ck

const char* backend_name() { return "ck"; }

int instance_count() { return ck::instance_table().count; }

// CK-tile's pipelines fix their own prefetch depth inside the pipeline type; not reported here.
int instance_stages(int) { return 0; }

const InstanceInfo& instance_info(int id) {
  static const InstanceInfo none{"(no such CK instance)", Kind{DType::F16, OutType::F16, Layout::RC, Scaling::None},
                                 0, 0, 0, 0, 0, false};
  const ck::Entry* e = ck::instance_table().at(id);
  return e != nullptr ? e->info : none;
}

std::string instance_rejects(int id, const GroupDesc& g) {
  const ck::Entry* e = ck::instance_table().at(id);
  return e != nullptr ? ck::entry_rejects(*e, g) : ck::no_such_instance(id);
}

std::string instance_rejects_packed(int id, const PackedArgs& p) {
  const ck::Entry* e = ck::instance_table().at(id);
  return e != nullptr ? ck::entry_rejects_packed(*e, p) : ck::no_such_instance(id);
}

std::string kind_rejects(const Kind& kind) { return ck::kind_rejects(ck::instance_table(), kind); }

int preferred_instances(const Kind& kind, int64_t m_hint, int64_t, int64_t, int64_t, int* out, int cap) {
  return out == nullptr || cap <= 0 ? 0 : ck::preferred(ck::instance_table(), kind, m_hint, out, cap);
}

// One GroupArgs record per group in device scratch, for both forms (the list form's descriptors
// travel as kernel parameters: no host staging).
size_t list_buffer_bytes(int id, int groups, int) { return ck::group_args_bytes(id, groups); }
size_t packed_buffer_bytes(int id, const PackedArgs& args, int) { return ck::group_args_bytes(id, args.groups); }

}  // namespace ckgemm
