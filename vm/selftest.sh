#!/usr/bin/env bash
# Self-test of the VM harness: inside the VM, ibv_devinfo lists rxe0 and siw0 with port 1
# PORT_ACTIVE, and ibv_rc_pingpong completes on rxe0 (RoCE v2, GID index $VM_RXE_GID_INDEX).
#
# usage: vm/selftest.sh            on the host: boots the VM and runs itself there
#        vm/selftest.sh --inside   already in the VM (or on a host with real rxe0/siw0)
# Output ends with "selftest: PASS" or "selftest: FAIL (...)"; exit status 0 = pass.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "${1:-}" != --inside ]; then
    exec "$HERE/run-in-vm.sh" --timeout "${SELFTEST_TIMEOUT:-600}" -- "$HERE/selftest.sh" --inside
fi

RXE=${VERBS_TEST_RXE:-rxe0} SIW=${VERBS_TEST_SIW:-siw0} G=${VM_RXE_GID_INDEX:-${VERBS_TEST_GID_INDEX:-1}}
N=${SELFTEST_ITERS:-100}
FAILED=()
pass() { echo "[PASS] $*"; }
fail() { echo "[FAIL] $*"; FAILED+=("$1"); }

echo "--- ibv_devinfo"
info=$(ibv_devinfo 2>&1); rc=$?
echo "$info"
if [ $rc -ne 0 ]; then
    fail "ibv_devinfo (exit $rc)"
else
    for dev in "$RXE" "$SIW"; do
        # the block of this device: from its hca_id line to the next hca_id line
        block=$(echo "$info" | awk -v d="$dev" '/^hca_id:/ { on = ($2 == d) } on')
        if [ -z "$block" ]; then
            fail "ibv_devinfo lists $dev"
        elif ! echo "$block" | grep -qE 'state:[[:space:]]+PORT_ACTIVE \(4\)'; then
            fail "$dev port PORT_ACTIVE"
        else
            pass "ibv_devinfo lists $dev, port PORT_ACTIVE"
        fi
    done
fi

echo "--- ibv_rc_pingpong -d $RXE -g $G -n $N (server and client on this host)"
srv=$(mktemp); cli=$(mktemp)
timeout 120 ibv_rc_pingpong -d "$RXE" -g "$G" -n "$N" > "$srv" 2>&1 & sp=$!
rc_c=1
# the server needs a moment to listen; retry the client while it is not yet reachable
for _ in $(seq 20); do
    sleep 0.5
    timeout 120 ibv_rc_pingpong -d "$RXE" -g "$G" -n "$N" 127.0.0.1 > "$cli" 2>&1; rc_c=$?
    grep -q "Couldn't connect" "$cli" || break
done
for _ in $(seq 100); do kill -0 $sp 2>/dev/null || break; sleep 0.1; done
kill $sp 2>/dev/null
wait $sp; rc_s=$?
echo "client (exit $rc_c):"; sed 's/^/  /' "$cli"
echo "server (exit $rc_s):"; sed 's/^/  /' "$srv"
# success = both ends exit 0 and both report the N iterations
if [ $rc_c -eq 0 ] && [ $rc_s -eq 0 ] && grep -qE "^ *$N iters" "$cli" && grep -qE "^ *$N iters" "$srv"; then
    pass "ibv_rc_pingpong on $RXE ($N iterations)"
else
    fail "ibv_rc_pingpong on $RXE"
fi
rm -f "$srv" "$cli"

if [ ${#FAILED[@]} -eq 0 ]; then echo "selftest: PASS"; exit 0; fi
echo "selftest: FAIL (${FAILED[*]})"
exit 1
