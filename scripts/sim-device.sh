#!/usr/bin/env bash
# scripts/sim-device.sh: the device suite on the simulated ConnectX, with our own mlx5 provider.
#
# The device tests (tests/device/) name "the RoCE device" through $VERBS_TEST_RXE (rxe0 in the
# VM). Here that device is the simulated mlx5_0 (sim/: verbs-simd + the LD_PRELOAD shim), so
# every RoCE test runs on our pure-Rust mlx5 provider instead of rxe:
#   1. builds the device test binary with rustix's libc backend (RUSTFLAGS="--cfg
#      rustix_use_libc", so the shim sees open/write/ioctl/mmap; target/sim-libc, shared with
#      `scripts/sim.sh --ours`) and the `mlx5` feature, and our libibverbs.so (capi/, the same
#      way) for the C library tests;
#   2. starts verbs-simd with a fixture sysfs tree (SYSFS_PATH), VERBS_TEST_RXE=mlx5_0 and the
#      fixture's RoCE v2 GID index;
#   3. runs each selected test in its own process (timeout $SIM_DEVICE_TIMEOUT s, default 120)
#      and judges it against sim/tests/device-known-gap.txt: a test listed there (with its
#      reason: rxe-specific internals, rdma_cm, which the simulator does not model, ...) is
#      expected to fail; any other failure fails the run, and so does a listed test that passes
#      (the list must stay true).
#
# CI runs the passing set (sim/tests/device-on-sim.txt) through `scripts/sim.sh --device`; this
# script is the full account: every RoCE test, each failure explained or an error.
#
# usage: scripts/sim-device.sh [--no-build] [--keep] [FILTER...]
#   FILTER   libtest name filters (default: rxe_, the RoCE device's tests)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

BUILD=1 KEEP=0 FILTERS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "sim-device.sh: unknown option $1" >&2; exit 2 ;;
        *) FILTERS+=("$1"); shift ;;
    esac
done
[ ${#FILTERS[@]} -gt 0 ] || FILTERS=(rxe_)
TMO=${SIM_DEVICE_TIMEOUT:-120}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
GAPS=$ROOT/sim/tests/device-known-gap.txt
T0=$(date +%s)

if [ "$BUILD" = 1 ]; then
    echo "sim-device.sh: building verbs-simd, the shim and the device tests (rustix libc backend)"
    cargo build --release -p verbs-sim -p verbs-sim-shim || { echo "sim-device.sh: build failed"; exit 1; }
    RUSTFLAGS="--cfg rustix_use_libc" cargo test --release --features internals,mlx5 --test device \
        --no-run --target-dir "$TARGET/sim-libc" --message-format=json-render-diagnostics \
        > "$TARGET/sim-device-build.json" || { echo "sim-device.sh: device test build failed"; exit 1; }
    # the C library tests (capi_*) load libibverbs.so from the test binary's directory
    RUSTFLAGS="--cfg rustix_use_libc" cargo build --release -p verbs-capi --features verbs-capi/mlx5 --lib \
        --target-dir "$TARGET/sim-libc" || { echo "sim-device.sh: C library build failed"; exit 1; }
fi
BIN=$TARGET/release
SHIM=$BIN/libverbs_sim_shim.so
DEV=$(grep -o '"executable":"[^"]*device-[^"]*"' "$TARGET/sim-device-build.json" 2>/dev/null | tail -1 | cut -d'"' -f4)
for f in "$BIN/verbs-simd" "$SHIM" "$DEV"; do
    [ -n "$f" ] && [ -e "$f" ] || { echo "sim-device.sh: ${f:-device test binary} missing (build first)"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/verbs-sim-device.XXXXXX")
DAEMON=""
cleanup() {
    [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "sim-device.sh: work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
SOCK=$WORK/sock
"$BIN/verbs-simd" --socket "$SOCK" --sysfs "$WORK/sys" > "$WORK/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "sim-device.sh: verbs-simd did not start:"; cat "$WORK/daemon.log"; exit 1; }
export SYSFS_PATH=$WORK/sys VERBS_SIM_SOCKET=$SOCK VERBS_TEST_RXE=mlx5_0 VERBS_TEST_GID_INDEX=3 VERBS_TEST_RXE_IP=10.251.0.1 VERBS_TEST_RXE_IP6=fd0a:fb00::1
# the examples (tests/device/examples.rs) open VERBS_DEVICE, which must be the RoCE test device
export VERBS_DEVICE=mlx5_0
# siw0 does not exist here: a test that reaches for it fails, and is listed as not applicable
export VERBS_TEST_SIW=no-siw-on-the-simulator RUST_BACKTRACE=0

known() { grep -E "^$1([[:space:]]|$)" "$GAPS" 2>/dev/null | head -1; }
mapfile -t TESTS < <("$DEV" --ignored --list --format=terse "${FILTERS[@]}" 2>/dev/null | sed -n 's/: test$//p')
echo "sim-device.sh: ${#TESTS[@]} tests (filters: ${FILTERS[*]}), device binary $DEV"
PASS=0 KNOWN=0 BAD=() STALE=()
for t in "${TESTS[@]}"; do
    log=$WORK/${t//::/__}.log
    LD_PRELOAD=$SHIM timeout "$TMO" "$DEV" --ignored --exact --test-threads=1 "$t" > "$log" 2>&1
    rc=$?
    gap=$(known "$t")
    if [ $rc = 0 ] && grep -q "^test result: ok. 1 passed" "$log"; then
        if [ -n "$gap" ]; then STALE+=("$t"); echo "STALE  $t (passes, but is listed as a known gap)";
        else PASS=$((PASS + 1)); echo "ok     $t"; fi
    elif [ -n "$gap" ]; then
        KNOWN=$((KNOWN + 1)); echo "known  $t"
    else
        why=$([ $rc = 124 ] && echo "timeout ${TMO}s" || grep -m1 -A1 "panicked at" "$log" | tail -1 | cut -c1-200)
        BAD+=("$t: $why"); echo "FAIL   $t: $why"
        tail -n 25 "$log" | sed 's/^/    | /'
    fi
done
# the daemon must have survived every test
kill -0 "$DAEMON" 2>/dev/null || BAD+=("verbs-simd died: $(tail -n 5 "$WORK/daemon.log")")

echo
echo "sim-device.sh: ${#TESTS[@]} tests on the simulated mlx5_0 with our mlx5 provider: $PASS passed," \
    "$KNOWN known gaps (sim/tests/device-known-gap.txt), ${#BAD[@]} failed, ${#STALE[@]} stale; $(( $(date +%s) - T0 ))s"
for b in "${BAD[@]}"; do echo "  FAILED: $b"; done
for s in "${STALE[@]}"; do echo "  STALE (remove from the known-gap list): $s"; done
[ ${#BAD[@]} = 0 ] && [ ${#STALE[@]} = 0 ] && [ ${#TESTS[@]} -gt 0 ]
