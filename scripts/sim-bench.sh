#!/usr/bin/env bash
# Instructions per verb on the simulated ConnectX (issue 26 item 7): ours vs libmlx5, on the host.
#
# The ops benches (benches/c/ops_bench.c and benches/ops_bench.rs) under
#   valgrind --tool=callgrind --toggle-collect=bench_<op>
# on mlx5_0 of verbs-simd (scripts/sim.sh's daemon, shim and sysfs fixture: the daemon plays the
# NIC, so completions arrive while the bench runs under valgrind), three sides:
#   c     the C ops bench on rdma-core's unmodified libibverbs + libmlx5 (LD_PRELOAD of the shim)
#   ours  benches/ops_bench.rs with our mlx5 provider (cargo feature mlx5, rustix's libc backend
#         so that the shim sees its system calls: RUSTFLAGS="--cfg rustix_use_libc",
#         target/sim-libc, as scripts/sim.sh --ours builds)
#   capi  the C ops bench on our libibverbs.so.1 (capi/, built the same way with feature mlx5;
#         skipped if capi/ has no feature mlx5)
# Operations: post_send (8 B RDMA WRITE) and post_send_inline (the same, IBV_SEND_INLINE: -i 64),
# post_recv, poll_cq of a batch of 16 (and ours' in-place poll_with), poll_cq on an empty CQ.
# Callgrind counts are deterministic: one run per side. Raw results go to target/bench/raw-mlx5
# (cg/bench_<op>.<side>.txt as scripts/bench-guest.sh writes them, all.<side>.callgrind with
# per-instruction counts for the floors' listings); scripts/bench_report.py --mlx5 renders them
# into BENCHMARKS.md's mlx5 section and the mlx5 rows of its Targets table (the rest of the
# report is left as it is).
#
# usage: scripts/sim-bench.sh [--no-build] [--sides "c ours capi"] [--no-report] [--out FILE]
#   --no-build   use the binaries built by a previous run
#   --sides S    only these sides
#   --no-report  print the rows, leave BENCHMARKS.md alone
#   --out FILE   the report (default BENCHMARKS.md)
# Takes ~2 min after the builds (the first libc-backend build of ours takes several minutes).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=1 SIDES="c ours capi" REPORT=1 OUT=$ROOT/BENCHMARKS.md
CMDLINE="scripts/sim-bench.sh${*:+ $*}"
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0; shift ;;
        --sides) SIDES=$2; shift 2 ;;
        --no-report) REPORT=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "sim-bench: unknown option $1" >&2; exit 2 ;;
    esac
done
T0=$(date +%s)
TGT=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TGT/release
LIBC=$TGT/sim-libc
BENCH=$TGT/bench
RAW=$BENCH/raw-mlx5
mkdir -p "$BENCH"
OPS="post_send post_send_inline post_recv poll_cq poll_with poll_cq_empty"
ARGS=(-d mlx5_0 -x 3 -i 64 -n 2000 -b 16 -r 50)
has() { [[ " $SIDES " == *" $1 "* ]]; }

if [ "$BUILD" = 1 ]; then
    echo "sim-bench: building the simulator, the C ops bench and ours (libc backend, feature mlx5)" >&2
    cargo build --release -p verbs-sim -p verbs-sim-shim >&2 || exit 1
    gcc -O2 -g -Wall -Wextra -o "$BENCH/ops_bench_c" "$ROOT/benches/c/ops_bench.c" -libverbs -lrdmacm || exit 1
    if has ours; then
        # (features mlx5 + internals: what verbs gets in scripts/sim.sh's one build of verbs and
        # verbs-capi, so the two share the compiled library)
        RUSTFLAGS="--cfg rustix_use_libc" cargo build --release --features mlx5,internals --bench ops_bench \
            --target-dir "$LIBC" --message-format=json-render-diagnostics > "$BENCH/mlx5-cargo.json" || exit 1
    fi
    if has capi; then
        if grep -q '^mlx5' capi/Cargo.toml; then
            RUSTFLAGS="--cfg rustix_use_libc" cargo build --release -p verbs -p verbs-capi \
                --features verbs/mlx5,verbs-capi/mlx5 --lib --target-dir "$LIBC" >&2 || exit 1
        else
            echo "sim-bench: capi/ has no feature mlx5 yet: no C-ABI rows" >&2
            SIDES=${SIDES/capi/}
        fi
    fi
fi
OURS=$(grep '"reason":"compiler-artifact"' "$BENCH/mlx5-cargo.json" 2>/dev/null | grep '"name":"ops_bench"' \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
CAPI_LIB=$BENCH/capi-lib-mlx5
if has capi && [ -f "$LIBC/release/libibverbs.so" ]; then
    mkdir -p "$CAPI_LIB" && ln -sf "$LIBC/release/libibverbs.so" "$CAPI_LIB/libibverbs.so.1"
else
    SIDES=${SIDES/capi/}
fi
has ours && [ -z "$OURS" ] && { echo "sim-bench: no ops_bench built for ours (run without --no-build)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/verbs-sim-bench.XXXXXX")
DAEMON=""
cleanup() { [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
"$BIN/verbs-simd" --socket "$WORK/sock" --sysfs "$WORK/sys" > "$WORK/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 50); do [ -S "$WORK/sock" ] && break; sleep 0.1; done
[ -S "$WORK/sock" ] || { echo "sim-bench: verbs-simd did not start:"; cat "$WORK/daemon.log"; exit 1; }
export SYSFS_PATH=$WORK/sys VERBS_SIM_SOCKET=$WORK/sock

mkdir -p "$RAW/cg"
for side in $SIDES; do rm -f "$RAW/cg/"*."$side".*; done
FAILED=0
for side in $SIDES; do
    toggles=() env=() instr=() exe=$BENCH/ops_bench_c
    for op in $OPS; do
        toggles+=(--toggle-collect="bench_$op" --toggle-collect="*::bench_$op" --toggle-collect="*::bench_$op::h*")
    done
    [ "$side" = ours ] && exe=$OURS instr=(--dump-instr=yes --separate-callers=4)
    [ "$side" = capi ] && env=(LD_LIBRARY_PATH="$CAPI_LIB")
    [ "$side" = capi ] && instr=(--dump-instr=yes --separate-callers=4)
    [ "$side" = c ] && instr=(--dump-instr=yes --separate-callers=4)
    echo "sim-bench: [$(( $(date +%s) - T0 ))s] $side under callgrind" >&2
    env "${env[@]}" LD_PRELOAD="$BIN/libverbs_sim_shim.so" timeout 600 valgrind --tool=callgrind "${instr[@]}" \
        "${toggles[@]}" --callgrind-out-file="$RAW/cg/all.$side.callgrind" "$exe" "${ARGS[@]}" \
        > "$RAW/cg/all.$side.txt" 2>&1
    rc=$?
    echo "exit=$rc" >> "$RAW/cg/all.$side.txt"
    [ $rc = 0 ] || { FAILED=1; echo "sim-bench: $side failed (exit $rc):" >&2; grep -v '^==' "$RAW/cg/all.$side.txt" | tail -5 >&2; }
    for op in $OPS; do
        [ "$op" = poll_with ] && [ "$side" != ours ] && continue
        n=$(python3 scripts/cg_listing.py --inclusive "$RAW/cg/all.$side.callgrind" "bench_$op" 2>/dev/null)
        { grep -v '^==' "$RAW/cg/all.$side.txt"; echo "Collected : ${n:-}"; } > "$RAW/cg/bench_$op.$side.txt"
    done
done
{
    echo "command=$CMDLINE"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- . ':!BENCHMARKS.md' 2>/dev/null || echo '-dirty')"
    echo "ours_ops=$OURS"
    echo "c_ops=$BENCH/ops_bench_c"
    echo "rdma_core=$(dpkg-query -W -f '${Version}' libibverbs1 2>/dev/null || echo '?')"
    echo "valgrind=$(valgrind --version)"
    echo "rustc=$(rustc --version)"
    echo "gcc=$(gcc --version | head -1)"
    echo "sides=$SIDES"
} > "$RAW/host-info.txt"
python3 scripts/bench_report.py --mlx5-rows "$RAW"
if [ "$REPORT" = 1 ]; then
    python3 scripts/bench_report.py --mlx5 "$RAW" "$OUT" && echo "sim-bench: wrote the mlx5 section of $OUT" >&2
fi
echo "sim-bench: $(( $(date +%s) - T0 ))s" >&2
exit $FAILED
