#!/usr/bin/env bash
# One command to prepare a machine for the project's tests (idempotent; the second run takes
# about a second): checks the Rust toolchain, then vm/setup.sh installs qemu + the RDMA
# userland (apt), fetches the pinned Debian kernel, builds siw.ko and the initramfs, all
# cached in ${VERBS_VM_CACHE:-${XDG_CACHE_HOME:-~/.cache}/verbs-vm}.
# usage: scripts/setup.sh [vm/setup.sh options]   (see vm/setup.sh --help)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T0=$(date +%s.%N)
command -v cargo >/dev/null || {
    echo "setup: cargo not found: install a Rust toolchain (rustup, rust-version in Cargo.toml)" >&2
    exit 1
}
"$ROOT/vm/setup.sh" "$@"
echo "setup: done in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
