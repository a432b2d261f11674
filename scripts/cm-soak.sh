#!/usr/bin/env bash
# Repeat run of the connection-manager device tests (issue #24 item 7): the tests whose names
# match FILTER (default "cm": the cm_* modules, capi_cm and perf_interop's rdma_cm pairs), in
# suite order with --test-threads=1, ROUNDS times in a row in ONE VM boot, so that a test
# depending on what ran before it, or on leftovers in the kernel (ports, cm_ids, TCP state),
# shows up.  Not part of CI (20 rounds take 15-25 minutes under TCG).
#
# usage: scripts/cm-soak.sh [--release] [--rounds N] [--filter F] [-- EXTRA-LIBTEST-ARGS...]
# Prints one line per round ("cm-soak: round R: P passed, F failed, T s", and how many siw
# connects the kernel failed with -EINVAL: the MPA reply race tests/device/cm_ucmatose.rs
# runs again), the failing tests' output, the kernel log and a kprobe timeline of siw's
# connection manager for a failing round, and a last line
# "cm-soak: N/M rounds passed".  Exit status 0 only if every round passed.
# Issue #24 item 7, debug build, 20 rounds of the 44 "cm" tests in one boot (load 7-12 on
# 2 host cores): 44/44 in 19 rounds, 43/44 in round 7 (perf_interop::siw_rdma_cm_read_lat,
# the close race fixed afterwards in verbs-perf); every cm_* and capi_cm test passed all 20.
# Release build, 20 rounds, all fixes but the last: 44/44 in 19 rounds, 43/44 in round 9
# (perftest's clock calibration, r^2 < 0.9; such a run now runs again); 2 lost MPA reply
# races (round 1) were run again and passed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PROFILE=() ROUNDS=20 FILTER=cm
while [ $# -gt 0 ]; do
    case "$1" in
        --release) PROFILE=(--release); shift ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) echo "cm-soak: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
# tests/device/capi*.rs find our libibverbs.so next to the test binary
cargo build -p verbs-capi "${PROFILE[@]}" >&2
BIN=$(cargo test --features internals --test device --no-run "${PROFILE[@]}" \
        --message-format=json-render-diagnostics \
      | grep '"reason":"compiler-artifact"' | grep '"name":"device"' | grep '"kind":\["test"\]' \
      | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "cm-soak: no device test binary" >&2; exit 125; }
echo "cm-soak: $BIN, filter '$FILTER', $ROUNDS rounds" >&2

GUEST='
    bin=$1 rounds=$2 filter=$3; shift 3
    ok=0 counts=""
    # siw connection-manager messages for the kernel log of a failing round: every upcall
    # to iw_cm with its status, and the errors of MPA negotiation (dynamic debug)
    dd=/sys/kernel/debug/dynamic_debug/control
    mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
    for f in "reason=%d, status=%d" "peer sent extra data" "peer EOF" "error: %d" "error %d" \
             "immediate close" "no work available" "mpa reply error" "reply unsupp" "unexpected data" "got mpa reject"; do
        echo "module siw format \"$f\" +p" > $dd 2>/dev/null || echo "cm-soak: no dynamic debug for siw ($f)"
    done
    # and a timeline of the siw connection manager (kprobes): its calls into iw_cm (reason,
    # status), what reading an MPA request/reply returned, its work handler, socket callbacks
    tr=/sys/kernel/tracing
    mountpoint -q $tr || mount -t tracefs none $tr
    for k in "p:siw_upcall siw:siw_cm_upcall reason=%si:s32 status=%dx:s32" \
             "r:siw_mpa_rr siw:siw_recv_mpa_rr ret=\$retval:s32" \
             "p:siw_work siw:siw_cm_work_handler" "p:siw_data_ready siw:siw_cm_llp_data_ready" \
             "p:siw_connect siw:siw_connect" "p:siw_accept siw:siw_accept" \
             "r:siw_connect_ret siw:siw_connect ret=\$retval:s32" "r:siw_accept_ret siw:siw_accept ret=\$retval:s32"; do
        echo "$k" >> $tr/kprobe_events || echo "cm-soak: no kprobe $k"
    done
    echo 1 > $tr/events/kprobes/enable 2>/dev/null || echo "cm-soak: no kprobes on siw"
    echo 20000 > $tr/buffer_size_kb 2>/dev/null
    for r in $(seq 1 "$rounds"); do
        t0=$(date +%s); k0=$(dmesg | wc -l); echo > $tr/trace 2>/dev/null
        "$bin" --ignored --test-threads=1 "$filter" "$@" > "$VM_SCRATCH/round.log" 2>&1; rc=$?
        line=$(grep "^test result:" "$VM_SCRATCH/round.log" | tail -1)
        p=$(echo "$line" | sed -n "s/.* \([0-9]*\) passed.*/\1/p")
        f=$(echo "$line" | sed -n "s/.* \([0-9]*\) failed.*/\1/p")
        # siw connects that failed as a lost MPA reply race (tests/device/cm_ucmatose.rs)
        races=$(dmesg | tail -n +"$((k0 + 1))" | grep -c "reason=2, status=-22")
        echo "cm-soak: round $r: ${p:-?} passed, ${f:-?} failed, $(( $(date +%s) - t0 )) s (exit $rc)," \
             "siw connect replies refused with -EINVAL: $races"
        counts+="${p:-?}/$(( ${p:-0} + ${f:-0} )) "
        if [ $rc = 0 ]; then ok=$((ok + 1)); continue; fi
        echo "----- round $r failed: test output"
        sed -n "/^failures:/,\$p" "$VM_SCRATCH/round.log"
        echo "----- round $r: kernel log of the round"
        dmesg | tail -n +"$((k0 + 1))" | grep -v "speed is unknown" | grep -v "status=0$" | tail -300
        echo "----- round $r: siw timeline before each failed connect reply (kprobes)"
        grep -v "^#" $tr/trace > $VM_SCRATCH/trace.txt
        for n in $(grep -n "siw_upcall.*reason=2 status=-" $VM_SCRATCH/trace.txt | grep -v "status=-104$" | cut -d: -f1 | head -3); do
            echo "--- trace lines $((n > 120 ? n - 120 : 1))..$((n + 10))"
            sed -n "$((n > 120 ? n - 120 : 1)),$((n + 10))p" $VM_SCRATCH/trace.txt
        done
        echo "----- round $r: TCP sockets after the round"
        cat /proc/net/tcp /proc/net/tcp6
    done
    echo "cm-soak: passes per round: $counts"
    echo "cm-soak: $ok/$rounds rounds passed"
    [ "$ok" = "$rounds" ]'
exec "$ROOT/vm/run-in-vm.sh" --timeout $((ROUNDS * 400 + 300)) -e CARGO_MANIFEST_DIR="$ROOT" \
    -- bash -c "$GUEST" guest "$BIN" "$ROUNDS" "$FILTER" "$@"
