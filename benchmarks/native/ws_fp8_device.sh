#!/usr/bin/env bash
# On a lent H200 (wheels in .whl/: nvidia-cutlass, sgl-deep-gemm, apache-tvm-ffi): build the C entry of
# ckgemm's own fp8 kernel in two flavours and run the stages named, logs under $OUT.
#   libws_0 / 2  block scales by CKGEMM_WS_SCALES 0 (a producer warp's cp.async), 2 (DeepGEMM's feed: the TMA
#                thread's bulk copy of an MN-major copy); WS_LIBS picks (default both)
# Stages: check (correctness), perf (all cases, peers), perf2 (the same with libws_$WS_MODE; variants
# $WS_VARIANTS), modes (block timing of every built flavour on the four compute-bound cases), stalls (Nsight
# Compute stall reasons, clock and pipe counts of unscaled, row, block and DeepGEMM's block kernel on the same
# inputs, one launch each), sass (Nsight Compute's per-instruction warp-state samples of the block kernel
# and of DeepGEMM's, as CSV of the source page: which SASS instructions the warps wait on), sanitize (compute-sanitizer memcheck over small check shapes, racecheck on one), abck
# (libws_$WS_MODE against the op's own packed call: needs the extension, e.g. carried as ckgemm/_C*.so).
# WS_MODE is 0 unless set. (A third flavour, TMA boxes of scales, tripled the
# block kernel's DRAM reads and was removed: docs/PERF_2026-12-02.md, ninth session, run 8.) A same-process A/B of
# two revisions of the kernel: build_ws_ab.sh and ws_fp8_ab.py.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/.out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dg
C=/tmp/site/cutlass_library/source/include
LIBS=${WS_LIBS:-0 2}
for v in $LIBS; do
  flag=-DCKGEMM_WS_SCALES=$v
  nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
    $flag -Icsrc -I$C -o /tmp/libws_$v.so benchmarks/native/ws_fp8_capi.cu || exit 1
done
B="python3 benchmarks/native/bench_ws_fp8.py"
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum'
M+=',sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_alu.sum'
for stage in "$@"; do
  case $stage in
    check)
      for v in $LIBS; do
        timeout 200 $B --lib /tmp/libws_$v.so --check-only | grep -v PASS | sed "s/^/lib $v: /"
      done ;;
    perf) timeout 400 $B --lib /tmp/libws_0.so --iters 15 | tee "$OUT/perf.log" ;;
    sass)
      for who in "grouped_fp8 " "sm90_fp8_gemm --profile-peer"; do
        set -- $who
        timeout 150 ncu --clock-control none -k regex:$1 --launch-skip 2 --launch-count 1 --section SourceCounters \
          --section WarpStateStats --section SpeedOfLight --import-source no -f -o "$OUT/sass_$1" \
          $B --lib /tmp/libws_0.so --profile ${2:-} --cases DeepSeek-V3_prefill --recipes block --variants 192a \
          > "$OUT/sass_$1.log" 2>&1
        ncu -i "$OUT/sass_$1.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$1.csv" 2>> "$OUT/sass_$1.log"
        ncu -i "$OUT/sass_$1.ncu-rep" --page details > "$OUT/sass_$1_details.txt" 2>> "$OUT/sass_$1.log"
        wc -c "$OUT/sass_$1.csv"
      done ;;
    sanitize)  # memcheck over small check shapes, racecheck on one small case
      CS="compute-sanitizer --error-exitcode 1"
      timeout 200 $CS --tool memcheck $B --lib /tmp/libws_0.so --check-only --check-cases 0,3,5 | grep -v PASS | tail -4
      timeout 150 $CS --tool racecheck $B --lib /tmp/libws_0.so --check-only --recipes block --variants 192a,128b \
        --check-cases 0 | grep -v PASS | tail -4 ;;
    abck) timeout 240 $B --lib /tmp/libws_${WS_MODE:-0}.so --skip-checks --variants 192a --iters 10 --vs-ckgemm | tee "$OUT/abck.log" ;;
    perf2) timeout 240 $B --lib /tmp/libws_${WS_MODE:-0}.so --skip-checks --variants ${WS_VARIANTS:-128b,192a} --iters 10 \
             | tee "$OUT/perf2.log" ;;
    modes) for v in $LIBS; do timeout 100 $B --lib /tmp/libws_$v.so --recipes block --variants 128b,192a \
             --cases DeepSeek-V3_prefill,DeepSeek-V3_down,Mixtral_prefill,128_experts --iters 10 --skip-checks | sed "s/^/lib $v: /"; done ;;
    stalls)
      # the last run profiles DeepGEMM's kernel (sm90_fp8_gemm_1d2d_impl) on the same block-scaled inputs
      for run in "0 none 192a grouped_fp8" "0 row 192a grouped_fp8" "0 block 192a grouped_fp8" \
                 "1 block 192a grouped_fp8" "0 block 192a sm90_fp8_gemm"; do
        set -- $run
        peer=""; [ "$4" = sm90_fp8_gemm ] && peer=--profile-peer
        timeout 120 ncu --clock-control none -k regex:$4 --launch-skip 2 --launch-count 1 --metrics "$M" \
          --csv --page raw $B --lib /tmp/libws_$1.so --profile $peer --cases DeepSeek-V3_prefill --recipes $2 \
          --variants $3 > "$OUT/raw_$1_$2_$3_$4.csv" 2> "$OUT/err_$1_$2_$3_$4.log"
      done
      python3 - "$OUT" <<'PY'
import csv, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/raw_*.csv")):
    rows = list(csv.reader(l for l in open(f) if l.startswith('"')))
    if len(rows) < 3:
        print(os.path.basename(f), "no data"); continue
    d = dict(zip(rows[0], rows[2]))
    top = sorted(((float(v.replace(",", "")), k.split("stalled_")[1].split("_per")[0]) for k, v in d.items()
                  if "stalled_" in k and v.replace(",", "").replace(".", "").isdigit()), reverse=True)[:8]
    print(os.path.basename(f), "time", d.get("gpu__time_duration.sum"),
          "clock", d.get("sm__cycles_elapsed.avg.per_second"), "inst", d.get("smsp__inst_executed.sum"),
          "fma", d.get("sm__inst_executed_pipe_fma.sum"), "alu", d.get("sm__inst_executed_pipe_alu.sum"),
          "| " + ", ".join(f"{k} {v:.2f}" for v, k in top))
PY
      ;;
  esac
done
