#!/usr/bin/env bash
# The GPU suite in one command, for a lent GPU box with no registry access (see docs/PERF.md for how
# it is called). Stages, in the order given:
#   build     compile the extension in place (skipped when ckgemm/_C*.so exists); keeps .ninja_log and
#             a debug-stripped copy of the .so in $OUT (carry it back as ckgemm/_C*.so to skip the build)
#   test      the whole pytest suite (GPU tests included) against the built extension
#   gputest   only the tests marked gpu (scaled API, native paths and rules included)
#   smoke     op_tests/test_grouped_gemm.py --smoke and --moe, and each with --quant row and block
#   bench     benchmarks/bench_grouped_gemm.py --graph --sync (JSON + markdown)
#   scaled    benchmarks/bench_scaled.py (block vs DeepGEMM, row vs _scaled_grouped_mm; needs the wheels)
#   host      benchmarks/bench_host.py (end to end vs graph, profiler breakdown, host loop)
#   repack    benchmarks/bench_repack.py (transpose bandwidth; 8-bit RR per call / prepacked / RC)
#   tiles     benchmarks/bench_tiles.py (16-bit instances forced one by one beside the peers, round-robin), on
#             $TILES_CASES (default: all) with $TILES_INSTANCES (default: every compute-bound instance)
#   units     benchmarks/bench_units.py --units dynamic,static (the own 16-bit kernel's units drawn and by stride,
#             and the wave tail, on 8 x 4096^3 and 8 x 4224 x 4096^2)
#   l2        benchmarks/bench_env.py over CKGEMM_WS_L2's $L2_VALUES (default: the default nnf first, as the others'
#             reference, then no hint, A evict_last, B evict_last, both) on $L2_CASES (default: every benchmark case
#             but decode) in $L2_DTYPES (default fp8,bf16): the own kernel's L2 policies against each other and the
#             peers
#   figures   issue 10's proof set, each part under $FIGURE_TIMEOUT (default 200 s): bench_grouped_gemm.py --graph
#             --sync on 16-bit and on unscaled fp8, one part per case (uniform, Mixtral, DeepSeek-V3 prefill), every
#             dtype on DeepSeek-V3 decode, then bench_repack.py (follow it with pack: more than 8 files). It took
#             about 6 minutes on an H100, where 16-bit's three cases in one part overran 170 s
#             (docs/PERF_2026-12-06i.md)
#   swapab    benchmarks/bench_swapab.py (each 8-bit SwapAB decode tile forced: decode with and without the
#             L2 flush, and a sweep of group counts against the selection rule's pick)
# Benchmark stages stop after $STAGE_TIMEOUT seconds (default 600); what they printed stays in their log.
#   dist      the expert-parallel MoE flow with NCCL at world size 1 (bf16, fp8, scaled), and --bench
#   conformance  python -m ckgemm.testing.conformance: ckgemm, torch's grouped ops and DeepGEMM (--perf)
#   selftest  python -m ckgemm.selftest --quick (its report under $OUT/selftest)
#   own       ckgemm's own fp8 kernel behind the op: its GPU tests, every compute-bound unscaled fp8 tile forced
#             beside the peers (bench_tiles.py --dtype fp8, round-robin), the error against cuBLAS
#             (bench_fp8_promotion.py), racecheck over its instances and memcheck over its tests
#   pack      put every log and report of $OUT into $OUT/logs.tgz (the device returns at most 8 files)
#   verify    benchmarks/bench_verify.py (gpu_verify against assert_close and the copy bandwidth)
#   sanitize  compute-sanitizer memcheck over a reduced GPU suite, racecheck over one case per family
#   tune      benchmarks/bench_grouped_gemm.py --only-ours --graph on $TUNE_CASES x $TUNE_DTYPES
#             (default: the compute-bound cases, 16-bit and fp8) into tune_$TUNE_TAG.json, for A/B builds
#   profile   Nsight Compute on ours and the best peer for the compute-bound cases and gpu_verify
#             (scripts/profile_kernels.py; one summary, ncu.md)
#   scaledprofile  Nsight Compute on the block and row recipes beside DeepGEMM and _scaled_grouped_mm
#             (ncu_scaled.md; DeepGEMM's chosen config and ptxas report in ncu.log)
# Logs and artefacts go to $OUT (default ./.out). Wheels in .whl/ (e.g. nvidia-cutlass) are installed
# to /tmp/site first, without network.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-16}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  [ -d /tmp/site/cutlass_library/source ] && export CUTLASS_DIR=${CUTLASS_DIR:-/tmp/site/cutlass_library/source}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
# Register the package (and its pytest plugin entry point) without building anything: the extension
# is built in place by the build stage or carried in as ckgemm/_C*.so.
PLUGIN=""
CKGEMM_NATIVE=0 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > "$OUT/install.log" 2>&1 \
  || { echo "editable install failed (see install.log); loading the pytest plugin by hand"; PLUGIN="-p ckgemm.testing.pytest_plugin"; }
status=0
run() {  # run <name> <command...>: log to $OUT/<name>.log, remember failure
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc in $((SECONDS - start)) s"
  tail -n 25 "$OUT/$name.log"
  [ $rc -eq 0 ] || status=1
  return $rc
}

prof() {  # prof <tag> <kernel count> <profile_kernels.py run args...>: one ncu report, its raw page as csv
  local tag=$1 count=$2; shift 2
  echo "== ncu $tag: $*" >> "$OUT/ncu.log"
  ncu --clock-control none --profile-from-start off -c "$count" -f -o "/tmp/ncu_$tag" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum \
    python3 scripts/profile_kernels.py run "$@" >> "$OUT/ncu.log" 2>&1 \
    && ncu --import "/tmp/ncu_$tag.ncu-rep" --csv --page raw > "/tmp/ncu_$tag.csv" 2>> "$OUT/ncu.log"
}

for stage in "$@"; do
  case $stage in
    build)
      if ls ckgemm/_C*.so >/dev/null 2>&1; then echo "== build: using $(ls ckgemm/_C*.so)"; continue; fi
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
      run build /usr/bin/time -v python3 setup.py build_ext --inplace || { echo "build failed: stopping"; exit 1; }
      find build -name .ninja_log -exec cp {} "$OUT/ninja_log.txt" \; 2>/dev/null
      for so in ckgemm/_C*.so; do strip --strip-debug -o "$OUT/$(basename "$so")" "$so"; done
      ls -la "$OUT"/_C*.so ;;
    test)
      run pytest python3 -m pytest $PLUGIN -q -ra tests ;;
    gputest)  # one process per file, so a crash in one file does not hide the others' results; a file that names
      # the marker without marking a test selects none (pytest's exit 5), which is not a failure here
      for f in $(grep -l "mark.gpu\|MARKS" tests/test_*.py); do
        run "gpu_$(basename "$f" .py)" bash -c 'python3 -X faulthandler -m pytest "$@"; rc=$?; [ $rc -eq 5 ] && rc=0; exit $rc' \
          pytest $PLUGIN -q -ra --tb=short -m gpu "$f"
      done ;;
    smoke)
      run smoke python3 op_tests/test_grouped_gemm.py --smoke
      run moe python3 op_tests/test_grouped_gemm.py --moe
      for q in row block; do run "smoke_$q" python3 op_tests/test_grouped_gemm.py --smoke --moe --quant "$q"; done ;;
    bench)
      run bench python3 benchmarks/bench_grouped_gemm.py --graph --sync --iters 20 --cases "${BENCH_CASES:-}" \
        --json "$OUT/bench.json" --markdown "$OUT/bench.md" ;;
    figures)
      B="python3 benchmarks/bench_grouped_gemm.py --graph --sync --iters ${FIGURE_ITERS:-16}"
      T="timeout ${FIGURE_TIMEOUT:-200}"
      for c in uniform Mixtral "DeepSeek-V3 prefill"; do  # one part per case: a part that runs out of time loses only it
        tag=$(echo "$c" | tr -cd 'A-Za-z0-9' | head -c 12)
        run "fig16_$tag" $T $B --dtype bf16,fp16 --cases "$c" --json "$OUT/fig16_$tag.json" --markdown "$OUT/fig16_$tag.md"
        run "fig8_$tag" $T $B --dtype fp8 --cases "$c" --json "$OUT/fig8_$tag.json" --markdown "$OUT/fig8_$tag.md"
      done
      run figdecode $T $B --cases "DeepSeek-V3 decode" --json "$OUT/figdecode.json" --markdown "$OUT/figdecode.md"
      run figrepack $T python3 benchmarks/bench_repack.py --iters 10 --json "$OUT/repack.json" \
        --markdown "$OUT/repack.md" ;;
    scaled)
      run scaled timeout "${STAGE_TIMEOUT:-600}" env DG_JIT_CACHE_DIR=/tmp/dg python3 benchmarks/bench_scaled.py --int8 \
        --iters 10 --json "$OUT/scaled.json" --markdown "$OUT/scaled.md" ;;
    host)
      run host timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_host.py --iters 30 --json "$OUT/host.json" \
        --markdown "$OUT/host.md" ;;
    repack)
      run repack timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_repack.py --iters 15 --json "$OUT/repack.json" \
        --markdown "$OUT/repack.md" ;;
    tiles)
      run tiles timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_tiles.py --cases "${TILES_CASES:-}" \
        ${TILES_INSTANCES:+--instances "$TILES_INSTANCES"} --json "$OUT/tiles.json" --markdown "$OUT/tiles.md" ;;
    units)
      run units timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_units.py --units dynamic,static ;;
    l2)
      run l2 timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_env.py --knob CKGEMM_WS_L2 \
        --values "${L2_VALUES:-nnf,nnn,lnf,nlf,llf}" --cases "${L2_CASES:-}" --dtype "${L2_DTYPES:-fp8,bf16}" \
        --rounds 10 --json "$OUT/l2.json" --markdown "$OUT/l2.md" ;;
    swapab)
      run swapab timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_swapab.py --json "$OUT/swapab.json" \
        --markdown "$OUT/swapab.md" ;;
    dist)
      run dist python3 -m ckgemm.testing.distributed --nproc 1 --backend cutlass --dtype bf16,fp8 \
        --quant none,row,block --json "$OUT/dist.json"
      run dist_bench python3 -m ckgemm.testing.distributed --nproc 1 --backend cutlass --dtype bf16,fp8 --bench ;;
    tune)
      tag=${TUNE_TAG:-default}
      run "tune_$tag" python3 benchmarks/bench_grouped_gemm.py --only-ours --graph --iters 20 \
        --cases "${TUNE_CASES:-uniform,prefill}" --dtype "${TUNE_DTYPES:-bf16,fp16,fp8}" --json "$OUT/tune_$tag.json" ;;
    verify)
      run verify python3 benchmarks/bench_verify.py --json "$OUT/verify.json" ;;
    sanitize)  # memcheck over the native paths (scaled and repacked included), racecheck over the new kernels
      run memcheck timeout "${STAGE_TIMEOUT:-600}" compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest \
        $PLUGIN -q -x -m gpu tests/test_gpu_paths.py tests/test_scaled_api.py tests/test_gpu_native.py \
        -k "list_and_out_forms or packed_form or misaligned or graph or prepack or transpose or lists or packed"
      run racecheck timeout "${STAGE_TIMEOUT:-600}" compute-sanitizer --tool racecheck --error-exitcode 1 python3 \
        scripts/sanitizer_cases.py ${RACECHECK_INSTANCES:-} ;;
    profile)
      start=$SECONDS
      prof fp8_uniform_ours 3 --case uniform --dtype fp8 --who ours
      prof fp8_uniform_peer 1 --case uniform --dtype fp8 --who "_scaled_mm loop"
      prof bf16_uniform_ours 3 --case uniform --dtype bf16 --who ours
      prof bf16_uniform_peer 1 --case uniform --dtype bf16 --who "matmul loop"
      prof fp16_deepseek_ours 3 --case "DeepSeek-V3 prefill" --dtype fp16 --who ours
      prof fp16_deepseek_peer 1 --case "DeepSeek-V3 prefill" --dtype fp16 --who "matmul loop"
      prof bf16_seed_ours 3 --case seed-default --dtype bf16 --who ours
      prof bf16_seed_peer 2 --case seed-default --dtype bf16 --who _grouped_mm
      prof verify 2 --who verify
      python3 scripts/profile_kernels.py summarize /tmp/ncu_*.csv > "$OUT/ncu.md" 2>> "$OUT/ncu.log"
      echo "== profile: $((SECONDS - start)) s"; cat "$OUT/ncu.md" | head -80 ;;
    scaledprofile)  # Nsight Compute on the block and row recipes beside DeepGEMM / _scaled_grouped_mm, on
      # $SCALED_PROFILE_CASES (default DeepSeek-V3 prefill and Mixtral prefill); DeepGEMM prints its config
      start=$SECONDS
      IFS=, read -ra cases <<< "${SCALED_PROFILE_CASES:-DeepSeek-V3 prefill,Mixtral prefill}"
      for c in "${cases[@]}"; do
        tag=$(echo "$c" | tr -c 'A-Za-z0-9\n' _)
        prof "block_${tag}_ours" 4 --case "$c" --dtype fp8 --who ours --quant block
        DG_JIT_CACHE_DIR=/tmp/dg DG_PRINT_CONFIGS=1 DG_JIT_PTXAS_VERBOSE=1 \
          prof "block_${tag}_deepgemm" 4 --case "$c" --dtype fp8 --who deepgemm --quant block
        prof "row_${tag}_ours" 4 --case "$c" --dtype fp8 --who ours --quant row
        prof "row_${tag}_peer" 4 --case "$c" --dtype fp8 --who _scaled_grouped_mm --quant row
      done
      python3 scripts/profile_kernels.py summarize /tmp/ncu_block_*.csv /tmp/ncu_row_*.csv > "$OUT/ncu_scaled.md" \
        2>> "$OUT/ncu.log"
      echo "== scaledprofile: $((SECONDS - start)) s"; grep -a "block M\|ptxas\|registers\|spill" "$OUT/ncu.log" | head -20
      cat "$OUT/ncu_scaled.md" | head -80 ;;
    conformance)  # the conformance matrix: ckgemm and its peers, one process each (docs/CONFORMANCE.md)
      conf() { local n=$1; shift; run "conf_$n" timeout "${STAGE_TIMEOUT:-600}" env DG_JIT_CACHE_DIR=/tmp/dg \
        python3 -m ckgemm.testing.conformance --device cuda "$@" --json "$OUT/conf_$n.json" --markdown "$OUT/conf_$n.md"; }
      conf ckgemm --op ckgemm --perf
      conf ckgemm_block --op ckgemm --quant block --perf
      conf ckgemm_row --op ckgemm --quant row --perf
      conf torch_grouped --op torch_grouped_mm --dtype bf16,fp16 --perf
      conf torch_scaled --op torch_scaled_grouped_mm --quant row --perf
      conf deep_gemm --op deep_gemm --quant block --perf
      conf deep_gemm_masked --op deep_gemm_masked --quant block --perf
      conf bad_ckgemm --op ckgemm --dtype bf16 --bad-input ;;
    own)
      run own_tests python3 -X faulthandler -m pytest $PLUGIN -q -ra --tb=short -m gpu tests/test_gpu_own_fp8.py
      run tiles_fp8 timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_tiles.py --dtype fp8 \
        --json "$OUT/tiles_fp8.json" --markdown "$OUT/tiles_fp8.md"
      run fp8_error timeout "${STAGE_TIMEOUT:-600}" python3 benchmarks/bench_fp8_promotion.py
      run own_racecheck timeout "${STAGE_TIMEOUT:-600}" compute-sanitizer --tool racecheck --error-exitcode 1 python3 \
        scripts/sanitizer_cases.py ws_
      # the subprocess tests trap on purpose (bad sizes) or only route; past 1024 groups is CUTLASS's
      run own_memcheck timeout "${STAGE_TIMEOUT:-600}" compute-sanitizer --tool memcheck --error-exitcode 1 python3 \
        -m pytest $PLUGIN -q -x -m gpu tests/test_gpu_own_fp8.py -k "not fail_loudly and not promotion and not more_groups" ;;
    selftest)
      run selftest timeout "${STAGE_TIMEOUT:-600}" python3 -m ckgemm.selftest --quick --out "$OUT/selftest" ;;
    pack)  # at most 8 files come back from the device: everything but the .so in one archive
      tar czf /tmp/logs.tgz -C "$OUT" --exclude '_C*.so' . && find "$OUT" -type f ! -name '_C*.so' -delete \
        && mv /tmp/logs.tgz "$OUT/logs.tgz" ;;
    *) echo "unknown stage $stage"; status=1 ;;
  esac
done
exit $status
