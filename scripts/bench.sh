#!/usr/bin/env bash
# The performance harness (issue #6): ours vs rdma-core's C libibverbs on rxe0, one VM boot.
#
# usage: scripts/bench.sh [--quick] [--no-setup] [--reps N] [--out FILE]
#                        [--ops [--rows "OPS"] [--devs "DEVS"] [--sides "SIDES"]] [--capi-ops]
#   --quick      one run per workload and side, three latency sizes (a smoke run, ~2 min)
#   --ops        only the instruction rows: the ops benches under callgrind (no latency, message
#                rate or wall time); prints instructions per call and per completion and leaves
#                the report alone (callgrind counts are deterministic: one run each). With
#     --rows "OPS"   only these ops (of post_send post_recv poll_cq poll_with poll_cq_empty)
#     --devs "DEVS"  only these devices (of rxe siw)
#     --sides "S"    only these sides (of c = rdma-core, ours = benches/ops_bench.rs,
#                    capi = the C ops bench on our libibverbs.so.1)
#                e.g. scripts/bench.sh --no-setup --ops --rows post_recv --devs siw (~2 min)
#   --loop       only the per-iteration rows: the client of send_lat/write_lat under callgrind
#                (perftest's and verbs-perf's, rxe0 and siw0, -n 100 and -n 600); prints them,
#                with and without the spinning on empty polls (scripts/cg_waits.py), and
#                renders them into the report's two per-iteration sections (the rest stays)
#   --capi-ops   the C-ABI rows of rxe0: --ops --devs rxe --sides "c capi"
#   --no-setup   skip scripts/setup.sh
#   --reps N     runs per workload and side (default 5; results are medians over the runs)
#   --out FILE   the report (default BENCHMARKS.md in the repository)
# Environment: BENCH_VM_TIMEOUT (s, default 5400) limits the VM run; a full run takes ~15 min
# on a quiet 2-CPU host and several times that on a loaded one.
#
# 1. scripts/setup.sh (qemu, kernel, perftest, libibverbs-dev, valgrind; idempotent)
# 2. builds benches/c/ops_bench.c with gcc -libverbs -lrdmacm, and ours in release
#    (cargo build --release --bin verbs-perf --bench ops_bench)
# 3. boots the VM once: scripts/bench-guest.sh alternates C and ours for every workload:
#    perftest ib_{send,write}_lat vs verbs-perf {send,write}_lat (sizes 2..4096),
#    ib_{send,write}_bw vs verbs-perf {send,write}_bw (post lists, 1 and 4 QPs),
#    the ops benches natively and under callgrind (instructions per post_send, post_recv,
#    poll_cq batch, empty poll_cq); the same perftest and C ops bench also on our
#    libibverbs.so.1 (capi/, side "capi": the C ABI's cost); siw0 rows with -R
# 4. renders the raw results in target/bench/raw/ into BENCHMARKS.md
#    (scripts/bench_report.py): medians, ratios, targets with PASS/MISS marks.
# Targets are printed, never asserted: the exit status only says whether the harness ran.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SETUP=1 REPS=5 QUICK=0 OPS=0 LOOP=0 REPORT=$ROOT/BENCHMARKS.md
OPS_FNS="" OPS_DEVS="" ONLY_SIDES=""
CMDLINE="scripts/bench.sh${*:+ $*}"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; REPS=1; shift ;;
        --ops) OPS=1; REPS=1; shift ;;
        --loop) OPS=1; LOOP=1; REPS=1; shift ;;
        --rows) OPS_FNS=$2; shift 2 ;;
        --devs) OPS_DEVS=$2; shift 2 ;;
        --sides) ONLY_SIDES=$2; shift 2 ;;
        --capi-ops) OPS=1; REPS=1; OPS_DEVS=rxe; ONLY_SIDES="c capi"; shift ;;
        --no-setup) SETUP=0; shift ;;
        --reps) REPS=$2; shift 2 ;;
        --out) REPORT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
T0=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
BENCH=$ROOT/target/bench
RAW=$BENCH/raw
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

if [ "$SETUP" = 1 ]; then "$ROOT/scripts/setup.sh"; fi

echo "bench: building (gcc, cargo --release)" >&2
mkdir -p "$BENCH"
gcc -O2 -g -Wall -Wextra -o "$BENCH/ops_bench_c" "$ROOT/benches/c/ops_bench.c" -libverbs -lrdmacm
# Ours: a missing or broken Rust side is reported as "not measured", never hidden.
OURS_PERF="" OURS_OPS=""
if [ "$OPS" = 1 ] && [ -n "$ONLY_SIDES" ] && [[ " $ONLY_SIDES " != *" ours "* ]]; then
    :  # only the C ops bench, on one library or both
elif cargo build --release --bin verbs-perf $([ "$LOOP" = 1 ] || echo --bench ops_bench) \
        --message-format=json-render-diagnostics > "$BENCH/cargo.json" 2> "$BENCH/cargo.log"; then
    exe() { grep '"reason":"compiler-artifact"' "$BENCH/cargo.json" | grep "\"name\":\"$1\"" \
            | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1 || true; }
    OURS_PERF=$(exe verbs-perf); OURS_OPS=$(exe ops_bench)
    # a copy: a build meanwhile (other features) must not swap the binary between runs
    if [ -n "$OURS_PERF" ]; then cp "$OURS_PERF" "$BENCH/verbs-perf"; OURS_PERF=$BENCH/verbs-perf; fi
else
    echo "bench: cargo build failed (see $BENCH/cargo.log); measuring the C side only" >&2
    tail -n 20 "$BENCH/cargo.log" >&2
fi

# Our libibverbs.so.1 (capi/): the same C programs (perftest, the C ops bench) on it.
CAPI_LIB=""
if [ "$LOOP" = 1 ]; then
    :  # the loop rows need verbs-perf only
elif cargo build --release -p verbs-capi > "$BENCH/capi-build.log" 2>&1 && [ -f "$CARGO_TARGET_DIR/release/libibverbs.so" ]; then
    CAPI_LIB=$BENCH/capi-lib
    mkdir -p "$CAPI_LIB"
    ln -sf "$CARGO_TARGET_DIR/release/libibverbs.so" "$CAPI_LIB/libibverbs.so.1"
else
    echo "bench: cargo build -p verbs-capi failed (see $BENCH/capi-build.log); no C-ABI rows" >&2
fi

rm -rf "$RAW"; mkdir -p "$RAW"
ENVS=(-e "OUT=$RAW" -e "REPS=$REPS" -e "C_OPS=$BENCH/ops_bench_c" -e "OURS_OPS=$OURS_OPS" -e "OURS_PERF=$OURS_PERF"
      -e "CAPI_LIB=$CAPI_LIB")
if [ "$LOOP" = 1 ]; then
    ENVS+=(-e "ONLY=loop")
elif [ "$OPS" = 1 ]; then
    ENVS+=(-e "ONLY=ops")
    [ -n "$OPS_FNS" ] && ENVS+=(-e "OPS_FNS=$OPS_FNS")
    [ -n "$OPS_DEVS" ] && ENVS+=(-e "OPS_DEVS=$OPS_DEVS")
    [ -n "$ONLY_SIDES" ] && ENVS+=(-e "ONLY_SIDES=$ONLY_SIDES")
fi
if [ "$QUICK" = 1 ]; then ENVS+=(-e "LAT_SIZES=2 256 4096" -e "OPS_ITERS=500" -e "POLL_ROUNDS=20"); fi
for v in LAT_SIZES LAT_ITERS BW_ITERS BW_SIZE OPS_ITERS POLL_BATCH POLL_ROUNDS CG_ARGS LOOP_N1 LOOP_N2 LOOP_SIZE; do
    [ -n "${!v:-}" ] && ENVS+=(-e "$v=${!v}")
done
echo "bench: booting the VM (one boot for every workload)" >&2
set +e
"$ROOT/vm/run-in-vm.sh" --rw "$RAW" --timeout "${BENCH_VM_TIMEOUT:-5400}" "${ENVS[@]}" -- bash "$ROOT/scripts/bench-guest.sh" \
    2> >(tee "$BENCH/vm.log" >&2)
VMRC=$?
set -e
wait  # the tee
if [ "$OPS" = 1 ]; then
    python3 - "$RAW" <<'PY'
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("r", "scripts/bench_report.py")
r = importlib.util.module_from_spec(spec); spec.loader.exec_module(r)
f = lambda x: "n/a" if x is None else f"{x:.1f}"
for dev, raw in (("rxe", sys.argv[1]), ("siw", os.path.join(sys.argv[1], "siw"))):
    cg = r.collect(raw)["cg"]
    for op in ("post_send", "post_recv", "poll_cq", "poll_with", "poll_cq_empty"):
        d = cg.get(op)
        if not d:
            continue
        c = cg.get("poll_cq" if op == "poll_with" else op, {}).get("c")
        for side in ("ours", "capi"):
            if side not in d:
                continue
            o = d[side]
            for key in ("per_call", "per_item") if op in ("poll_cq", "poll_with") else ("per_call",):
                cv, ov = c and c[key], o and o[key]
                rt = f"{ov / cv:.2f}" if cv and ov else "n/a"
                print(f"ops: {dev} {op:14} {key:9} rdma-core {f(cv):>7}  {side:4} {f(ov):>7}  ratio {rt}")
        if set(d) == {"c"}:
            print(f"ops: {dev} {op:14} per_call  rdma-core {f(d['c'] and d['c']['per_call']):>7}")
    res = r.collect(raw)
    split = r.per_iteration_split(res)
    for test, c, o, iters in r.per_iteration(res):
        rt = f"{o / c:.2f}" if c and o else "n/a"
        print(f"loop: {dev} {test:9} per iteration (-n {iters}) perftest {f(c):>8}  ours {f(o):>8}  ratio {rt}"
              "  (waiting included)")
        sc, so = (split.get((test, side), {}) for side in ("c", "ours"))
        lc, lo = sc.get("loop"), so.get("loop")
        rt = f"{lo / lc:.2f}" if lc and lo else "n/a"
        print(f"loop: {dev} {test:9} per iteration without waiting  perftest {f(lc):>8}  ours {f(lo):>8}  ratio {rt}")
        for side, sp in (("perftest", sc), ("ours", so)):
            loops = r.main_loops(sp.get("spins", []))
            print(f"loop: {dev} {test:9}   {side:8} waiting {f(sp.get('waiting')):>8} per iteration; spin loops: {loops}")
PY
    if [ "$LOOP" = 1 ]; then
        python3 "$ROOT/scripts/bench_report.py" --loop "$RAW" "$REPORT"
        echo "bench: wrote the latency-loop rows into $REPORT" >&2
    fi
    [ "$VMRC" = 0 ] || { echo "bench: the VM run failed (exit $VMRC)" >&2; exit 1; }
    exit 0
fi
ACCEL=$(sed -n 's/^run-in-vm: .*accel \([a-z]*\),.*/\1/p' "$BENCH/vm.log" | tail -1)
{
    echo "command=$CMDLINE"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    # -dirty: tracked files other than the report itself differ from the commit
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- . ':!BENCHMARKS.md' 2>/dev/null || echo '-dirty')"
    echo "host_nproc=$(nproc)"
    echo "host_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "host_kernel=$(uname -r)"
    echo "qemu=$(qemu-system-x86_64 --version | head -1)"
    echo "accel=${ACCEL:-unknown}"
    echo "rustc=$(rustc --version)"
    echo "gcc=$(gcc --version | head -1)"
    echo "vm_exit=$VMRC"
    echo "ours_ops=$OURS_OPS"
    echo "ours_built=$([ -n "$OURS_PERF" ] && [ -n "$OURS_OPS" ] && echo yes || echo no)"
    echo "wall_s=$(( $(date +%s) - T0 ))"
    echo "host_load=$LOAD0 (start) / $(cut -d' ' -f1-3 /proc/loadavg) (end)"
} > "$RAW/host-info.txt"
python3 "$ROOT/scripts/bench_report.py" "$RAW" "$REPORT"
echo "bench: wrote $REPORT in $(( $(date +%s) - T0 ))s (raw results in $RAW)" >&2
[ "$VMRC" = 0 ] || { echo "bench: the VM run failed (exit $VMRC)" >&2; exit 1; }
