#!/usr/bin/env bash
# Guest side of scripts/pyverbs.sh: rdma-core's pyverbs suite on each device, first on
# rdma-core's libibverbs.so.1, then on ours (LD_LIBRARY_PATH=LIBDIR), results in OUT.
# usage: pyverbs-guest.sh OUT LIBDIR RATCHET DEV:GID...
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$1 LIBDIR=$2 RATCHET=$3; shift 3
SRC=/usr/share/doc/rdma-core/tests
[ -f "$SRC/run_tests.py" ] || { echo "pyverbs: $SRC/run_tests.py missing (apt install python3-pyverbs)" >&2; exit 3; }
SUITE=$(mktemp -d)/tests
cp -r "$SRC" "$SUITE" && gunzip -f "$SUITE"/*.gz || exit 3
# The records are written on the guest's own file system and copied to OUT (a 9p share from
# the host) after each run: the runner's supervisor stats the file while the test process
# appends to it, and on the 9p share that stat could pull back a stale size, so that the next
# append overwrote the last records (tests seen as "crashed, the test process exited with 0").
WORK=$(mktemp -d)
# PYVERBS_TESTS (scripts/pyverbs.sh --tests): a file of test ids to run instead of all
ONLY=()
[ -n "${PYVERBS_TESTS:-}" ] && ONLY=(--tests "$PYVERBS_TESTS")
for spec in "$@"; do
    dev=${spec%%:*} gid=${spec#*:}
    for lib in rdma-core ours; do
        t=$(date +%s.%N)
        if [ "$lib" = ours ]; then
            env LD_LIBRARY_PATH="$LIBDIR" /usr/bin/python3 "$HERE/pyverbs_run.py" --suite "$SUITE" \
                --dev "$dev" --gid "$gid" --map-netdev --out "$WORK/$lib-$dev.tsv" --retry-file "$RATCHET" \
                --baseline "$WORK/rdma-core-$dev.tsv" "${ONLY[@]}"
        else
            /usr/bin/python3 "$HERE/pyverbs_run.py" --suite "$SUITE" --dev "$dev" --gid "$gid" \
                --map-netdev --out "$WORK/$lib-$dev.tsv" "${ONLY[@]}"
        fi
        rc=$?
        cp "$WORK/$lib-$dev".tsv* "$OUT/"
        echo "pyverbs: $dev on $lib: exit $rc, $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
    done
done
