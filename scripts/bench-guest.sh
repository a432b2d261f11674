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
#   CAPI_LIB     a directory with libibverbs.so.1 -> ours   -- optional: side "capi" (perftest and
#                the C ops bench on our C library)
#   REPS         runs per workload and side (default 5 from bench.sh)
#   LAT_SIZES    message sizes of the latency tests (default "2 16 128 1024 4096")
#   LAT_ITERS, BW_ITERS, BW_SIZE, OPS_ITERS, POLL_BATCH, POLL_ROUNDS
#   DEV, GIDX    device and RoCE v2 GID index (default rxe0, $VM_RXE_GID_INDEX)
#   SIW_DEV, SIW_IP, SIW_LAT_SIZES   the siw0 rows (default siw0, $VM_SIW_IP, "2 1024")
#   ONLY         "loop": only the latency loops under callgrind (LOOP_N1, LOOP_N2, LOOP_SIZE);
#                "ops": only the callgrind runs of the ops benches (no latency, message
#                rate or wall time), restricted by OPS_FNS, OPS_DEVS and ONLY_SIDES:
#   OPS_FNS      ops measured (default "post_send post_recv poll_cq poll_with poll_cq_empty")
#   OPS_DEVS     devices measured (default "rxe siw")
#   ONLY_SIDES   sides measured (default: every side built: c, ours, capi)
#   CG_ARGS      extra valgrind options of the rxe0 callgrind runs (e.g. --dump-instr=yes)
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
# $PAIR_HOST, default 127.0.0.1) in the foreground; the client's output goes to OUTFILE, the
# server's to OUTFILE.server.  Each pair gets a fresh port.  (With -R on siw0 the listener is
# siw's kernel TCP socket on the same port, so wait_listen sees it too.)
PAIR_HOST=127.0.0.1
CLIENT_WRAP=()  # a prefix for the client's command only (valgrind, for the loop rows)
run_pair() {
    local out=$1 spid rc; shift
    PORT=$((PORT + 1))
    timeout "${SERVER_TIMEOUT:-120}" "$@" -p "$PORT" > "$out.server" 2>&1 & spid=$!
    if ! wait_listen "$PORT"; then
        echo "bench-guest: server did not listen: $*" >> "$out"; kill "$spid" 2>/dev/null; wait "$spid"; return 1
    fi
    timeout "${CLIENT_TIMEOUT:-120}" ${CLIENT_WRAP[@]+"${CLIENT_WRAP[@]}"} "$@" -p "$PORT" "$PAIR_HOST" > "$out" 2>&1; rc=$?
    wait "$spid" || rc=$((rc ? rc : 1))
    echo "exit=$rc" >> "$out"
    return "$rc"
}

# sides: name -> command prefix for the perftest-like workloads
# capi: perftest itself, on our libibverbs.so.1 (CAPI_LIB holds the libibverbs.so.1 link)
perf_cmd() {  # SIDE TEST -> prints nothing, sets CMD array
    case "$1" in
        c) CMD=("ib_$2") ;;
        ours) CMD=("$OURS_PERF" "$2") ;;
        capi) CMD=(env "LD_LIBRARY_PATH=$CAPI_LIB" "ib_$2") ;;
    esac
}
SIDES=(c)
have "${OURS_PERF:-}" && SIDES+=(ours)
[ -n "${CAPI_LIB:-}" ] && [ -e "$CAPI_LIB/libibverbs.so.1" ] && SIDES+=(capi)

ONLY=${ONLY:-}
OPS_FNS=${OPS_FNS:-"post_send post_recv poll_cq poll_with poll_cq_empty"}
OPS_DEVS=${OPS_DEVS:-"rxe siw"}
ONLY_SIDES=${ONLY_SIDES:-}
# keep only the sides ONLY_SIDES names (all if it is empty): filter_sides NAME_OF_ARRAY
filter_sides() {
    local -n arr=$1
    local kept=() s
    for s in "${arr[@]}"; do
        [ -z "$ONLY_SIDES" ] || [[ " $ONLY_SIDES " == *" $s "* ]] && kept+=("$s")
    done
    arr=("${kept[@]}")
}
in_list() { [[ " $2 " == *" $1 "* ]]; }
if [ "$ONLY" = ops ]; then SIDES=(); fi

# loop_rows DIR ARGS...: userspace instructions per iteration of the whole client loop of
# send_lat and write_lat, perftest's and ours: the client under callgrind (the server native)
# with -n LOOP_N1 and -n LOOP_N2 iterations; the report takes the difference over
# LOOP_N2 - LOOP_N1 (setup and teardown cancel out). Writes DIR/<test>.n<N>.<side>.txt and
# .callgrind (per instruction, --dump-instr=yes: scripts/cg_waits.py splits off the spinning).
LOOP_N1=${LOOP_N1:-100}
LOOP_N2=${LOOP_N2:-600}
LOOP_SIZE=${LOOP_SIZE:-2}
loop_rows() {
    local dir=$1 test side n; shift
    mkdir -p "$dir"
    for test in send_lat write_lat; do
        for side in "${LOOP_SIDES[@]}"; do
            for n in "$LOOP_N1" "$LOOP_N2"; do
                perf_cmd "$side" "$test"
                CLIENT_WRAP=(valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$dir/$test.n$n.$side.callgrind")
                # the server waits while valgrind starts the client (minutes on a loaded host)
                SERVER_TIMEOUT=660 CLIENT_TIMEOUT=600 run_pair "$dir/$test.n$n.$side.txt" "${CMD[@]}" "$@" -s "$LOOP_SIZE" -n "$n" -F \
                    || echo "bench-guest: FAILED loop $test n$n $side" >&2
                CLIENT_WRAP=()
            done
        done
    done
}
LOOP_SIDES=(c)
have "${OURS_PERF:-}" && LOOP_SIDES+=(ours)
case "$ONLY" in
    ops) LOOP_SIDES=() ;;
    loop) SIDES=() ;;
esac

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
[ -n "${CAPI_LIB:-}" ] && [ -e "$CAPI_LIB/libibverbs.so.1" ] && OPS_SIDES+=(capi)
ops_bin() { case "$1" in c|capi) echo "$C_OPS" ;; ours) echo "$OURS_OPS" ;; esac; }
# the library the C ops bench runs on: rdma-core's, or ours for side capi
ops_env() { if [ "$1" = capi ]; then echo "LD_LIBRARY_PATH=$CAPI_LIB"; else echo "VERBS_BENCH_SIDE=$1"; fi; }
OPS_ARGS=(-d "$DEV" -x "$GIDX" -n "$OPS_ITERS" -b "$POLL_BATCH" -r "$POLL_ROUNDS")

filter_sides OPS_SIDES
in_list rxe "$OPS_DEVS" || OPS_SIDES=()
[ "$ONLY" = loop ] && OPS_SIDES=()
echo "bench-guest: [${SECONDS}s] ops benches, wall time (emulated; informative)" >&2
[ -n "$ONLY" ] || for rep in $(seq "$REPS"); do
    for side in "${OPS_SIDES[@]}"; do
        out=$OUT/ops/wall.$side.$rep.txt
        env "$(ops_env "$side")" timeout 300 "$(ops_bin "$side")" "${OPS_ARGS[@]}" > "$out" 2>&1
        echo "exit=$?" >> "$out"
    done
done

# ours: per-instruction counts too (the annotated listings of BENCHMARKS.md's floors)
# (per instruction, and per caller chain so that each wrapper's callees stay apart)
cg_instr() { [ "$1" = ours ] && echo --dump-instr=yes --separate-callers=4; }
# One callgrind run per side: --toggle-collect on every measured wrapper makes the
# collected costs exactly the userspace instructions inside those calls, and a wrapper's
# inclusive cost (its own and its callees', scripts/cg_listing.py --inclusive) is what
# a run toggled on it alone would collect. Each op gets DIR/bench_<op>.<side>.txt: the
# bench's output and "Collected : <that cost>". (A Rust function's symbol demangles to
# path::name, with or without its ::h<hash>: hence the three patterns.)
CG_LISTING=$(dirname "${BASH_SOURCE[0]}")/cg_listing.py
cg_ops() {  # DIR SIDE BENCH-ARGS...
    local dir=$1 side=$2 op n toggles=(); shift 2
    for op in $OPS_FNS; do
        toggles+=(--toggle-collect="bench_$op" --toggle-collect="*::bench_$op" --toggle-collect="*::bench_$op::h*")
    done
    env "$(ops_env "$side")" timeout 900 valgrind --tool=callgrind ${CG_ARGS:-} $(cg_instr "$side") "${toggles[@]}" \
        --callgrind-out-file="$dir/all.$side.callgrind" "$(ops_bin "$side")" "$@" > "$dir/all.$side.txt" 2>&1
    echo "exit=$?" >> "$dir/all.$side.txt"
    for op in $OPS_FNS; do
        # poll_with is ours only (the report compares it with ibv_poll_cq)
        [ "$op" = poll_with ] && [ "$side" != ours ] && continue
        n=$(python3 "$CG_LISTING" --inclusive "$dir/all.$side.callgrind" "bench_$op" 2>/dev/null)
        { grep -v '^==' "$dir/all.$side.txt"; echo "Collected : ${n:-}"; } > "$dir/bench_$op.$side.txt"
    done
}
echo "bench-guest: [${SECONDS}s] callgrind (instructions per call)" >&2
for side in "${OPS_SIDES[@]}"; do
    cg_ops "$OUT/cg" "$side" "${OPS_ARGS[@]}"
done
echo "bench-guest: [${SECONDS}s] rxe0 latency loop under callgrind (-n $LOOP_N1 and $LOOP_N2)" >&2
loop_rows "$OUT/loop" -d "$DEV" -x "$GIDX"
# ---- siw0 (SoftiWARP): perftest's rdma_cm mode (-R) on both sides, and the ops benches
# with their QPs connected by the connection manager (-c), against rdma-core's libsiw.
SIW_DEV=${SIW_DEV:-siw0}
SIW_IP=${SIW_IP:-${VM_SIW_IP:-}}
SIW_LAT_SIZES=${SIW_LAT_SIZES:-"2 1024"}
if ! in_list siw "$OPS_DEVS"; then
    :  # rxe0's rows only
elif [ -n "$SIW_IP" ] && [ -e "/sys/class/infiniband/$SIW_DEV" ]; then
    mkdir -p "$OUT/siw/lat" "$OUT/siw/bw" "$OUT/siw/cg"
    echo "siw_device=$SIW_DEV siw_ip=$SIW_IP" >> "$OUT/guest-info.txt"
    PAIR_HOST=$SIW_IP
    # latency and message rate: rdma-core's side and ours; the ops benches also through
    # our C library (side capi: the C ops bench on our libibverbs.so.1)
    SIW_SIDES=(c) SIW_OPS_SIDES=(c)
    have "${OURS_PERF:-}" && SIW_SIDES+=(ours)
    have "${OURS_OPS:-}" && SIW_OPS_SIDES+=(ours)
    [ -n "${CAPI_LIB:-}" ] && [ -e "$CAPI_LIB/libibverbs.so.1" ] && SIW_OPS_SIDES+=(capi)
    filter_sides SIW_OPS_SIDES
    [ "$ONLY" = ops ] && SIW_SIDES=()
    [ "$ONLY" = loop ] && SIW_SIDES=() SIW_OPS_SIDES=()
    echo "bench-guest: [${SECONDS}s] siw0 latency with -R (sizes $SIW_LAT_SIZES)" >&2
    for test in send_lat write_lat; do
        for size in $SIW_LAT_SIZES; do
            for rep in $(seq "$REPS"); do
                for side in "${SIW_SIDES[@]}"; do
                    perf_cmd "$side" "$test"
                    run_pair "$OUT/siw/lat/$test.s$size.$side.$rep.txt" "${CMD[@]}" -R -d "$SIW_DEV" \
                        -s "$size" -n "$LAT_ITERS" -F || echo "bench-guest: FAILED siw $test s$size $side #$rep" >&2
                done
            done
        done
    done
    # write_bw only (send_bw on iWARP adds perftest's receive credits: tested in
    # tests/device/perf_interop.rs, not measured here).
    echo "bench-guest: [${SECONDS}s] siw0 message rate with -R" >&2
    for cfg in "q1 l1" "q1 l8"; do
        set -- $cfg; q=${1#q}; l=${2#l}
        for rep in $(seq "$REPS"); do
            for side in "${SIW_SIDES[@]}"; do
                perf_cmd "$side" write_bw
                run_pair "$OUT/siw/bw/write_bw.q$q.l$l.$side.$rep.txt" "${CMD[@]}" -R -d "$SIW_DEV" \
                    -s "$BW_SIZE" -n "$BW_ITERS" -q "$q" -l "$l" -F || echo "bench-guest: FAILED siw write_bw q$q l$l $side #$rep" >&2
            done
        done
    done
    echo "bench-guest: [${SECONDS}s] siw0 latency loop under callgrind (-n $LOOP_N1 and $LOOP_N2)" >&2
    loop_rows "$OUT/siw/loop" -R -d "$SIW_DEV"
    PAIR_HOST=127.0.0.1
    echo "bench-guest: [${SECONDS}s] siw0 callgrind (instructions per call)" >&2
    SIW_OPS_ARGS=(-c "$SIW_IP" -n "$OPS_ITERS" -b "$POLL_BATCH" -r "$POLL_ROUNDS")
    for side in "${SIW_OPS_SIDES[@]}"; do
        cg_ops "$OUT/siw/cg" "$side" "${SIW_OPS_ARGS[@]}"
    done
else
    echo "bench-guest: no $SIW_DEV (or no VM_SIW_IP): siw rows not measured" >&2
fi
echo "bench-guest: [${SECONDS}s] done" >&2
