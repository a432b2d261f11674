#!/usr/bin/env python3
"""Split a latency client's callgrind profile into waiting and the rest.

usage: cg_waits.py CALLGRIND_OUT1 ITERATIONS1 CALLGRIND_OUT2 ITERATIONS2
                   (two runs of one client: prints the split of each and the spin loops found)
       cg_waits.py --selftest

CALLGRIND_OUT comes from `valgrind --tool=callgrind --dump-instr=yes` over the client of a
latency test (perftest's `ib_<test>` or `verbs-perf <test>`) run for ITERATIONS iterations.
While it waits for the peer, a latency client spins: it polls an empty CQ, or (write_lat)
reads the last byte of its buffer, again and again until the peer's answer is there. How
many spins an iteration takes depends on how long the (emulated) kernel and the peer took,
not on the program; what one spin costs and what the rest of the iteration costs do not.

The split is taken from how often each instruction ran (callgrind's `Ir` per instruction
address is that count), in two runs of the same client (-n 100 and -n 600), the same way
for both programs and from their own profiles only. It goes by code path, not by how many
spins a wait took, so a fast emulator (a wait of one or two empty polls) and a slow one (a
hundred) are split alike:

1. an instruction is *fixed* if its count is a whole number k >= 1 of times per iteration
   (it *grows*) plus a small constant in both runs (it grows by k, within 0.01, per extra iteration; the
   constant is under half the shorter run's iterations: setup polls of the same code), or
   equal in both runs (setup, teardown); the C library's string functions (memset, memcpy:
   their `rep` instructions count once per byte, a size, not a repetition) never wait;
2. an empty poll is the poll's code path minus the part a successful poll runs. Within one
   function, an instruction of count U that is not fixed waits if
   a. another instruction of the function ran L times, L < U, and U - L grows: L is the
      path only an empty poll runs (the loop back to the poll, the "nothing there" return:
      ours, and perftest's loop around ibv_poll_cq), U is the path both run; U waits L
      times, and the L instructions wait all their count; or
   b. another instruction of the function ran L times, L < U, and L grows: L is the
      path only a successful poll runs (the provider's poll function, which has no
      instruction of its own for the empty case: librxe, libsiw); U waits U - L times
      (of several such L, the largest, the least waiting).
   The same holds for write_lat's read of the last byte (the read that finds the byte
   returns a whole number of times per iteration). L (2b) and U - L (2a) must grow with the
   iterations: a count equal in both runs is setup, and pairing with it would take the
   statistics' sort (partition_at_index, qsort: n log n) for a wait. A waiting share is taken
   only where it ran at least MIN_SPIN = 0.5 times per iteration in one of the runs (a
   smaller remainder counts as loop work for both programs alike);
3. a loop that waits for time to pass with no successful path beside it (perftest's
   CPU-frequency calibration at start, which samples gettimeofday for a fixed time): an
   instruction that is not fixed, not covered by 2, and ran at least HOT = 16 times per
   iteration in one run waits all its count (it cancels between the runs anyway).

What is waiting then: the empty polls, the reads of the last byte (write_lat) and perftest's
calibration. Biases, small and alike for both programs: in case 2b an instruction that a
successful poll runs twice (a lock and its unlock on one line) has its fixed part taken from
the largest fixed level below it, which may be smaller than its own (it then waits a little
more); a wait of fewer than MIN_SPIN empty polls per iteration in both runs counts as
loop work.
`split()` returns the totals per run; bench_report.py takes the loop per iteration as the
difference of the two runs' (total - waiting) over the difference of their counts.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cg_listing import self_costs  # noqa: E402

HOT = 16        # runs per iteration from which an unpaired loop waits for time to pass (rule 3)
MIN_SPIN = 0.5  # waiting shares below this many times per iteration stay loop work (rule 2)


def fixed(runs):
    """[(count, iterations)] of one instruction (or a difference of two): equal in every
    run, or k >= 1 times per iteration plus a small constant in every run (k whole: the
    count grows by k, within 0.01, per extra iteration; the constant, e.g. the setup's own
    polls on the same code, under half the shorter run's iterations)."""
    counts = [c for c, _ in runs]
    if len(set(counts)) == 1:
        return True
    return per_iteration(runs)


def per_iteration(runs):
    """fixed() and growing: k >= 1 times per iteration plus a small constant in every run."""
    (c0, n0), (c1, n1) = runs[0], runs[-1]
    if n1 == n0:
        return False
    step = (c1 - c0) / (n1 - n0)
    k = round(step)
    return k >= 1 and abs(step - k) <= 0.01 and all(abs(c - k * n) <= min(n0, n1) / 2 for c, n in runs)


def steady(runs):
    """fixed(), kept under its former name for callers."""
    return fixed(runs)


def waits(counts, iters):
    """{key: [waiting count per run]} of the instructions that wait (rules 2 and 3 of the
    module doc), from [{key: times run}] per run and the runs' iteration counts."""
    nr = len(counts)
    keys = set().union(*counts)
    vec = {k: tuple(c.get(k, 0) for c in counts) for k in keys}
    by_fn = {}
    for k in keys:
        if not string_op(k):
            by_fn.setdefault(k[:2], []).append(k)
    out = {}

    def enough(w):
        return any(w[i] >= MIN_SPIN * iters[i] for i in range(nr))

    def is_fixed(v):
        return fixed(list(zip(v, iters)))

    def grows(v):
        return per_iteration(list(zip(v, iters)))

    for fn_keys in by_fn.values():
        levels = sorted({vec[k] for k in fn_keys})
        fixed_lv = {v for v in levels if is_fixed(v)}
        wait_of = {}  # level -> waiting per run
        for u in levels:
            if u in fixed_lv:
                continue
            best = None
            for low in levels:
                if low == u or not all(low[i] < u[i] for i in range(nr)):
                    continue
                diff = tuple(u[i] - low[i] for i in range(nr))
                cands = []
                if low not in fixed_lv and grows(diff):
                    cands.append((low, low))  # 2a: low is the empty-only path
                if low in fixed_lv and grows(low):
                    cands.append((diff, None))  # 2b: low is the success-only path
                for w, empty_only in cands:
                    # the least waiting; on a tie the empty-only path (2a), which then waits too
                    rank = (sum(w), empty_only is None)
                    if enough(w) and (best is None or rank < best[2]):
                        best = (w, empty_only, rank)
            if best is not None:
                wait_of[u] = best[0]
                if best[1] is not None:
                    wait_of[best[1]] = best[1]
        for u in levels:
            if u not in fixed_lv and u not in wait_of and any(u[i] >= HOT * iters[i] for i in range(nr)):
                wait_of[u] = u  # 3: a loop until time passes, no successful path beside it
        for k in fn_keys:
            if vec[k] in wait_of:
                out[k] = wait_of[vec[k]]
    return out


def split_dicts(counts, iters):
    """split() of [{key: times run}] per run, with the runs' iteration counts: [(total,
    waiting, loops)] per run, loops = [(spins, instructions, keys)]: per function, the
    instructions that wait equally often, most spins first."""
    w = waits(counts, iters)
    res = []
    for i, c in enumerate(counts):
        groups = {}
        for k, v in w.items():
            if v[i] > 0:
                groups.setdefault((k[:2], v[i]), []).append(k)
        loops = sorted(((sp, len(ks), sorted(ks)) for (_, sp), ks in groups.items()),
                       key=lambda lp: (-lp[0], lp[2][0]))
        res.append((sum(c.values()), sum(v[i] for v in w.values()), loops))
    return res


def string_op(key):
    """The C library's memset/memcpy/strlen...: their `rep` instructions count once per
    element moved, so a count there is a size, not a repetition (a wait never spins there)."""
    fn = key[1].split("'")[0]
    return "libc.so" in key[0] and re.match(r"^_*(mem|str|wmem|wcs)", fn) is not None


def counts_of(path):
    costs = self_costs(path)
    return [((ob, fn, a), c) for (ob, fn), by_addr in costs.items() for a, c in by_addr.items()]


def split(runs):
    """runs: [(profile, iterations)] of one client, two or more runs. -> [(total Ir, Ir
    spent spinning, loops)] per run (see the module doc): an instruction that ran equally
    often in every run belongs to setup or teardown and is never taken for spinning."""
    return split_dicts([dict(counts_of(p)) for p, _ in runs], [n for _, n in runs])


def loop_by_function(runs, top=12):
    """[(object, function, instructions per iteration)]: where the loop work (the total less
    the waiting) of two runs [(profile, iterations)] goes, the difference of the runs over
    the difference of their counts, biggest first."""
    counts = [dict(counts_of(p)) for p, _ in runs]
    splits = split_dicts(counts, [n for _, n in runs])
    per_fn = []
    for c, (_, _, loops) in zip(counts, splits):
        f = {}
        for k, v in c.items():
            f[k[:2]] = f.get(k[:2], 0) + v
        for spins, _, keys in loops:
            for k in keys:
                f[k[:2]] -= spins
        per_fn.append(f)
    dn = runs[-1][1] - runs[0][1]
    rows = [(ob.rsplit("/", 1)[-1], fn, (per_fn[-1].get((ob, fn), 0) - per_fn[0].get((ob, fn), 0)) / dn)
            for ob, fn in set(per_fn[0]) | set(per_fn[-1])]
    return sorted((r for r in rows if abs(r[2]) >= 0.5), key=lambda r: (-round(abs(r[2]), 1), r[0], r[1]))[:top]


def selftest():
    def run(n, empty, byte, sort_extra, calib):
        c = {("p", "setup", i): 5000 for i in range(4)}           # setup: equal in both runs
        c.update({("p", "post", i): 18 * n for i in range(2)})   # a fixed loop, 18 per call
        c[("p", "post", 9)] = n
        # ours-like poll inlined in the loop: 10 shared (empty + 1 successful per iteration),
        # 4 only on an empty poll, 6 only on a successful one
        c.update({("p", "loop", i): empty + n for i in range(10)})
        c.update({("p", "loop", 100 + i): empty for i in range(4)})
        c.update({("p", "loop", 200 + i): n for i in range(6)})
        # a provider's poll (its own function): 8 on every call, 5 only on success (2 per
        # iteration plus 3 setup polls), no instruction of its own for the empty case
        c.update({("lib", "poll", i): empty + 2 * n + 3 for i in range(8)})
        c.update({("lib", "poll", 50 + i): 2 * n + 3 for i in range(5)})
        # write_lat's byte: 3 instructions per read, the exit once per iteration
        c.update({("p", "byte", i): byte + n for i in range(3)})
        c[("p", "byte", 9)] = n
        # the samples' sort: n plus an n log n remainder (no wait)
        c.update({("p", "sort", i): n + sort_extra for i in range(7)})
        c.update({("p", "sort", 20 + i): n for i in range(2)})
        c.update({("p", "calib", i): calib for i in range(3)})   # a timed loop at start
        c[("libc.so.6", "__memset_avx2_unaligned_erms", 0)] = 40 * n  # a rep stosb
        return c
    for e1, e2 in ((150, 600), (4000, 12000), (60, 1500)):  # fast and slow emulators alike
        runs = [run(100, e1, 3 * e1, 27, 56000), run(600, e2, 3 * e2, 190, 50500)]
        (t1, w1, _), (t2, w2, loops) = split_dicts(runs, [100, 600])
        for (t, w, c, e, calib) in ((t1, w1, runs[0], e1, 56000), (t2, w2, runs[1], e2, 50500)):
            expect = 14 * e + 8 * e + 3 * 3 * e + 3 * calib
            assert w == expect, (e1, e2, w, expect)
        loop = ((t2 - w2) - (t1 - w1)) / 500
        fixed_work = 2 * 18 + 1 + 10 + 6 + 8 * 2 + 5 * 2 + 3 + 1 + 9 + 40
        assert abs(loop - fixed_work - 7 * (190 - 27) / 500) < 1e-9, (loop, fixed_work)
    assert fixed([(1800 + 7, 100), (10800 + 7, 600)]), "a fixed loop of 18 and a constant"
    assert not fixed([(19550, 100), (118000, 600)]), "a wait of 195.5 and 196.7 spins"
    assert not fixed([(1270, 100), (7860, 600)]), "a sort"
    print("cg_waits selftest: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        sys.exit(0)
    if len(sys.argv) < 5 or len(sys.argv) % 2 == 0:
        sys.exit(__doc__)
    runs = [(sys.argv[i], int(sys.argv[i + 1])) for i in range(1, len(sys.argv), 2)]
    for (path, n), (total, waiting, loops) in zip(runs, split(runs)):
        print(f"{path}: total {total}  waiting {waiting}  rest {total - waiting}  (per iteration: "
              f"{total / n:.1f}, {waiting / n:.1f}, {(total - waiting) / n:.1f})")
        for spins, k, keys in loops:
            fns = sorted({f"{ob.rsplit('/', 1)[-1]}:{fn}" for ob, fn, _ in keys})
            print(f"  spin loop: {spins / n:.1f} spins per iteration x {k} instructions  in {', '.join(fns)[:160]}")
