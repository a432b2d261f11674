#!/usr/bin/env bash
# The guest half of scripts/bench.sh: runs inside the VM (one boot) and writes raw results
# to $OUT (a directory shared writable with the host).  Ours and rdma-core's C path run on
# the same device, alternating run by run (C, ours, C, ours, ...) so that drift in the
# emulator's speed hits both sides alike.
#
# Environment (set by scripts/bench.sh):
#   OUT          raw result directory (required)
#   C_OPS        rdma-core ops bench (benches/c/ops_bench.c, built with gcc -libverbs)
#   OURS_OPS     our ops bench (benches/ops_bench.rs)       -- optional: missing = not measured
#   OURS_PERF    our perftest twin (verbs-perf)             -- optional: missing = not measured
#   REPS         runs per workload and side (default 5 from bench.sh)
#   LAT_SIZES    message sizes of the latency tests (default "2 16 128 1024 4096")
#   LAT_ITERS, BW_ITERS, BW_SIZE, OPS_ITERS, POLL_BATCH, POLL_ROUNDS
#   DEV, GIDX    device and RoCE v2 GID index (default rxe0, $VM_RXE_GID_INDEX)
set -uo pipefail
: "${OUT:?}"
REPS=${REPS:-3}
LAT_SIZES=${LAT_SIZES:-"2 16 128 1024 4096"}
LAT_ITERS=${LAT_ITERS:-2000}
BW_ITERS=${BW_ITERS:-10000}
BW_SIZE=${BW_SIZE:-8}
OPS_ITERS=${OPS_ITERS:-2000}
POLL_BATCH=${POLL_BATCH:-16}
POLL_ROUNDS=${POLL_ROUNDS:-50}
DEV=${DEV:-rxe0}
GIDX=${GIDX:-${VM_RXE_GID_INDEX:-1}}
PORT=18515
mkdir -p "$OUT/lat" "$OUT/bw" "$OUT/ops" "$OUT/cg"

{
    echo "guest_kernel=$(uname -r)"
    echo "guest_nproc=$(nproc)"
    echo "guest_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "perftest=$(dpkg-query -W -f '${Version}' perftest 2>/dev/null)"
    echo "rdma_core=$(dpkg-query -W -f '${Version}' rdma-core 2>/dev/null)"
    echo "valgrind=$(valgrind --version 2>/dev/null)"
    echo "device=$DEV gid_index=$GIDX"
} > "$OUT/guest-info.txt"

have() { [ -n "${1:-}" ] && [ -x "$1" ]; }

# wait until something listens on TCP port $1 (the server side of a pair), at most ~20 s
wait_listen() {
    local i
    for i in $(seq 200); do
        ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

# run_pair OUTFILE CMD ARGS...: server (CMD ARGS) in the background, client (CMD ARGS
# 127.0.0.1) in the foreground; the client's output goes to OUTFILE, the server's to
# OUTFILE.server.  Each pair gets a fresh port.
run_pair() {
    local out=$1 spid rc; shift
    PORT=$((PORT + 1))
    timeout 120 "$@" -p "$PORT" > "$out.server" 2>&1 & spid=$!
    if ! wait_listen "$PORT"; then
        echo "bench-guest: server did not listen: $*" >> "$out"; kill "$spid" 2>/dev/null; wait "$spid"; return 1
    fi
    timeout 120 "$@" -p "$PORT" 127.0.0.1 > "$out" 2>&1; rc=$?
    wait "$spid" || rc=$((rc ? rc : 1))
    echo "exit=$rc" >> "$out"
    return "$rc"
}

# sides: name -> command prefix for the perftest-like workloads
perf_cmd() {  # SIDE TEST -> prints nothing, sets CMD array
    case "$1" in
        c) CMD=("ib_$2") ;;
        ours) CMD=("$OURS_PERF" "$2") ;;
    esac
}
SIDES=(c)
have "${OURS_PERF:-}" && SIDES+=(ours)

echo "bench-guest: [${SECONDS}s] latency (sizes $LAT_SIZES, $REPS reps, sides ${SIDES[*]})" >&2
for test in send_lat write_lat; do
    for size in $LAT_SIZES; do
        for rep in $(seq "$REPS"); do
            for side in "${SIDES[@]}"; do
                perf_cmd "$side" "$test"
                run_pair "$OUT/lat/$test.s$size.$side.$rep.txt" "${CMD[@]}" -d "$DEV" -x "$GIDX" \
                    -s "$size" -n "$LAT_ITERS" -F || echo "bench-guest: FAILED $test s$size $side #$rep" >&2
            done
        done
    done
done

echo "bench-guest: [${SECONDS}s] message rate (size $BW_SIZE, $REPS reps)" >&2
for test in send_bw write_bw; do
    for cfg in "q1 l1" "q1 l8" "q4 l8"; do
        set -- $cfg; q=${1#q}; l=${2#l}
        for rep in $(seq "$REPS"); do
            for side in "${SIDES[@]}"; do
                perf_cmd "$side" "$test"
                run_pair "$OUT/bw/$test.q$q.l$l.$side.$rep.txt" "${CMD[@]}" -d "$DEV" -x "$GIDX" \
                    -s "$BW_SIZE" -n "$BW_ITERS" -q "$q" -l "$l" -F || echo "bench-guest: FAILED $test q$q l$l $side #$rep" >&2
            done
        done
    done
done

OPS_SIDES=(c)
have "${OURS_OPS:-}" && OPS_SIDES+=(ours)
ops_bin() { case "$1" in c) echo "$C_OPS" ;; ours) echo "$OURS_OPS" ;; esac; }
OPS_ARGS=(-d "$DEV" -x "$GIDX" -n "$OPS_ITERS" -b "$POLL_BATCH" -r "$POLL_ROUNDS")

echo "bench-guest: [${SECONDS}s] ops benches, wall time (emulated; informative)" >&2
for rep in $(seq "$REPS"); do
    for side in "${OPS_SIDES[@]}"; do
        out=$OUT/ops/wall.$side.$rep.txt
        timeout 300 "$(ops_bin "$side")" "${OPS_ARGS[@]}" > "$out" 2>&1
        echo "exit=$?" >> "$out"
    done
done

# One callgrind run per measured function and side: --toggle-collect makes the run's
# "Collected" total exactly the inclusive userspace instructions inside that function.
# A Rust function's symbol demangles to path::name (with or without its ::h<hash>),
# hence the other two patterns.
echo "bench-guest: [${SECONDS}s] callgrind (instructions per call)" >&2
for fn in bench_post_send bench_post_recv bench_poll_cq bench_poll_with bench_poll_cq_empty; do
    for side in "${OPS_SIDES[@]}"; do
        # poll_with is ours only (the report compares it with ibv_poll_cq)
        [ "$fn" = bench_poll_with ] && [ "$side" = c ] && continue
        out=$OUT/cg/$fn.$side.txt
        timeout 600 valgrind --tool=callgrind --toggle-collect="$fn" --toggle-collect="*::$fn" --toggle-collect="*::$fn::h*" \
            --callgrind-out-file="$OUT/cg/$fn.$side.callgrind" \
            "$(ops_bin "$side")" "${OPS_ARGS[@]}" > "$out" 2>&1
        echo "exit=$?" >> "$out"
    done
done
echo "bench-guest: [${SECONDS}s] done" >&2
