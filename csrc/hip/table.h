// The CK backend's instance table: one entry per (kind, compiled kernel). What the ABI's instance ids
// index (registry.cpp builds the real table from instances.inc; the host tests build fakes). Plain C++.
#pragma once

#include "../ckgemm.h"
#include "instance.h"

namespace ckgemm {
namespace ck {

struct Entry {
  InstanceInfo info;  // what the router sees: name, kind, tile
  TileId tile;
  const Instance* inst;  // the compiled kernel (one fp8 kernel serves two entries: both fp8 kinds)
};

struct Table {
  const Entry* entries;
  int count;
  const Entry* at(int id) const { return id >= 0 && id < count ? &entries[id] : nullptr; }
};

// The table of this build (registry.cpp).
const Table& instance_table();

inline InstanceInfo info_of(const TileTraits& t, const Kind& kind) {
  return InstanceInfo{t.name, kind, t.m_tile, t.n_tile, t.k_tile, 1, 1, false};
}

}  // namespace ck
}  // namespace ckgemm
