#!/usr/bin/env bash
# The main job, from a fresh machine: set everything up (scripts/setup.sh), build the
# tools, boot the RDMA VM (rxe0 + siw0) and show what the library is for, on one boot:
#   1. the devices, as our `verbs-devices` sees them;
#   2. our `verbs-rc-pingpong` against rdma-core's `ibv_rc_pingpong` over rxe0, both
#      directions, next to C with C and ours with ours (usec/iter of each client);
#   3. latency: our `verbs-perf` against perftest (`ib_send_lat`, `ib_write_lat`), each
#      pair of the same program, the client's typical latency in a table.
#   4. over siw0 (iWARP, connected by our pure-Rust rdma_cm, verbs::cm): our `verbs-rping`
#      against rdma-core's `rping`, both directions, next to C with C and ours with ours
#      (milliseconds for the client's pings, validated).
# The VM runs under TCG when there is no KVM (50-100x slower than the host): the numbers
# show the shape (ours vs C on the same boot), not what the hardware could do.
#   scripts/main.sh [--native]   --native: run on this host's own RDMA devices, no VM
#                                (VERBS_TEST_RXE / VERBS_TEST_GID_INDEX choose the device)
#   scripts/main.sh --guest      the part that runs in the VM (or natively)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

guest() {
    local dev=${VERBS_TEST_RXE:-rxe0} gid=${VERBS_TEST_GID_INDEX:-${VM_RXE_GID_INDEX:-1}}
    local bin=target/release iters=${MAIN_ITERS:-500} port=18800 failed=0
    local out; out=$(mktemp -d)
    # listening PORT: true once a TCP socket listens there (the C clients connect once)
    listening() {
        awk -v p=":$(printf '%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
            /proc/net/tcp
    }
    # pair NAME SERVER CLIENT ARGS...: the server, then the client once it listens; the
    # client's output lands in $out/NAME.client (the server's in $out/NAME.server)
    pair() {
        local name=$1 srv=$2 cli=$3; shift 3
        port=$((port + 1))
        "$srv" "$@" -p "$port" >"$out/$name.server" 2>&1 &
        local spid=$! t=0
        until listening "$port"; do
            sleep 0.1; t=$((t + 1))
            if [ "$t" -gt 600 ] || ! kill -0 "$spid" 2>/dev/null; then break; fi
        done
        local rc=0
        timeout 300 "$cli" "$@" -p "$port" 127.0.0.1 >"$out/$name.client" 2>&1 || rc=$?
        wait "$spid" || rc=$?
        if [ "$rc" != 0 ]; then
            failed=1
            echo "!! $name failed (exit $rc):"; sed 's/^/   server: /' "$out/$name.server"
            sed 's/^/   client: /' "$out/$name.client"
        fi
    }
    usec_iter() { awk '/ iters in .* usec\/iter/ { print $(NF - 1); f = 1 } END { if (!f) print "-" }' "$1"; }
    # typical FILE SIZE ITERS: t_typical of the result row (perftest's and ours alike)
    typical() { awk -v s="$2" -v n="$3" '$1 == s && $2 == n && NF >= 5 { print $5; f = 1 } END { if (!f) print "-" }' "$1"; }
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", b / a; else print "-" }'; }

    echo "== devices (verbs-devices)"
    "$bin/verbs-devices"
    echo
    echo "== RC ping-pong over $dev: $iters iterations of 4096 bytes, GID index $gid"
    local C=ibv_rc_pingpong R=$bin/verbs-rc-pingpong a=(-d "$dev" -g "$gid" -n "$iters")
    pair cc "$C" "$C" "${a[@]}"
    pair rr "$R" "$R" "${a[@]}"
    pair rc "$R" "$C" "${a[@]}"
    pair cr "$C" "$R" "${a[@]}"
    printf '%-20s %-20s %12s\n' server client usec/iter
    printf '%-20s %-20s %12s\n' ibv_rc_pingpong ibv_rc_pingpong "$(usec_iter "$out/cc.client")" \
        verbs-rc-pingpong verbs-rc-pingpong "$(usec_iter "$out/rr.client")" \
        verbs-rc-pingpong ibv_rc_pingpong "$(usec_iter "$out/rc.client")" \
        ibv_rc_pingpong verbs-rc-pingpong "$(usec_iter "$out/cr.client")"
    echo
    echo "== latency over $dev: perftest vs verbs-perf, 8 bytes, $iters iterations, t_typical of the client [usec]"
    printf '%-10s %12s %12s %10s\n' test perftest verbs-perf ours/C
    local t p v
    for t in send_lat write_lat; do
        pair "ib_$t" "ib_$t" "ib_$t" -d "$dev" -x "$gid" -s 8 -n "$iters"
        pair "ours_$t" "$bin/verbs-perf" "$bin/verbs-perf" "$t" -d "$dev" -x "$gid" -s 8 -n "$iters"
        p=$(typical "$out/ib_$t.client" 8 "$iters"); v=$(typical "$out/ours_$t.client" 8 "$iters")
        printf '%-10s %12s %12s %10s\n' "$t" "$p" "$v" "$(ratio "$p" "$v")"
    done
    echo
    local sdev=${VERBS_TEST_SIW:-siw0} sip=${VERBS_TEST_SIW_IP:-${VM_SIW_IP:-}} pings=${MAIN_PINGS:-50}
    if [ -n "$sip" ]; then
        echo "== rping over $sdev ($sip, iWARP, connected through rdma_cm): $pings pings of 64 bytes, validated"
        printf '%-12s %-12s %10s\n' server client ms
        local s c rc t0 t1
        for s in rping verbs-rping; do
            for c in rping verbs-rping; do
                port=$((port + 1))
                local sp=$s cp=$c
                [ "$s" = verbs-rping ] && sp=$bin/verbs-rping
                [ "$c" = verbs-rping ] && cp=$bin/verbs-rping
                "$sp" -s -a "$sip" -p "$port" -C "$pings" -V >"$out/rping.server" 2>&1 &
                local spid=$! n=0
                until listening "$port" || [ "$n" -gt 600 ]; do sleep 0.1; n=$((n + 1)); done
                rc=0; t0=$(date +%s%N)
                timeout 300 "$cp" -c -a "$sip" -p "$port" -C "$pings" -V >"$out/rping.client" 2>&1 || rc=$?
                t1=$(date +%s%N)
                wait "$spid" || rc=$?
                if [ "$rc" != 0 ]; then
                    failed=1; echo "!! rping $s / $c failed (exit $rc):"
                    sed 's/^/   server: /' "$out/rping.server"; sed 's/^/   client: /' "$out/rping.client"
                else
                    printf '%-12s %-12s %10s\n' "$s" "$c" "$(( (t1 - t0) / 1000000 ))"
                fi
            done
        done
    else
        echo "== $sdev: skipped (no IPv4 address for it: set VERBS_TEST_SIW_IP)"
    fi
    rm -rf "$out"
    return "$failed"
}

case "${1:-}" in
    --guest) guest; exit ;;
    --native) NATIVE=1 ;;
    "") NATIVE=0 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
T0=$(date +%s)
[ "$NATIVE" = 1 ] || scripts/setup.sh
cargo build --release --bins
if [ "$NATIVE" = 1 ]; then "$0" --guest; else vm/run-in-vm.sh --timeout 900 -- bash scripts/main.sh --guest; fi
echo "main: done in $(( $(date +%s) - T0 ))s"
