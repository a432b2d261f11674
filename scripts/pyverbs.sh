#!/usr/bin/env bash
# rdma-core's own test suite (pyverbs, issue #14 item 3) on rdma-core's libibverbs.so.1 and on
# ours, on rxe0 and siw0, in ONE VM boot; prints the totals side by side and the tests that pass
# on rdma-core but not on ours, and fails on a regression against the committed ratchet
# (capi/tests/fixtures/pyverbs-ratchet.txt: the tests that passed on ours before), on a test
# passing on rdma-core but not on ours, and on a test rdma-core skips that fails or errors on
# ours (see scripts/pyverbs_report.py for the lists of known reasons).
#
# usage: scripts/pyverbs.sh [--no-build] [--no-setup] [--update-ratchet] [--native] [--out DIR]
#   --no-build         use the existing target/release/libibverbs.so (scripts/test.sh built it)
#   --no-setup         skip scripts/setup.sh (python3-pyverbs comes from there)
#   --update-ratchet   rewrite the ratchet with the tests passing on ours now
#   --native           run on this host's devices (VERBS_TEST_RXE, VERBS_TEST_SIW ("none" skips),
#                      VERBS_TEST_GID_INDEX), no VM
#   --out DIR          keep the raw results there (default: a temp dir, removed)
#   --tests FILE       run only the tests whose ids (tests.test_mr.MRTest.test_mr_rereg_pd, one a
#                      line) FILE lists, on both libraries; the ratchet is checked for those only
#
# 1. cargo build --release -p verbs-capi (libibverbs.so, SONAME libibverbs.so.1)
# 2. boots the VM once; scripts/pyverbs-guest.sh copies /usr/share/doc/rdma-core/tests
#    (python3-pyverbs) to a temp dir, gunzips it, and per device runs it with
#    scripts/pyverbs_run.py (unittest, one record per test, a crashed or hung test process is
#    restarted after the test in flight; rdma_cm tests see the device's netdev) first on
#    rdma-core's library, then with LD_LIBRARY_PATH on ours: rxe0 with its RoCE v2 IPv4 GID
#    index, siw0 with GID 0
# 3. scripts/pyverbs_report.py: the table, the gap, the ratchet check.
# Exit: 0, or 1 on a regression / a missing run / rdma-core passing nothing; 2 usage; the VM's
# code (124 timeout, 125 setup, 126 crash) if it failed before any result.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=1 SETUP=1 UPDATE=() NATIVE=0 OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0; shift ;;
        --no-setup) SETUP=0; shift ;;
        --update-ratchet) UPDATE=(--update); shift ;;
        --native) NATIVE=1 SETUP=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        --tests) export PYVERBS_TESTS=$(realpath "$2"); shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "pyverbs: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
T0=$(date +%s.%N)
RATCHET=$ROOT/capi/tests/fixtures/pyverbs-ratchet.txt
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "$OUT" ]; then
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/verbs-pyverbs.XXXXXX")
    trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT/lib" && rm -f "$OUT"/*.tsv*
[ "$SETUP" = 1 ] && { "$ROOT/scripts/setup.sh" || exit 1; }
if [ "$BUILD" = 1 ]; then
    cargo build --release -p verbs-capi || { echo "pyverbs: cargo build failed" >&2; exit 1; }
fi
[ -f "$TARGET/release/libibverbs.so" ] || { echo "pyverbs: no $TARGET/release/libibverbs.so" >&2; exit 1; }
ln -sf "$TARGET/release/libibverbs.so" "$OUT/lib/libibverbs.so.1"

if [ "$NATIVE" = 1 ]; then
    DEVS=()
    [ "${VERBS_TEST_RXE:-rxe0}" != none ] && DEVS+=("${VERBS_TEST_RXE:-rxe0}:${VERBS_TEST_GID_INDEX:-1}")
    [ "${VERBS_TEST_SIW:-siw0}" != none ] && DEVS+=("${VERBS_TEST_SIW:-siw0}:0")
    "$ROOT/scripts/pyverbs-guest.sh" "$OUT" "$OUT/lib" "$RATCHET" "${DEVS[@]}"
    VMRC=$?
else
    # the guest knows rxe0's RoCE v2 IPv4 GID index (VM_RXE_GID_INDEX)
    "$ROOT/vm/run-in-vm.sh" --rw "$OUT" --timeout "${VERBS_PYVERBS_TIMEOUT:-2400}" \
        -e PYVERBS_TESTS="${PYVERBS_TESTS:-}" -- bash -c \
        '"$1" "$2" "$3" "$4" "rxe0:$VM_RXE_GID_INDEX" siw0:0' guest \
        "$ROOT/scripts/pyverbs-guest.sh" "$OUT" "$OUT/lib" "$RATCHET"
    VMRC=$?
    DEVS=(rxe0 siw0)
fi
NAMES=()
for d in "${DEVS[@]}"; do NAMES+=("${d%%:*}"); done
SUBSET=()
[ -n "${PYVERBS_TESTS:-}" ] && SUBSET=(--subset)
python3 "$ROOT/scripts/pyverbs_report.py" "$OUT" "$RATCHET" "${NAMES[@]}" "${UPDATE[@]}" "${SUBSET[@]}"
rc=$?
echo "pyverbs: took $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s (VM/run exit $VMRC)"
if [ "$VMRC" != 0 ] && [ "$rc" = 0 ]; then rc=$VMRC; fi
exit $rc
