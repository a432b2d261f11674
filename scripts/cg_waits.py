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
for both programs and from their own profiles only:

1. an instruction *spins* if it ran at least HOT = 16 times per iteration in one of the
   runs: the iteration proper runs an instruction a few times (a post, a successful poll
   per completion, a timestamp; the samples' sort up to ~13 times at 600 iterations), a
   spin loop once per spin. Never spinning: an instruction that ran equally often in both
   runs (setup, teardown), or equally often per iteration (within 1 %) and a whole number
   of times more per extra iteration (within 0.01: a loop of fixed length in the iteration
   proper, e.g. one of librxe's post_send runs 18 times per call; a wait's spins per
   iteration differ from run to run, and where two waits happen to average within 1 % of
   each other, as perftest's rxe send_lat once did at 195.5 and 196.7 spins, their
   difference over the extra iterations is no whole number), and the C library's string
   functions (memset, memcpy: their `rep` instructions count once per byte, a size, not a
   repetition);
2. in each run and function, spinning instructions whose counts lie within TOL = 2.5 per
   iteration of each other form one loop (TOL: the few times per iteration an instruction
   of a spin also runs outside of it, on the shared path of the successful polls); the
   smallest count of a loop is its number of spins (the instructions only an empty poll
   runs, run exactly once per empty poll);
3. waiting = for each spinning instruction, the spins of its loop; what remains of its
   count (the successful polls' share of the shared path) stays loop work.

What is waiting then: the empty polls, the reads of the last byte (write_lat) and any other
loop that runs until time passes (perftest's CPU-frequency calibration at start, which
samples gettimeofday for a fixed time: it does not cancel between the two runs either).
Biases, both small and alike for both programs: the shared path of a successful poll that
lies in a function of its own (pthread_spin_lock in librxe's poll) counts as waiting; a
wait of fewer than HOT spins per iteration in both runs counts as loop work.
`split()` returns the totals per run; bench_report.py takes the loop per iteration as the
difference of the two runs' (total - waiting) over the difference of their counts.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cg_listing import self_costs  # noqa: E402

HOT = 16   # runs per iteration from which an instruction belongs to a spin loop
TOL = 2.5  # runs per iteration by which counts of one spin loop may differ


def split_counts(counts, iters, spinning=None):
    """counts: [(key, times run)] of every instruction of one run; `spinning`: the keys of
    the instructions that spin (default: those this run ran HOT times per iteration). ->
    (total, waiting, loops) where loops = [(spins, instructions per spin, keys)] of the spin
    loops found, most spins first."""
    total = sum(c for _, c in counts)
    if spinning is None:
        spinning = {k for k, c in counts if c >= HOT * iters and not string_op(k)}
    hot = sorted(((c, k) for k, c in counts if k in spinning and c > 0), reverse=True)
    by_fn = {}
    for c, k in hot:
        by_fn.setdefault(k[:2], []).append((c, k))
    loops, waiting = [], 0
    for fn_hot in by_fn.values():
        group = []
        for c, k in fn_hot + [(None, None)]:
            if group and (c is None or group[-1][0] - c > TOL * iters):
                spins = group[-1][0]  # the smallest count of the loop
                waiting += spins * len(group)
                loops.append((spins, len(group), [key for _, key in group]))
                group = []
            if c is not None:
                group.append((c, k))
    loops.sort(key=lambda lp: (-lp[0], lp[2][0]))
    return total, waiting, loops


def steady(runs):
    """[(count, iterations)] of one instruction: equal in every run (setup, teardown) or the
    same number of times per iteration in every run (within 1 %: a loop of fixed length in
    the iteration proper, e.g. over a work request's fields). A wait's spins per iteration
    differ from run to run; two waits that happen to average within 1 % of each other still
    differ by no whole number of spins per extra iteration: a fixed loop's count grows by
    exactly its length with each iteration, checked to 0.01."""
    counts = [c for c, _ in runs]
    if len(set(counts)) == 1:
        return True
    rates = [c / n for c, n in runs]
    (c0, n0), (c1, n1) = runs[0], runs[-1]
    step = (c1 - c0) / (n1 - n0) if n1 != n0 else 0.0
    return max(rates) <= 1.01 * min(rates) and abs(step - round(step)) <= 0.01


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


def split_dicts(counts, iters):
    """split() of [{key: times run}] per run, with the runs' iteration counts."""
    runs = [(None, n) for n in iters]
    keys = set().union(*counts)
    spinning = {k for k in keys
                if any(c.get(k, 0) >= HOT * n for c, (_, n) in zip(counts, runs)) and not string_op(k)
                and not steady([(c.get(k, 0), n) for c, (_, n) in zip(counts, runs)])}
    return [split_counts(list(c.items()), n, spinning) for c, (_, n) in zip(counts, runs)]


def selftest():
    n = 100
    # a post (20 instructions once), a successful poll sharing 10 instructions with the
    # empty poll (which has 4 of its own) run 2x per iteration, 5000 empty polls, a byte
    # spin of 3 instructions with 900 spins; a sort touching 8 instructions 13x per iteration
    counts = [(("prog", "post", i), n) for i in range(20)]
    counts += [(("prog", "poll", i), 5000 + 2 * n) for i in range(10)]
    counts += [(("prog", "poll", 100 + i), 5000) for i in range(4)]
    counts += [(("prog", "ok", i), 2 * n) for i in range(30)]
    counts += [(("prog", "byte", i), 900 * n + n) for i in range(3)]
    counts += [(("prog", "sort", i), 13 * n) for i in range(8)]
    total, waiting, loops = split_counts(counts, n)
    loops = [(sp, k) for sp, k, _ in loops]
    loop_work = 20 * n + 10 * 2 * n + 30 * 2 * n + 8 * 13 * n  # the byte's last read: waiting
    assert total - waiting == loop_work, (total - waiting, loop_work)
    assert loops == [(900 * n + n, 3), (5000, 14)], loops
    # two runs: setup (same count), a fixed 18-times loop per iteration (same rate), a sort
    # at 13 and 15 per iteration, a wait of 40 and 20 spins per iteration (5 instructions)
    def run(n, spins, sort):
        c = {("p", "setup", i): 5000 for i in range(4)}
        c.update({("p", "post", i): 18 * n for i in range(2)})
        c.update({("p", "sort", i): sort * n for i in range(3)})
        c.update({("p", "wait", i): spins * n for i in range(5)})
        c[("libc.so.6", "__memset_avx2_unaligned_erms", 0)] = 40 * n  # a rep stosb
        return c
    (t1, w1, _), (t2, w2, _) = split_dicts([run(100, 40, 13), run(600, 20, 15)], [100, 600])
    assert (w1, w2) == (5 * 40 * 100, 5 * 20 * 600), (w1, w2)
    assert t1 - w1 == 4 * 5000 + 2 * 18 * 100 + 3 * 13 * 100 + 40 * 100
    # a wait of 195.5 and 196.7 spins per iteration (within 1 %, as perftest's once): its
    # count grows by 196.9 per extra iteration, no whole number: still waiting
    def run2(n, spins_total):
        c = run(n, 0, 13)
        c.update({("p", "wait", i): spins_total for i in range(5)})
        return c
    (_, w1, _), (_, w2, _) = split_dicts([run2(100, 19550), run2(600, 118000)], [100, 600])
    assert (w1, w2) == (5 * 19550, 5 * 118000), (w1, w2)
    assert steady([(1800 + 7, 100), (10800 + 7, 600)]), "a fixed loop of 18 and a constant"
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
