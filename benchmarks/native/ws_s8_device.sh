#!/usr/bin/env bash
# On a lent GPU (wheels in .whl/: nvidia-cutlass): build the C entry of ckgemm's own int8 RR kernel
# (ws_s8_capi.cu) under each build switch of csrc/cuda/ws_s8_rr_rules.h and ws_s8_rr.cuh and run the stages named,
# logs under $OUT:
#   A  the register form (every producer thread fences its stores: fence.proxy.async)   B  no fence (unsafe: timing only)
#   C  the next step's loads after the fence        D  the consumers fence after the full barrier
#   E  the producers' release fence restricted to shared::cta    F  E and the consumers' matching acquire fence
#   G  the TMA form (ws_s8_rr_tma.cuh: B by TMA, transposed in shared memory), rings In 3 / Bt 2
#   H  the TMA form, rings In 2 / Bt 3
#   S  the register-operand form (ws_s8_rr_rs.cuh: B by TMA, read by ldmatrix into the wgmmas' register operand),
#      tiles of 128 x 256    T  the register-operand form, tiles of 256 x 128
#   O  the default build, the one the op launches: the register-operand form, its tile by rs_block_m
# Stages: build (the extension with int8 instances only, unless ckgemm/_C*.so is there: the op's forms in perf),
# check (each build exact on the check shapes), perf (the builds check passed, or all without it, on the decode,
# 4096-token and prefill cases beside the op's RR per call, prepacked and RC: needs the extension, built or carried
# as ckgemm/_C*.so), sass (Nsight Compute's per-instruction warp states of build $WS_S8_PROFILE (default A) on
# DeepSeek-V3 prefill, CSV of the source page), dump (cuobjdump SASS of every build), op (the op's route to the
# kernel: tests/test_gpu_own_s8.py, the prepack and capped-SM paths, memcheck and racecheck; needs the extension
# built from this tree). One process per build and stage. WS_S8_BUILDS picks builds (default "A B C D E F G H S T O").
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/.out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/benchmarks PYTHONUNBUFFERED=1
C=/tmp/site/cutlass_library/source/include
R="-DCKGEMM_S8_FORM=0"  # the register form (A-F); O is the default build
declare -A FLAGS=([A]="$R" [B]="$R -DCKGEMM_S8_FENCE=0" [C]="$R -DCKGEMM_S8_LOADS_AFTER=1" [D]="$R -DCKGEMM_S8_FENCE=2"
                  [E]="$R -DCKGEMM_S8_FENCE=3" [F]="$R -DCKGEMM_S8_FENCE=4"
                  [G]="-DCKGEMM_S8_FORM=1 -DCKGEMM_S8_TMA_IN=3 -DCKGEMM_S8_TMA_BT=2" [H]="-DCKGEMM_S8_FORM=1"
                  [S]="-DCKGEMM_S8_RS_BM=128" [T]="-DCKGEMM_S8_RS_BM=256" [O]="")
BUILDS=${WS_S8_BUILDS:-A B C D E F G H S T O}
for v in $BUILDS; do
  nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
    ${FLAGS[$v]} -Icsrc -I$C -o /tmp/libws_s8_$v.so benchmarks/native/ws_s8_capi.cu > "$OUT/lib_$v.log" 2>&1 &
done
wait
# One build per process (bench_ws_s8_rr.py's docstring says why).
BENCH="python3 benchmarks/native/bench_ws_s8_rr.py"
TIMED=$BUILDS  # check narrows it to the exact builds (the bench itself times none that fails a check)
PR=${WS_S8_PROFILE:-A}
for stage in "$@"; do
  case $stage in
    build) CKGEMM_DTYPES=int8 TORCH_CUDA_ARCH_LIST=9.0a OUT="$OUT" bash scripts/device_suite.sh build > "$OUT/build.log" 2>&1
           echo "build rc=$?"; tail -3 "$OUT/build.log" ;;
    check)  # one process and time limit per build, so that a hang costs only its own; perf then times the exact ones
      TIMED=""
      for v in $BUILDS; do
        timeout 90 $BENCH --lib $v=/tmp/libws_s8_$v.so --check-only > "$OUT/check_$v.log" 2>&1
        rc=$?; echo "check $v rc=$rc"; grep False "$OUT/check_$v.log"
        [ $rc -eq 0 ] && TIMED+=" $v"
      done ;;
    perf)  # each build beside the op's forms, in its own process
      for v in $TIMED; do
        timeout ${WS_S8_PERF_TIMEOUT:-120} $BENCH --lib $v=/tmp/libws_s8_$v.so --iters 10 > "$OUT/perf_$v.log" 2>&1
        echo "perf $v rc=$?"; grep -E "own RR|op RR per call|op RC" "$OUT/perf_$v.log"
      done ;;
    sass)
      timeout 200 ncu --clock-control none -k regex:grouped_s8 --launch-skip 1 --launch-count 1 --section SourceCounters \
        --section WarpStateStats --section SpeedOfLight --import-source no -f -o "$OUT/sass_$PR" \
        $BENCH --lib $PR=/tmp/libws_s8_$PR.so --profile --cases prefill \
        > "$OUT/sass_$PR.log" 2>&1
      ncu -i "$OUT/sass_$PR.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$PR.csv" 2>> "$OUT/sass_$PR.log"
      ncu -i "$OUT/sass_$PR.ncu-rep" --page details > "$OUT/sass_${PR}_details.txt" 2>> "$OUT/sass_$PR.log"
      wc -c "$OUT/sass_$PR.csv" ;;
    op)  # the op's route to the kernel (needs the extension built from this tree): its GPU tests, the prepack and
      # capped-SM paths, memcheck over its tests, racecheck on one call
      g() { local n=$1 s=$2; shift 2; timeout $s "$@" > "$OUT/$n.log" 2>&1; echo "$n rc=$?"; tail -4 "$OUT/$n.log"; }
      g op_own 120 python3 -m pytest -q -ra -m gpu tests/test_gpu_own_s8.py
      g op_paths 120 python3 -m pytest -q -ra -m gpu tests/test_gpu_paths.py -k "prepack or sm"
      g op_memcheck 240 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -q -m gpu \
        tests/test_gpu_own_s8.py -k "guard or replays or refuses or sizes32"
      g op_racecheck 200 compute-sanitizer --tool racecheck --error-exitcode 1 python3 -m pytest -q -m gpu \
        tests/test_gpu_own_s8.py -k "guard or (tile128 and 2)" ;;
    dump) for v in $BUILDS; do cuobjdump -sass /tmp/libws_s8_$v.so > "$OUT/s8_$v.sass" 2>&1; done ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
