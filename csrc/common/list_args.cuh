// Device-side argument building for the list forms, shared by every backend: the host's per-group
// descriptors travel as kernel parameters (by value, in chunks that fit the 4 KiB parameter space of
// every CUDA/HIP target), and one thread per group hands its descriptor to the backend's "sink" (the
// same sinks build_packed_groups feeds). No pinned staging and no host-to-device copy: the launch
// captures the descriptors, so a list-form call can be captured in a CUDA/HIP graph and replayed.
//
// Portable CUDA/HIP C++ (no runtime headers): included by the CUDA runner and by the HIP runner.
#pragma once

#include "../ckgemm.h"

namespace ckgemm {

constexpr int kListChunk = 32;  // 32 descriptors of 88 bytes: 2.8 KiB of kernel parameters

struct ListChunk {
  GroupDesc groups[kListChunk];
  int first;  // index of groups[0] in the call (the sink's group index)
  int count;  // valid entries
};

template <class Sink>
__global__ void __launch_bounds__(kListChunk) build_list_groups(ListChunk chunk, Sink sink) {
  const int i = threadIdx.x;
  if (i < chunk.count) sink(chunk.first + i, chunk.groups[i]);
}

// Host side: calls launch(chunk) once per chunk of `count` descriptors; returns the first non-zero
// status the launcher returns (its launch error), else 0.
template <class Launch>
int for_each_list_chunk(const GroupDesc* groups, int count, Launch&& launch) {
  for (int first = 0; first < count; first += kListChunk) {
    ListChunk chunk;
    chunk.first = first;
    chunk.count = count - first < kListChunk ? count - first : kListChunk;
    for (int i = 0; i < chunk.count; ++i) chunk.groups[i] = groups[first + i];
    const int err = launch(chunk);
    if (err != 0) return err;
  }
  return 0;
}

}  // namespace ckgemm
