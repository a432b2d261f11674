#!/usr/bin/env bash
# Short fuzzing run of every target in fuzz/ (cargo-fuzz, libFuzzer + ASan).
# Runs on the stable toolchain: RUSTC_BOOTSTRAP=1 lets stable rustc accept the
# -Z sanitizer flags cargo-fuzz passes (the ASan runtime ships with stable).
#   scripts/fuzz.sh [SECONDS-PER-TARGET] [TARGET...]   (default 15 s, all targets)
# Each input gets 20 s (-timeout): a hang (a poll waiting for a slot it can never get)
# counts as a crash. Installs cargo-fuzz (crates.io) if missing. Each target's log goes to
# target/fuzz-logs/<target>.log in this checkout (not /tmp: two worktrees fuzzing the same target
# would overwrite each other's log). Exit status: non-zero if any target found a crash (the
# reproducer is left in fuzz/artifacts/<target>/).
set -uo pipefail
case "${1:-}" in
    -h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${1:-${FUZZ_SECONDS:-15}}; shift || true
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz"
    cargo install --locked cargo-fuzz >/dev/null 2>&1 || { echo "fuzz.sh: cargo install cargo-fuzz failed" >&2; exit 1; }
fi
LOGS="$ROOT/target/fuzz-logs"
mkdir -p "$LOGS" || exit 1
echo "fuzz: logs in $LOGS/"
cd "$ROOT/fuzz" || exit 1
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
pass=0 fail=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    [ -d "seeds/$t" ] && cp -n "seeds/$t"/* "corpus/$t/" 2>/dev/null
    start=$(date +%s)
    if cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$SECS" -timeout=20 -print_final_stats=1 > "$LOGS/$t.log" 2>&1; then
        runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$t.log" | grep -o '[0-9]*$')
        echo "fuzz: $t ok (${runs:-?} runs in $(( $(date +%s) - start ))s)"
        pass=$((pass + 1))
    else
        echo "fuzz: $t FAILED (see $LOGS/$t.log and fuzz/artifacts/$t/)"
        tail -n 30 "$LOGS/$t.log"
        fail=$((fail + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" = 0 ]
