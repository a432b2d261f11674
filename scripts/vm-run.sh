#!/usr/bin/env bash
# Run a command, a cargo binary or a test target inside the RDMA test VM (rxe0 + siw0).
# Cargo builds happen on the host (building under TCG is slow); the guest sees the host's
# filesystem (copy-on-write: guest writes vanish, except under --rw dirs).
#
# usage: scripts/vm-run.sh [options] -- CMD [ARGS...]
#        scripts/vm-run.sh [options] --bin NAME [-- ARGS...]    cargo build --bin NAME, run it
#        scripts/vm-run.sh [options] --example NAME [-- ARGS...]
#        scripts/vm-run.sh [options] --test NAME [-- ARGS...]   a test target, e.g.
#            scripts/vm-run.sh --test device -- --ignored --test-threads=1 harness::
#   --rw-project      make the project directory writable in the guest (writes reach the host)
#   --release         build with --release
#   other options go to vm/run-in-vm.sh (--timeout SECS, -e VAR=VAL, --keep, -v, ...; see
#   vm/run-in-vm.sh --help).  The command runs in the caller's directory.
# Exit status: the command's; 124 timeout, 125 VM setup failed, 126 VM died.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIND="" NAME="" PROFILE=() VMOPTS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin|--example|--test) KIND=${1#--}; NAME=$2; shift 2 ;;
        --release) PROFILE=(--release); shift ;;
        --rw-project) VMOPTS+=(--rw "$ROOT"); shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        # run-in-vm.sh options with a value
        -k|--kernel|--accel|-m|--mem|--smp|--rw|-e|--env|--netdev|--rdma-devs|--timeout)
            VMOPTS+=("$1" "$2"); shift 2 ;;
        *) VMOPTS+=("$1"); shift ;;
    esac
done
CMD=("$@")
if [ -n "$KIND" ]; then
    # cargo prints the artifact's path in its JSON messages
    if [ "$KIND" = test ]; then
        build=(cargo test --manifest-path "$ROOT/Cargo.toml" --test "$NAME" --no-run)
    else
        build=(cargo build --manifest-path "$ROOT/Cargo.toml" "--$KIND" "$NAME")
    fi
    exe=$("${build[@]}" "${PROFILE[@]}" --message-format=json-render-diagnostics \
          | grep '"reason":"compiler-artifact"' | grep "\"name\":\"$NAME\"" \
          | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
    [ -n "$exe" ] && [ -x "$exe" ] || { echo "vm-run: no executable for --$KIND $NAME" >&2; exit 125; }
    CMD=("$exe" "${CMD[@]}")
fi
[ ${#CMD[@]} -gt 0 ] || { echo "vm-run: no command (see --help)" >&2; exit 2; }
exec "$ROOT/vm/run-in-vm.sh" "${VMOPTS[@]}" -- "${CMD[@]}"
