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
# PYVERBS_TESTS (scripts/pyverbs.sh --tests): a file of test ids to run instead of all
ONLY=()
[ -n "${PYVERBS_TESTS:-}" ] && ONLY=(--tests "$PYVERBS_TESTS")
for spec in "$@"; do
    dev=${spec%%:*} gid=${spec#*:}
    for lib in rdma-core ours; do
        t=$(date +%s.%N)
        if [ "$lib" = ours ]; then
            env LD_LIBRARY_PATH="$LIBDIR" /usr/bin/python3 "$HERE/pyverbs_run.py" --suite "$SUITE" \
                --dev "$dev" --gid "$gid" --map-netdev --out "$OUT/$lib-$dev.tsv" --retry-file "$RATCHET" \
                --baseline "$OUT/rdma-core-$dev.tsv" "${ONLY[@]}"
        else
            /usr/bin/python3 "$HERE/pyverbs_run.py" --suite "$SUITE" --dev "$dev" --gid "$gid" \
                --map-netdev --out "$OUT/$lib-$dev.tsv" "${ONLY[@]}"
        fi
        echo "pyverbs: $dev on $lib: exit $?, $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
    done
done
