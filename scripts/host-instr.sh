#!/usr/bin/env bash
# Userspace instructions per call of the rxe and siw data-path functions on
# plain memory (no VM, no device): runs benches/rings.rs and
# benches/siw_rings.rs in their smoke mode under
# callgrind once per measured wrapper (--toggle-collect) and divides the
# collected instructions by the number of calls. The numbers exclude the
# doorbell system call and the QP/CQ dispatch, which only the VM bench
# (scripts/bench.sh) sees. Needs valgrind.
#
# usage: scripts/host-instr.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "host-instr: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
bench_bin() {
    cargo bench --features internals --bench "$1" --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]==sys.argv[1] and m.get("executable"): print(m["executable"])' "$1"
}
rxe=$(bench_bin rings)
[ -x "$rxe" ] || { echo "host-instr: could not build benches/rings.rs" >&2; exit 1; }
siw=$(bench_bin siw_rings)
[ -x "$siw" ] || { echo "host-instr: could not build benches/siw_rings.rs" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Smoke mode (no --bench): each case runs 1 warm-up call + 15 x 10 calls.
CALLS=151
printf '%-24s %10s\n' "function" "instr/call"
count() {  # BINARY FUNCTION
    valgrind --tool=callgrind --toggle-collect="*::$2" --callgrind-out-file="$out/$2.cg" "$1" \
        > /dev/null 2> "$out/$2.log"
    total=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$out/$2.cg" | head -1)
    printf '%-24s %10.1f\n' "$2" "$(echo "$total / $CALLS" | bc -l)"
}
for fn in host_post_send host_post_send_inline host_post_send_list host_post_recv host_poll_cq host_poll_with host_poll_cq_empty; do
    count "$rxe" "$fn"
done
for fn in siw_post_send siw_post_recv siw_poll_cq siw_poll_with siw_poll_cq_empty; do
    count "$siw" "$fn"
done
echo "(host_post_send_list: per list of 8; *_poll_cq, *_poll_with: per batch of 16)"
