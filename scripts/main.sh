#!/usr/bin/env bash
# The main job, from a fresh machine: set everything up (scripts/setup.sh), build the
# tools, boot the RDMA VM (rxe0 + siw0) and run our `verbs-devices` and `verbs-devinfo -v`
# there, next to rdma-core's `ibv_devices` for reference.
# (Once data moves, this becomes our ping-pong against rdma-core's.)
#   scripts/main.sh [--native]   --native: run on this host's own RDMA devices, no VM
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
T0=$(date +%s)
NATIVE=0; [ "${1:-}" = --native ] && NATIVE=1
[ "$NATIVE" = 1 ] || scripts/setup.sh
cargo build --release --bins
JOB='echo "== ibv_devices (rdma-core)"; ibv_devices; echo "== verbs-devices"; target/release/verbs-devices; echo "== verbs-devinfo -v"; target/release/verbs-devinfo -v'
if [ "$NATIVE" = 1 ]; then bash -c "$JOB"; else vm/run-in-vm.sh --timeout 600 -- bash -c "$JOB"; fi
echo "main: done in $(( $(date +%s) - T0 ))s"
