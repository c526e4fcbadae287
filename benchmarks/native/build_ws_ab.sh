#!/usr/bin/env bash
# Build one library holding two builds of ckgemm's own fp8 kernel's C entry (ws_fp8_capi.cu), for a same-process
# A/B with ws_fp8_ab.py: the working tree's kernel as ws_fp8_packed, and git revision REV's as ws_fp8_packed_old
# (compiled with the namespace ckgemm renamed, so the two kernels' symbols do not collide). Two libraries in one
# process did not work (tenth session): the second one's launches failed with "invalid argument", most likely
# because, built with default visibility, their kernels' once-per-process shared-memory raise was one
# process-wide symbol (build_support/__init__.py HIDDEN). One library keeps REV's entry reachable without that
# attribute.
#   benchmarks/native/build_ws_ab.sh REV OUT.so    (CUTLASS headers from $CUTLASS_INCLUDE or the nvidia-cutlass wheel)
# CKGEMM_WS_SCALES (default 0) builds both; NEW_FLAGS / OLD_FLAGS add nvcc flags to one side (e.g.
# NEW_FLAGS=-DCKGEMM_WS_SCALES=2 to set a new scale mode against the old one).
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=$1 out=$2
inc=${CUTLASS_INCLUDE:-$(python3 -c 'import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))')}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" csrc benchmarks/native/ws_fp8_capi.cu | tar -x -C "$tmp"
flags=(-std=c++17 -O3 -c -Xcompiler -fPIC --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a
       -DCKGEMM_WS_SCALES=${CKGEMM_WS_SCALES:-0} -I"$inc")
nvcc "${flags[@]}" ${OLD_FLAGS:-} -Dckgemm=ckgemm_old -Dws_fp8_packed=ws_fp8_packed_old -I"$tmp/csrc" -o "$tmp/old.o" \
  "$tmp/benchmarks/native/ws_fp8_capi.cu" &
old_pid=$!
nvcc "${flags[@]}" ${NEW_FLAGS:-} -Icsrc -o "$tmp/new.o" benchmarks/native/ws_fp8_capi.cu
wait "$old_pid"
nvcc -shared -gencode=arch=compute_90a,code=sm_90a -o "$out" "$tmp/old.o" "$tmp/new.o"
