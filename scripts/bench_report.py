#!/usr/bin/env python3
"""Render the raw results of scripts/bench.sh (target/bench/raw/) into BENCHMARKS.md.

usage: bench_report.py RAW_DIR OUT_FILE
       bench_report.py --loop RAW_DIR OUT_FILE   (only the per-iteration rows of the latency
                                                  loops, rxe0 and siw0, spliced into OUT_FILE)
       bench_report.py --mlx5 RAW_DIR OUT_FILE   (scripts/sim-bench.sh: the mlx5 section and
                                                   its Targets rows only)
       bench_report.py --mlx5-rows RAW_DIR       (print them)
       bench_report.py --selftest

Reads: host-info.txt, guest-info.txt (key=value lines); lat/<test>.s<size>.<side>.<rep>.txt
and bw/<test>.q<q>.l<l>.<side>.<rep>.txt (perftest's text output, which verbs-perf prints
in the same format); ops/wall.<side>.<rep>.txt and cg/<fn>.<side>.txt (ops_bench lines,
callgrind's "Collected :" total); siw/lat, siw/bw, siw/cg the same for siw0 (rdma_cm mode).
A run that failed or printed no result counts as missing;
missing numbers show as "n/a" and their target as "not measured", never as a pass.
"""
import os
import re
import statistics
import sys

SIDES = ("c", "ours", "capi")
CAPI_INS_TARGET = 0.75  # instructions through our libibverbs.so.1 / rdma-core's <= 0.75
LAT_TARGET = 1.0   # ours/perftest median latency <= 1.0
BW_TARGET = 1.0    # ours/perftest message rate >= 1.0
INS_TARGET = 0.5   # ours/rdma-core instructions per call <= 0.5
# the instruction rows of the ops benches: (op, label, per_call | per_item); the rxe table shows them
# all, siw's and mlx5's derive theirs from it
OPS_ROWS = (("post_send", "post_send (8 B RDMA WRITE, list of 1)", "per_call"),
            ("post_recv", "post_recv (1 WR, 1 SGE)", "per_call"),
            ("poll_cq", "poll_cq, batch of N completions (per call)", "per_call"),
            ("poll_cq", "poll_cq, batch of N completions (per completion)", "per_item"),
            ("poll_with", "poll_with (in place) vs ibv_poll_cq, batch of N (per call)", "per_call"),
            ("poll_with", "poll_with (in place) vs ibv_poll_cq, batch of N (per completion)", "per_item"),
            ("poll_cq_empty", "poll_cq on an empty CQ", "per_call"))


def read_kv(path):
    kv = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8", errors="replace"):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                kv[k.strip()] = v.strip()
    return kv


def run_ok(text):
    m = re.search(r"^exit=(\d+)\s*$", text, re.M)
    return m is None or m.group(1) == "0"


def parse_perftest(text, column):
    """The row under perftest's result header; column 'lat' -> (t_typical, t_avg) in us,
    'bw' -> msg rate in Mpps. None if absent or the run failed."""
    if not run_ok(text):
        return None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if ("t_typical" in line and column == "lat") or ("MsgRate" in line and column == "bw"):
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) >= 5 and f[0].isdigit():
                    try:
                        if column == "lat":
                            return (float(f[4]), float(f[5]))
                        return float(f[4])
                    except ValueError:
                        return None
            return None
    return None


def parse_ops(text):
    """ops_bench lines -> {op: {calls, items, ns_per_call}}."""
    ops = {}
    for m in re.finditer(r"^ops_bench impl=\S+ op=(\S+) (.*)$", text, re.M):
        fields = dict(kv.split("=", 1) for kv in m.group(2).split() if "=" in kv)
        ops[m.group(1)] = {k: float(v) for k, v in fields.items()}
    return ops


def parse_collected(text):
    m = re.search(r"Collected\s*:\s*([\d,]+)", text)
    return int(m.group(1).replace(",", "")) if m else None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs, digits=2):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    return f"{min(xs):.{digits}f}-{max(xs):.{digits}f}"


def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, int) or digits == 0:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


NOISY = 1.5  # a side whose slowest run is this much slower than its fastest


def noisy(*runs):
    """' (noisy)' if any side's runs spread by more than NOISY (max/min)."""
    for xs in runs:
        xs = [x for x in xs if x]
        if xs and max(xs) / min(xs) > NOISY:
            return " (noisy)"
    return ""


def mark(ratio, target, higher_is_better):
    if ratio is None:
        return "not measured"
    ok = ratio >= target if higher_is_better else ratio <= target
    return "PASS" if ok else "**MISS**"


def ratio(ours, c):
    return ours / c if ours is not None and c else None


def collect(raw):
    """Everything the report needs, as plain dicts."""
    res = {"lat": {}, "bw": {}, "wall": {}, "cg": {}, "loop": {}, "loop_split": {}}
    pat = re.compile(r"^(\w+)\.(s\d+|q\d+\.l\d+)\.(c|ours|capi)\.(\d+)\.txt$")
    for kind in ("lat", "bw"):
        d = os.path.join(raw, kind)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            m = pat.match(name)
            if not m:
                continue
            test, cfg, side, _ = m.groups()
            val = parse_perftest(open(os.path.join(d, name), errors="replace").read(), kind)
            res[kind].setdefault((test, cfg), {}).setdefault(side, []).append(val)
    d = os.path.join(raw, "ops")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.match(r"^wall\.(c|ours|capi)\.\d+\.txt$", name)
        if m:
            text = open(os.path.join(d, name), errors="replace").read()
            if run_ok(text):
                for op, f in parse_ops(text).items():
                    if "ns_per_call" in f:
                        res["wall"].setdefault(op, {}).setdefault(m.group(1), []).append(f["ns_per_call"])
    d = os.path.join(raw, "cg")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.match(r"^bench_(\w+)\.(c|ours|capi)\.txt$", name)
        if not m:
            continue
        op, side = m.groups()
        text = open(os.path.join(d, name), errors="replace").read()
        ops = parse_ops(text)
        total = parse_collected(text)
        if not run_ok(text) or total is None or op not in ops or not ops[op].get("calls"):
            res["cg"].setdefault(op, {})[side] = None
            continue
        per_call = total / ops[op]["calls"]
        per_item = total / ops[op]["items"] if ops[op].get("items") else None
        res["cg"].setdefault(op, {})[side] = {"total": total, "calls": ops[op]["calls"],
                                              "per_call": per_call, "per_item": per_item}
    d = os.path.join(raw, "loop")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.match(r"^(\w+)\.n(\d+)\.(c|ours|capi)\.txt$", name)
        if not m:
            continue
        text = open(os.path.join(d, name), errors="replace").read()
        total = parse_collected(text) if run_ok(text) else None
        res["loop"].setdefault(m.group(1), {}).setdefault(m.group(3), {})[int(m.group(2))] = total
        cg = os.path.join(d, name[:-len(".txt")] + ".callgrind")
        if total is not None and os.path.exists(cg):
            res["loop_split"].setdefault(m.group(1), {}).setdefault(m.group(3), {})[int(m.group(2))] = cg
    # the spinning, split off each client's runs together (cg_waits.py)
    res["loop_paths"] = {t: {side: dict(runs) for side, runs in sides.items()} for t, sides in res["loop_split"].items()}
    for sides in res["loop_split"].values():
        for side, runs in sides.items():
            ns = sorted(runs)
            try:
                splits = cg_waits_mod().split([(runs[n], n) for n in ns]) if len(ns) >= 2 else []
            except (OSError, ValueError) as e:
                print(f"bench_report: cannot split {runs}: {e}", file=sys.stderr)
                splits = []
            sides[side] = dict(zip(ns, splits))
    return res


def cg_waits_mod():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "cg_waits", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cg_waits.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def per_iteration(res):
    """[(test, c, ours, iters)]: instructions per iteration of each side's client loop, the
    difference of the two runs (-n N1, -n N2) over N2 - N1."""
    rows = []
    for test in sorted(res["loop"]):
        vals = {}
        for side, runs in res["loop"][test].items():
            ns = sorted(n for n, t in runs.items() if t is not None)
            vals[side] = (runs[ns[-1]] - runs[ns[0]]) / (ns[-1] - ns[0]) if len(ns) >= 2 else None
            vals.setdefault("iters", f"{ns[0]} and {ns[-1]}" if len(ns) >= 2 else "?")
        rows.append((test, vals.get("c"), vals.get("ours"), vals.get("iters", "?")))
    return rows


def loop_where(keys):
    """Where a spin loop runs: its function (the object's name where it has no symbols)."""
    ob, fn = keys[0][0].rsplit("/", 1)[-1], keys[0][1]
    if fn.startswith("0x"):
        return f"{ob} {fn.lstrip('0x').lstrip('0') and '0x' + fn[2:].lstrip('0')}"
    return fn.split("@")[0].split("'")[0].rsplit("::", 1)[-1] if "::" in fn else fn.split("@")[0]


# verbs-perf's statistics after a latency loop, as short_fn names them (the library's calls are
# inlined into the loop: `lat::send_lat`, `lat::write_lat`)
STATS_FNS = ("select::partition_at_index", "report::lat_stats", "from_iter", "pivot::median3_rec")


def short_fn(ob, fn):
    """A function's name for the report: the last path segment (the object and address
    where there are no symbols)."""
    if fn.startswith("0x"):
        return f"{ob} 0x{fn[2:].lstrip('0')}"
    fn = fn.split("'")[0].split("@")[0]
    if fn.startswith("<") and ">::" in fn:
        return fn.rsplit(">::", 1)[-1]
    if "::" in fn and not fn.startswith("<"):
        return "::".join(fn.split("::")[-2:])
    return fn


def loop_where_by_function(res):
    """{(test, side): cg_waits.loop_by_function rows} for the runs of `res` (top 10)."""
    out = {}
    for test, sides in res.get("loop_paths", {}).items():
        for side, runs in sides.items():
            ns = sorted(runs)
            if len(ns) >= 2:
                try:
                    out[(test, side)] = cg_waits_mod().loop_by_function([(runs[n], n) for n in ns], 10)
                except (OSError, ValueError):
                    pass
    return out


def main_loops(spins, share=0.05):
    """The spin loops that hold at least `share` of the waiting, most first, as text."""
    total = sum(n * k for n, k, _ in spins) or 1
    big = sorted((lp for lp in spins if lp[0] * lp[1] >= share * total), key=lambda lp: -lp[0] * lp[1])
    return ", ".join(f"{n:.0f} x {k} ({where})" for n, k, where in big) or "none"


def per_iteration_split(res):
    """{(test, side): {"loop": .., "waiting": .., "spins": [(spins, instructions)]}} per
    iteration: the loop's instructions without the spinning and the spinning (cg_waits.py),
    each the difference of the two runs over N2 - N1; spins: the spin loops of the longer run."""
    out = {}
    for test, sides in res["loop_split"].items():
        for side, runs in sides.items():
            ns = sorted(runs)
            if len(ns) < 2:
                continue
            (t1, w1, _), (t2, w2, loops) = runs[ns[0]], runs[ns[-1]]
            dn = ns[-1] - ns[0]
            out[(test, side)] = {"loop": ((t2 - w2) - (t1 - w1)) / dn, "waiting": (w2 - w1) / dn,
                                 "spins": [(sp / ns[-1], k, loop_where(keys)) for sp, k, keys in loops]}
    return out


def render_loop(res, w, summary, label):
    """The per-iteration instruction rows of the latency loops (`--loop` / a full run): the
    loop without its spinning (the target row) and the loop as it ran (informative)."""
    rows = per_iteration(res)
    split = per_iteration_split(res)
    name = f"{label}instructions per latency-loop iteration, without the waiting"
    w("### Userspace instructions per iteration of the latency loop (callgrind)\n")
    if not rows:
        w("Not measured.\n")
        summary.append((name, "", [None], False, INS_TARGET))
        return
    w("The client of each latency test (perftest's `ib_<test>` and `verbs-perf <test>`, 2-byte messages) under "
      "`valgrind --tool=callgrind --dump-instr=yes`, its server native, run twice in the same boot with "
      "different iteration counts; the difference of the two totals over the difference of the counts is what "
      "one iteration of the whole client loop costs in userspace (posting, polling, the timestamps, the "
      "program's own steps; setup and teardown cancel out).\n")
    w("While it waits for the peer, each client spins: it polls an empty CQ, and in write_lat also reads the "
      "last byte of its buffer, until the answer is there. How many spins a wait takes is how long the "
      "emulated kernel and the peer took, counted in the client's own spins: a cheaper empty poll makes more "
      "spins in the same wait, so the loop as it ran (the second table) says more about the emulator than "
      "about the loop. The first table leaves the spinning out, the same way for both programs and from "
      "their own profiles only (`scripts/cg_waits.py`, which documents the rule): callgrind counts how often "
      "each instruction ran, and the rule goes by code path, not by how many spins a wait took, so a fast "
      "emulator (one or two empty polls per wait) and a slow one (a hundred) are split alike. An empty poll is "
      "the poll's code minus what a successful poll runs. An instruction is fixed if it ran equally often in "
      "both runs (setup) or a whole number k >= 1 of times per iteration plus a small constant (it grows by k, "
      "within 0.01, per extra iteration); the C library's memset/memcpy never wait (their `rep` instructions "
      "count bytes). Within one function, an instruction of count U that is not fixed waits (a) L times if "
      "another instruction ran L < U times and U - L grows by a whole number per iteration: L is the path only "
      "an empty poll runs (the loop back, the \"nothing there\" return: ours, perftest's loop around "
      "`ibv_poll_cq`, the re-read of write_lat's last byte), and those L instructions wait all their count; or "
      "(b) U - L times if L grows by a whole number per iteration: L is the path only a successful poll runs "
      "(the provider's poll function, librxe's and libsiw's, which has no instruction of its own for the empty "
      "case); of several pairings, the least waiting, and a waiting share only where it ran at least 0.5 "
      "times per iteration in one run. A count that is equal in both runs never pairs (so the samples' sort, "
      "n log n, stays loop work). A loop with no such pair that ran 16 or more times per iteration in one run "
      "(perftest's CPU-frequency calibration at start, which samples gettimeofday for a fixed time) waits all "
      "its count. So the posts, the successful polls, the timestamps and the program's own steps (the "
      "samples' statistics included) are counted, the empty polls, the byte re-reads and the calibration are "
      "not, by one rule for both programs. "
      f"Target: ours <= {INS_TARGET}x perftest, on the loop without the waiting.\n")
    w("| test | runs (-n) | perftest | ours | ours / perftest | target | |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | --- |")
    ratios = []
    for test, _, _, iters in rows:
        c, o = (split.get((test, side), {}).get("loop") for side in ("c", "ours"))
        r = ratio(o, c)
        ratios.append(r)
        w(f"| {test} | {iters} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {INS_TARGET} | "
          f"{mark(r, INS_TARGET, False)} |")
    summary.append((name, f"<= {INS_TARGET}x", ratios, False, INS_TARGET))
    w("")
    w("The loop as it ran, waiting included (informative: the spins depend on the emulator's speed), and the "
      "main spin loops found (spins per iteration x instructions per spin, where; in the run of the larger count; "
      "one loop that calls into another function shows as one entry per function):\n")
    w("| test | side | loop + waiting | waiting | spin loops | ours / perftest (loop + waiting) |\n"
      "| --- | --- | ---: | ---: | --- | ---: |")
    for test, c, o, _ in rows:
        for side, raw in (("perftest", c), ("ours", o)):
            sp = split.get((test, "c" if side == "perftest" else "ours"), {})
            loops = main_loops(sp.get("spins", []))
            w(f"| {test} | {side} | {fmt(raw, 1)} | {fmt(sp.get('waiting'), 1)} | {loops} | "
              f"{fmt(ratio(o, c)) if side == 'ours' else ''} |")
    w("")
    where = loop_where_by_function(res)
    if where:
        w("Where the loop without the waiting goes, per iteration, by function (the same difference of the two "
          "runs; perftest's binaries and providers have no symbols, so its functions show as addresses; a "
          "negative entry is a count that fell between the runs: a wait of the setup or teardown that the rule "
          "does not see, see below):\n")
        w("| test | side | functions (instructions per iteration) |\n| --- | --- | --- |")
        for (test, side), rows in sorted(where.items()):
            txt = "; ".join(f"`{short_fn(ob, fn)}` {v:.0f}" for ob, fn, v in rows)
            w(f"| {test} | {'perftest' if side == 'c' else 'ours'} | {txt} |")
        w("")
    ours_stats = {t: sum(v for ob, fn, v in rows if short_fn(ob, fn) in STATS_FNS)
                  for (t, side), rows in where.items() if side == "ours"}
    if ours_stats:
        w("What the loop without the waiting holds, for ours: the statistics after the loop (`select`, "
          "`lat_stats`, `from_iter`: a selection of the median and percentiles and one pass for min, max, mean "
          "and deviation, where perftest sorts the samples: its `msort`, ~180) are " +
          ", ".join(f"{fmt(v, 0)} ({t})" for t, v in sorted(ours_stats.items())) +
          "; the rest is the iteration itself: post the message (the library's post_send with the doorbell "
          "`write()`: inlined into `lat::<test>` on rxe, `SiwQp::post_send` on siw), poll its completion and, in "
          "send_lat, the peer's message (`Cq::poll_with` of one completion, inlined into the loop: its claim, "
          "one slot read, the consumer index and the claim released), post a receive back (`run::{{closure}}`: "
          "the receives posted for the first iterations, then one per iteration), the cycle-counter timestamp "
          "(`rdtsc`, as perftest's `get_cycles`) and the loop's steps: " +
          ", ".join(f"{fmt(split[(t, 'ours')]['loop'] - v, 0)} ({t})" for t, v in sorted(ours_stats.items())
                    if (t, "ours") in split) +
          f". The per-call rows above bound the library's part (their floors); at {INS_TARGET}x perftest the "
          "whole loop may be " +
          ", ".join(f"{fmt(INS_TARGET * split[(t, 'c')]['loop'], 0)} ({t})" for t in sorted(ours_stats)
                    if (t, "c") in split) + ".\n")
    w("Both clients also wait for the completion of their own message after posting it. Where that completion "
      "is usually there at the first poll (siw; rxe's write_lat), the few polls that find it not there yet are "
      "still empty polls by the rule above (paired with the successful path in the same function), so they "
      "wait however few they are; only a remainder under 0.5 per iteration in both runs stays loop work, on "
      "either side. (The former rule, 16 spins per iteration, counted such short waits as loop work, and the "
      "rows moved with the emulator's speed: ours on siw send_lat 0.43x in one boot, 0.63x in the next.)\n")
    if label.startswith("siw"):
        w("On siw0 (-R) both programs also wait on their rdma_cm exchange at start and end. perftest polls the "
          "exchange QP's CQ for as long as the peer takes: those few hundred spins happen in setup, not per "
          "iteration; where the rule pairs them with the exchange's successful polls they wait, else they stay "
          "in the loop work of whichever of its runs had them (negative entries above). verbs-perf's `CmLink::one` sleeps on a completion channel instead (`Cq::wait_spin` without "
          "a spin), the same few instructions in every run. The rxe rows use the TCP exchange, which blocks.\n")


def cg_listing_mod():
    import importlib.util
    spec = importlib.util.spec_from_file_location("cg_listing", os.path.join(os.path.dirname(__file__), "cg_listing.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def op_listing(raw, res, op, binary):
    """(listing text, {source file: instructions per call}) of our wrapper bench_<op>, from the
    one callgrind run of the side (per instruction, per caller chain); None if absent."""
    d = res["cg"].get(op, {}).get("ours")
    path = os.path.join(raw, "cg", "all.ours.callgrind")
    if not d or not binary or not os.path.exists(path) or not os.path.exists(binary):
        return None
    try:
        text = cg_listing_mod().listing(path, binary, d["calls"], 400, f"bench_{op}")
    except (OSError, ValueError, KeyError):
        return None
    by_file = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([\d.]+)\s+[0-9a-f]+\s+.*\s(\S+):\d+$", line)
        if m:
            by_file[m.group(2)] = by_file.get(m.group(2), 0) + float(m.group(1))
    m = re.search(r"outside the binary[^:]*: ([\d.]+)", text)
    if m:
        by_file["libc / kernel entry"] = float(m.group(1))
    return text, by_file


def breakdown(raw, res, binary):
    """Per op: (op, instructions per call, where: the source files the executed
    instructions were compiled from, biggest first)."""
    rows = []
    for op in ("post_send", "post_recv", "poll_cq", "poll_with", "poll_cq_empty"):
        got = op_listing(raw, res, op, binary)
        if got is None:
            continue
        _, by_file = got
        top = sorted(by_file.items(), key=lambda kv: -kv[1])
        where = "; ".join(f"`{f}` {n:.0f}" for f, n in top if n >= 1)
        rows.append((op, res["cg"][op]["ours"]["per_call"], where or "n/a"))
    return rows


# Floors (issue 28 item 3): for a row above the 0.5x target, what the call must execute by
# its contract, in instructions per call on x86-64 as a compiler can emit it, item by item
# (the floor is their sum, so every instruction of it is accounted for). A row within
# FLOOR_SLACK of its floor counts as met. Counted against the listings of the raw profiles
# (scripts/cg_listing.py); the listing printed with each row is this run's.
FLOOR_SLACK = 1.10
_RET = (3, "return: the `Result` (its tag and the value, two stores) and `ret`")
# The mlx5 floors' wording of the return.
_RET_TEXT = "returning the result (a store of the `Result` tag, `ret`)"
_GUARD = (3, "the CQ's resize guard: enter (a locked add), its test, leave (a locked subtract)")
_GUARD_WHY = (
    " The resize guard is part of the floor on rxe: `ibv_resize_cq` on another thread replaces the mapped "
    "ring and unmaps the old one, so a poll must be visible to the resizer before it reads the ring (a store "
    "the resizer sees before it unmaps: on x86-64 a locked instruction, the only StoreLoad fence) and must say "
    "when it leaves; pollers on several threads share the count, so leaving is a read-modify-write too "
    "(rdma-core's librxe takes the CQ's spinlock, which also serialises the pollers). Keeping every replaced "
    "ring mapped until the CQ is destroyed would let a poll go without it, at the cost of memory that grows "
    "with every resize.")
_GUARD_SIW = (
    " siw cannot resize a CQ (libsiw has no resize; ours refuses it before the ring is touched), so on siw the "
    "guard is not required: it is not in the floor (the CQ type is shared with rxe, which needs it: 3 "
    "instructions this library spends above the floor).")
def _each(per, text):
    """A floor item done once per completion of the bench's batches of 16."""
    return (16 * per, f"{text} ({per} x 16 =")


_CLAIM = (5, "the claim against other pollers (the C contract lets several threads poll one CQ): the "
             "compare-exchange with its two operands, its test, the release store")
FLOORS = {
    ("rxe", "post_send"): ("`ibv_post_send` of one signaled 8-byte RDMA WRITE with one SGE on rxe", [
        (8, "judge it: the opcode allowed on an RC QP, the flag bits, the SGE count against `max_send_sge`, the "
            "message size"),
        (5, "find room: load the producer and the kernel's consumer index, compare under the mask"),
        (3, "address the slot"),
        (20, "load the request's fields and store the WQE fields the kernel reads (`wr_id`, opcode, flags, "
             "remote address, rkey, `iova`, status/state, `has_rd_atomic`, the DMA length/resid/SGE count/offset, "
             "the SGE)"),
        (3, "publish the producer index"),
        (7, "ring the doorbell, a 32-byte `write()` of a zero-WR POST_SEND command as one inline system call: "
            "the number and the three arguments (4), `syscall` (1), the result checked against 32 (2)"),
        (4, "return the `Result` and `ret`")], ""),
    ("rxe", "post_recv"): ("`ibv_post_recv` of one WR with one SGE on rxe", [
        (6, "find room: two index loads, the masked difference, a branch"),
        (3, "check the SGE count against `max_recv_sge`"),
        (3, "address the slot"),
        (6, "store `wr_id`, the SGE (one 16-byte load and store) and the DMA header, with their loads"),
        (3, "publish the producer index"),
        (2, "return `Ok` and `ret`")], ""),
    ("rxe", "poll_cq"): ("`ibv_poll_cq` of a batch of 16 on rxe", [
        _each(6, "per completion: copy the 48-byte `ib_uverbs_wc` the kernel wrote into the caller's "
                 "`ibv_wc`, three 16-byte loads and three stores"),
        _each(1, "per completion: test the flag word rxe reports two bits of swapped (one `or` into an "
                 "accumulator)"),
        (8, "per round of eight completions: step the source, the destination and the count, and branch "
            "(the loop unrolled eight records a round, 4 x 2 rounds ="),
        (1, "the call's `ret`"),
        _GUARD,
        (2, "the provider: compare the CQ's driver tag, branch"),
        _CLAIM,
        (3, "load the ring and both indices"),
        (3, "address the first record: the consumer index masked, scaled by the element size, added to the "
            "ring's base"),
        (4, "the batch: the masked difference of the indices, bounded by the array"),
        (3, "the wrap: the records up to the ring's end, then from its start"),
        (2, "the fix-up test of the accumulated flag words"),
        (3, "publish the consumer index (add, mask, store)"),
        (2, "return the count in the `Result` (two stores)")], _GUARD_WHY),
    ("rxe", "poll_cq_empty"): ("`ibv_poll_cq` on an empty rxe CQ", [
        _GUARD,
        (2, "the provider: compare the CQ's driver tag, branch"),
        (3, "load the ring, the producer and the consumer index"),
        (2, "compare them, branch"),
        _RET], _GUARD_WHY),
    ("siw", "post_send"): ("`ibv_post_send` of one signaled 8-byte RDMA WRITE with one SGE on siw", [
        (9, "judge it: the opcode against siw's four (a bit test), the flag bits, the SGE count against "
            "`max_send_sge`, the message size"),
        (6, "find the element: load the position, address the element (base and multiply), load its flags, "
            "test, branch"),
        (12, "store `id`, the SGE count with the opcode (translated: a shift of a table word), rkey, remote "
             "address and the 16-byte SGE, with their loads"),
        (5, "its flags: `IBV_SEND_*` translated (a shift of a table word), `sq_sig_all`, `VALID`, the release "
            "store"),
        (7, "the doorbell decision siw's protocol needs: a full fence (the kernel's `smp_store_mb` on the other "
            "side), the previous element's address, its flags loaded and tested"),
        (4, "move the position (increment, wrap, store)"),
        (7, "ring the doorbell, a zero-WR POST_SEND `write()` as one inline system call: the number and the "
            "three arguments (4), `syscall` (1), the result checked against 32 (a failure and a short write both "
            "differ) (2)"),
        (1, "after a doorbell that went through, clear the flag a failed one sets (elements the kernel was not "
            "told of stay valid, so the previous-element test would never ring again and the queue would stall: "
            "the next post rings whatever it finds)"),
        (2, "the provider: compare the QP's driver tag, branch (a library of several providers; rdma-core's "
            "`ibv_post_send` is an indirect call through the context's ops)"),
        _RET], ""),
    ("siw", "post_recv"): ("`ibv_post_recv` of one WR with one SGE on siw", [
        (6, "find the element: load the position, address the element (base and multiply), load its flags, "
            "test, branch"),
        (3, "check the SGE count against `max_recv_sge`"),
        (6, "store `id`, the SGE count and the 16-byte SGE, with their loads"),
        (1, "hand it over: the release store of its flags"),
        (4, "move the position (increment, wrap, store)"),
        _RET], ""),
    ("siw", "poll_cq"): ("`ibv_poll_cq` of a batch of 16 on siw", [
        _each(3, "per completion: load the CQE's flags, test `VALID`, branch"),
        _each(2, "per completion: `wr_id`, loaded and stored"),
        _each(7, "per completion: siw's status and opcode translated into `ibv_wc`'s: the two fields extracted "
                 "from the CQE's word, two table loads, combined, stored"),
        _each(6, "per completion: the byte count and the QP number, each loaded, shifted into its `ibv_wc` "
                 "word (vendor_err and imm_data are 0) and stored"),
        _each(1, "per completion: the rest of the 48-byte `ibv_wc`, 16 zero bytes (one store)"),
        _each(1, "per completion: the rare-case test (an invalidated rkey, a status siw does not define: one "
                 "`or` of the CQE's word into an accumulator)"),
        _each(1, "per completion: hand the element back to the kernel (a release store of its flags)"),
        (8, "per round of eight completions: step the source and the destination, the count, and branch "
            "(the loop unrolled eight elements a round, 4 x 2 rounds ="),
        (1, "the call's `ret`"),
        (2, "the provider: compare the CQ's driver tag, branch"),
        _CLAIM,
        (3, "load the array, its length and the position"),
        (4, "the batch: bounded by the array and by the array's end (the wrap)"),
        (2, "the rare-case test of the accumulator"),
        (2, "move the position (wrap, store)"),
        (2, "return the count in the `Result` (two stores)")], _GUARD_SIW),
    ("siw", "poll_with"): ("`Cq::poll_with` of 16 completions on siw, the closure summing `wr_id` and counting "
                           "failures", [
        _each(3, "per completion: load the CQE's flags, test `VALID`, branch"),
        _each(4, "per completion: load `wr_id` and the status, translate the status (a table load) and test "
                 "it"),
        _each(2, "per completion: the closure's sum and count"),
        _each(1, "per completion: hand the element back (a release store)"),
        _each(4, "per completion: move the position past the element and store it before the closure runs (a "
                 "panic in the closure must leave the completions it was handed consumed, and a poll from inside "
                 "it must find the next element and be refused the claim, not told the CQ is empty), the loop's "
                 "end test and branch"),
        (1, "the call's `ret`"),
        (2, "the provider: compare the CQ's driver tag, branch"),
        (6, "the claim, lent to the closure: the compare-exchange with its operands, its test, the store that "
            "lends it, the release store"),
        (3, "load the array, its length and the position"),
        (4, "return the count, the sum and the failures in the `Result`")], _GUARD_SIW),
    ("siw", "poll_cq_empty"): ("`ibv_poll_cq` on an empty siw CQ", [
        (2, "the provider: compare the CQ's driver tag, branch"),
        (4, "load the array and the position, address the element"),
        (3, "load its flags, test `VALID`, branch"),
        _RET], _GUARD_SIW),
    # mlx5 (the mlx5 section's floors, scripts/sim-bench.sh): (floor, text) as written.
    ("mlx5", "post_send"): (94, (
        "By contract `ibv_post_send` of one 8-byte RDMA WRITE with one SGE on mlx5 (BlueFlame copy to the QP's "
        "low-latency register, which the kernel gives it alone, as libmlx5 rings it for a one-WQE post) must: reach the QP's provider (the library serves several "
        "providers: compare the driver tag, branch: ~2), take the QP from concurrent posters (a compare-exchange and "
        "its release store: ~4), judge the request (opcode allowed on RC, flag bits, SGE count against "
        "`max_send_sge`, message size: ~8), find room (`head - tail` against `max_post`: ~4), address the slot "
        "(`cur_post & (wqe_cnt - 1)`, shift, add: ~3), build and store the 16-byte control segment (opcode and "
        "index, QP number and DS count, fence/CQ-update/solicited bits, each byte-swapped: ~10), the remote-address "
        "segment (address and rkey swapped: ~6) and the data segment (length, lkey, address: ~7), record `wr_id` and "
        "the WQE head for the completion (~4), advance `cur_post` and `head` (~3), store the doorbell record (swap, "
        "release store: ~3), then ring: address the register (its UAR page plus the half in use: ~3), `sfence`, "
        "copy the 64-byte basic block "
        "(8 loads, 8 stores: 16), `sfence`, load the register's half, flip it and store it (~3; no register lock: "
        "the register is the QP's alone and its posts are serialised by the QP's own lock), plus the frame and "
        + _RET_TEXT + " (~16); with the two fences, 94.")),
    ("mlx5", "post_send_inline"): (96, (
        "As the non-inline post, with the data segment replaced by the inline header (length | 0x80000000, "
        "swapped) and the 8 bytes copied into the WQE (a load and a store): ~2 more instructions.")),
    ("mlx5", "post_recv"): (34, (
        "By contract `ibv_post_recv` of one WR with one SGE on mlx5 must: reach the QP's provider (the library "
        "serves several providers: compare the driver tag, branch: ~2, as for post_send), take the QP from "
        "concurrent posters "
        "(~4), find room (`head - tail` against `wqe_cnt`: ~4), check the SGE count (~2), address the slot (~3), "
        "store the data segment (length, lkey, address, swapped: ~7) and `wr_id` (~2), advance `head` (~1), store "
        "the doorbell record (swap, release store: ~3), plus " + _RET_TEXT + " (~6).")),
    ("mlx5", "poll_cq"): (535, (
        "By contract `ibv_poll_cq` of a batch of 16 on mlx5 must, per completion: address the CQE at the consumer "
        "index and test it (load the owner byte, opcode not invalid, owner bit against the index's wrap bit: ~6), "
        "load and swap what the completion needs (opcode, QP user index, WQE counter, byte count: ~8), find the "
        "queue (the same QP as the previous CQE: one compare, ~2), take `wr_id` from the WQE's record and retire "
        "the WQEs it covers (mask, load, store of the tail: ~5), store the `ibv_wc` fields (`wr_id`, status, "
        "opcode, byte length, QP number, flags: ~7) and step (~3): ~31 per completion, 496 for 16; per call: take "
        "the CQ from other pollers and release it (~4), hold and release the QP (~4), store the consumer index into "
        "the doorbell record (swap, release store: ~3), plus the frame and " + _RET_TEXT + " (~28).")),
    ("mlx5", "poll_with"): (568, (
        "`Cq::poll_with` of 16 completions, the closure summing `wr_id` and counting failures. The closure must run "
        "with no lock held (it may post to the QP, create or destroy objects or arm the CQ, all of which take slot "
        "locks), and a panic in it must lose only the completion it was handed, so the completions are taken under "
        "the CQ's lock into a chunk (up to 16, stack memory not zeroed first) and handed out after: per completion "
        "the ownership test (~6), the fields it needs (~6), the queue (~2; whether its WQEs carry driver data is "
        "asked once per run of its completions, not per completion), `wr_id` and retirement (~4), the record stored "
        "into the chunk (~6), then handed out: its `wr_id` and status loaded, the closure's sum and count (~4), the "
        "steps of both loops (~5): ~33, 528 for 16; per call ~40: lend the CQ and give it back (~6), take and "
        "release the CQ's slot (by address) and the QP's (~10), the put-back guard of the chunk's completions not "
        "yet handed out (~4), the doorbell record stored once per chunk, under the CQ's lock (~3), the frame and "
        "the return (~17).")),
    ("mlx5", "poll_cq_empty"): (20, (
        "By contract `ibv_poll_cq` on an empty mlx5 CQ must take the CQ from other pollers and release it (~4), "
        "address the CQE at the consumer index and test its owner byte (~6), and return 0 with the frame (~10).")),
}


# C-ABI floors (issue 28 item 5): a siw row through our libibverbs.so.1 above CAPI_INS_TARGET is
# held against what the call must execute through the C ABI: the native floor's items (FLOORS)
# with its Rust return replaced by the C one, plus what the C entry point itself must do by the
# C contract and this library's guarantees (docs of capi/src/post.rs, cq.rs, qp.rs; SAFETY.md).
_C_WRAP = (5, "the bench's wrapper around verbs.h's `static inline` verb: load `context` from the C object, "
              "call through its `ibv_context_ops` table, the wrapper's frame and `ret` (the same instructions on "
              "rdma-core's side)")
_C_HANDLE = (4, "the C handle: NULL tested, the object's tag word loaded and compared, branch (a NULL, destroyed "
                "or foreign handle is refused with `EINVAL`, not dereferenced as a live object)")
_C_LIST = (4, "the C list: the request pointer NULL-tested and its `next` loaded and tested (a list of one "
              "takes the straight path; NULL and longer lists are posted with rdma-core's `bad_wr` semantics)")
_C_LOCK = (4, "serialise concurrent posts on the QP (rdma-core's spinlock): the compare-exchange with its "
              "operand, its test, the release store")
_C_STATE = (2, "whether the QP's state takes a straight post: one load and test of the bits the lock keeps")
_C_PROVIDER = (2, "the provider: compare the QP's driver tag, branch")
_C_RET = (2, "return 0 in `eax` and `ret`")
CAPI_FLOORS = {
    ("siw", "post_send"): [_C_WRAP, _C_HANDLE, _C_LIST, _C_LOCK, _C_STATE, _C_PROVIDER, _C_RET],
    ("siw", "post_recv"): [_C_WRAP, _C_HANDLE, _C_LIST, _C_LOCK, _C_STATE, _C_PROVIDER,
                           (4, "read the C request's SGE count (0 or 1 take the straight path) and test its SGE "
                               "pointer for NULL"), _C_RET],
    ("siw", "poll_cq"): [_C_WRAP, _C_HANDLE,
                         (3, "the CQ's live pointer (cleared by `ibv_destroy_cq`): load, test, branch"),
                         (4, "the count (<= 0 answers 0) and the array (NULL answers `EINVAL`) tested before the "
                             "array is written"),
                         (1, "return the count in `eax`")],
}
# The native floors' Rust returns, which the C ones above replace.
_RUST_RETS = (_RET, (2, "return the count in the `Result` (two stores)"))


def capi_floor(dev, op):
    """(floor, text) of a C-ABI row: FLOORS[(dev, op)] through the C entry point (CAPI_FLOORS)."""
    if (dev, op) not in CAPI_FLOORS or (dev, op) not in FLOORS:
        return None
    what, items, why = FLOORS[(dev, op)]
    items = [it for it in items if it not in _RUST_RETS] + CAPI_FLOORS[(dev, op)]
    return floor_text((f"{what} through the C ABI (`ibv_context_ops`)", items, why))

def floor_text(fl):
    """(floor, the sentence that itemises it) of a FLOORS entry: (what, items, why), or
    (floor, text) as the mlx5 section's are written."""
    if len(fl) == 2:
        return fl
    what, items, why = fl
    floor = sum(n for n, _ in items)
    text = (f"By contract {what} must execute, at the least: "
            + "; ".join(f"{t} {n})" if t.endswith("=") else f"{t} ({n})" for n, t in items)
            + f". Sum: {floor}." + why)
    return floor, text


def render_floors(raw, res, binary, w, summary, dev, label):
    """The floors of `dev`'s instruction rows that miss the 0.5x target."""
    ops = (("post_send", "post_send", "per_call"), ("post_send_inline", "post_send inline", "per_call"),
           ("post_recv", "post_recv", "per_call"),
           ("poll_cq", "poll_cq, batch of N (per call)", "per_call"),
           ("poll_with", "poll_with vs ibv_poll_cq, batch of N (per call)", "per_call"),
           ("poll_cq_empty", "poll_cq on an empty CQ", "per_call"))
    rows = []
    for op, name, key in ops:
        d = res["cg"].get(op, {})
        cd = res["cg"].get("poll_cq", {}) if op == "poll_with" else d
        o, c = d.get("ours") and d["ours"][key], cd.get("c") and cd["c"][key]
        r = ratio(o, c)
        if r is None or r <= INS_TARGET:
            continue
        rows.append((op, name, o, c, r))
    if not rows:
        return
    w(f"### Floors of the {dev} rows above {INS_TARGET}x\n")
    w("For each instruction row above the target: what the call must do by its contract, the floor that "
      "leaves in instructions, and the instructions this run executed (every one, with how many times per call "
      "it ran and the source line it came from: `objdump -d -l` of the bench binary annotated with callgrind's "
      f"per-instruction counts, `scripts/cg_listing.py`). A row within {round((FLOOR_SLACK - 1) * 100)} % of its "
      "floor counts as met.\n")
    met = []
    for op, name, o, c, r in rows:
        fl = FLOORS.get((dev, op))
        w(f"#### {dev} {name}: ours {fmt(o, 1)}, rdma-core {fmt(c, 1)} ({fmt(r)}x)\n")
        if fl:
            floor, text = floor_text(fl)
            ok = o <= floor * FLOOR_SLACK
            met.append(o / floor)
            w(f"{text}\n")
            w(f"**Floor {floor} instructions per call; ours {fmt(o, 1)} = {fmt(o / floor)}x the floor: "
              f"{'within' if ok else 'not within'} {round((FLOOR_SLACK - 1) * 100)} %.**\n")
        else:
            met.append(None)
            w("No floor written for this row.\n")
        got = op_listing(raw, res, op, binary)
        if got:
            text, by_file = got
            top = sorted(by_file.items(), key=lambda kv: -kv[1])
            w("Where the instructions go, by source file: " + "; ".join(f"`{f}` {n:.1f}" for f, n in top if n >= 0.5) + ".\n")
            w("<details><summary>annotated listing</summary>\n\n```\n" + text + "\n```\n</details>\n")
    summary.append((f"{label}rows above {INS_TARGET}x: ours / written floor", f"<= {FLOOR_SLACK}", met, False,
                    FLOOR_SLACK))


def render_capi_floors(res, w, summary, dev):
    """The floors of `dev`'s C-ABI instruction rows above CAPI_INS_TARGET (CAPI_FLOORS)."""
    rows = []
    for op, name in (("post_send", "ibv_post_send"), ("post_recv", "ibv_post_recv"),
                     ("poll_cq", "ibv_poll_cq, batch of N (per call)"), ("poll_cq_empty", "ibv_poll_cq, empty")):
        d = res["cg"].get(op, {})
        o, c = d.get("capi") and d["capi"]["per_call"], d.get("c") and d["c"]["per_call"]
        r = ratio(o, c)
        if r is not None and r > CAPI_INS_TARGET:
            rows.append((op, name, o, c, r))
    if not rows:
        return
    slack = round((FLOOR_SLACK - 1) * 100)
    w(f"#### Floors of the {dev} C-ABI rows above {CAPI_INS_TARGET}x\n")
    w("For each C-ABI row above the target: what the call must execute through the C entry point by its "
      "contract (the native row's floor, above, plus the C ABI's own steps), and how far ours is from it. "
      f"A row within {slack} % of its floor counts as met.\n")
    met = []
    for op, name, o, c, r in rows:
        w(f"##### {dev} {name} (C ABI): ours {fmt(o, 1)}, rdma-core {fmt(c, 1)} ({fmt(r)}x)\n")
        fl = capi_floor(dev, op)
        if not fl:
            met.append(None)
            w("No floor written for this row.\n")
            continue
        floor, text = fl
        met.append(o / floor)
        w(f"{text}\n")
        w(f"**Floor {floor} instructions per call; ours {fmt(o, 1)} = {fmt(o / floor)}x the floor: "
          f"{'within' if o <= floor * FLOOR_SLACK else 'not within'} {slack} %.**\n")
    summary.append((f"{dev}: C ABI rows above {CAPI_INS_TARGET}x: ours / written floor", f"<= {FLOOR_SLACK}", met,
                    False, FLOOR_SLACK))


def size_key(cfg):
    return [int(x) for x in re.findall(r"\d+", cfg)]


def render(raw):
    host = read_kv(os.path.join(raw, "host-info.txt"))
    guest = read_kv(os.path.join(raw, "guest-info.txt"))
    res = collect(raw)
    out = []
    w = out.append
    summary = []  # (target, worst ratio, mark)
    misses = []  # latency / message-rate rows that missed: (row, ratio, inside perftest's spread)

    w("# Benchmarks: verbs (pure Rust) vs rdma-core's libibverbs on rxe0 and siw0\n")
    w(f"Generated by `{host.get('command', 'scripts/bench.sh')}` on {host.get('date', '?')} "
      f"at commit `{host.get('commit', '?')}`. Reproduce with:\n")
    w("```\nscripts/bench.sh            # setup, build, one VM boot, this file\n```\n")
    w("Both sides run on the same soft-RoCE device (rxe0) in one VM boot, alternating run by run. "
      "The VM runs under qemu "
      f"**{host.get('accel', '?')}**: wall-clock numbers are those of an emulated CPU (50-100x slower "
      "than native) and dominated by the kernel's rxe driver, so they compare the two libraries on this "
      "setup only. Under TCG every guest instruction costs several host instructions, so a library that "
      "executes more userspace instructions per operation also shows it in latency and message rate here. "
      "The 2-CPU host is shared: other load makes single runs stall for milliseconds, which is why every "
      "row is a median of runs and shows their spread; rows whose runs spread by more than "
      f"{NOISY}x are marked (noisy) and compare little. Instruction counts (callgrind, userspace only) do "
      "not depend on emulation speed or load.\n")
    w("| machine | |\n| --- | --- |")
    for k, label in (("host_cpu", "host CPU"), ("host_nproc", "host CPUs (nproc)"),
                     ("host_kernel", "host kernel"), ("qemu", "qemu"), ("accel", "qemu accel")):
        w(f"| {label} | {host.get(k, '?')} |")
    for k, label in (("guest_kernel", "guest kernel"), ("guest_nproc", "guest CPUs"),
                     ("guest_cpu", "guest CPU model"), ("rdma_core", "rdma-core (C libibverbs + librxe)"),
                     ("perftest", "perftest"), ("valgrind", "valgrind")):
        w(f"| {label} | {guest.get(k, '?')} |")
    w(f"| rustc / gcc | {host.get('rustc', '?')} / {host.get('gcc', '?')} |")
    w(f"| harness wall time | {host.get('wall_s', '?')} s |")
    w(f"| host load average (1/5/15 min) | {host.get('host_load', '?')} |")
    if host.get("ours_built") == "no":
        w("\n**Our side was not built** (cargo build failed or the targets do not exist yet): "
          "every \"ours\" column is n/a and no target is met.\n")
    else:
        w("")

    # --- instructions ---
    w("## Userspace instructions per call (callgrind)\n")
    w("`valgrind --tool=callgrind --toggle-collect=bench_<op>` over benches/c/ops_bench.c (rdma-core, "
      "provider librxe) and benches/ops_bench.rs (ours): inclusive instructions inside one call of the verb, "
      "divided by the number of calls. Target: ours <= "
      f"{INS_TARGET}x rdma-core.\n")
    w("| operation | rdma-core | ours | ours / rdma-core | target | |\n| --- | ---: | ---: | ---: | ---: | --- |")
    for op, label, key in OPS_ROWS:
        d = res["cg"].get(op, {})
        # poll_with has no C twin: its C column is ibv_poll_cq's.
        cd = res["cg"].get("poll_cq", {}) if op == "poll_with" else d
        c = cd.get("c") and cd["c"][key]
        o = d.get("ours") and d["ours"][key]
        r = ratio(o, c)
        mk = mark(r, INS_TARGET, False)
        w(f"| {label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {INS_TARGET} | {mk} |")
    ins_all = [ratio(res["cg"].get(op, {}).get("ours") and res["cg"][op]["ours"]["per_call"],
                     res["cg"].get(op, {}).get("c") and res["cg"][op]["c"]["per_call"])
               for op in ("post_send", "post_recv", "poll_cq", "poll_cq_empty")]
    summary.append(("instructions per post_send/post_recv/poll_cq", f"<= {INS_TARGET}x", ins_all, False, INS_TARGET))
    w("")
    render_floors(raw, res, host.get("ours_ops"), w, summary, "rxe", "")

    # --- latency ---
    w("## Ping-pong latency\n")
    w("perftest `ib_send_lat` / `ib_write_lat` vs `verbs-perf send_lat` / `write_lat`, server and client "
      "on rxe0 (loopback). Value: `t_typical` (perftest's median of the half round trip, us), the median over "
      "the runs. Target: ours <= 1.0x perftest.\n")
    w("| test | bytes | perftest median us | ours median us | ours / perftest | perftest runs (min-max) | "
      "ours runs (min-max) | target | |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    lat_ratios = []
    for (test, cfg) in sorted(res["lat"], key=lambda k: (k[0], size_key(k[1]))):
        d = res["lat"][(test, cfg)]
        cvals = [v[0] for v in d.get("c", []) if v]
        ovals = [v[0] for v in d.get("ours", []) if v]
        c, o = median(cvals), median(ovals)
        r = ratio(o, c)
        lat_ratios.append(r)
        if r is not None and r > LAT_TARGET:
            within = bool(cvals) and o is not None and min(cvals) <= o <= max(cvals)
            misses.append((f"{test} {cfg[1:]} B", r, within))
        w(f"| {test} | {cfg[1:]} | {fmt(c)} | {fmt(o)} | {fmt(r)} | {len(cvals)}: {spread(cvals)} | "
          f"{len(ovals)}: {spread(ovals)} | <= {LAT_TARGET} | {mark(r, LAT_TARGET, False)}{noisy(cvals, ovals)} |")
    summary.append(("ping-pong median latency", f"<= {LAT_TARGET}x", lat_ratios, False, LAT_TARGET))
    w("")
    render_loop(res, w, summary, "")

    # --- message rate ---
    w("## Message rate\n")
    w("perftest `ib_send_bw` / `ib_write_bw` vs `verbs-perf send_bw` / `write_bw`, "
      "8-byte messages, `-q` QPs, `-l` work requests per post (post list; CQ moderation = list length). "
      "Value: MsgRate (Mpps), the median over the runs. Target: ours >= 1.0x perftest.\n")
    w("| test | QPs | post list | perftest Mpps | ours Mpps | ours / perftest | perftest runs (min-max) | "
      "ours runs (min-max) | target | |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    bw_ratios = []
    for (test, cfg) in sorted(res["bw"], key=lambda k: (k[0], size_key(k[1]))):
        d = res["bw"][(test, cfg)]
        cvals = [v for v in d.get("c", []) if v is not None]
        ovals = [v for v in d.get("ours", []) if v is not None]
        c, o = median(cvals), median(ovals)
        r = ratio(o, c)
        bw_ratios.append(r)
        q, l = size_key(cfg)
        if r is not None and r < BW_TARGET:
            within = bool(cvals) and o is not None and min(cvals) <= o <= max(cvals)
            misses.append((f"{test} q{q} l{l}", r, within))
        w(f"| {test} | {q} | {l} | {fmt(c, 4)} | {fmt(o, 4)} | {fmt(r)} | {len(cvals)}: {spread(cvals, 4)} | "
          f"{len(ovals)}: {spread(ovals, 4)} | >= {BW_TARGET} | {mark(r, BW_TARGET, True)}{noisy(cvals, ovals)} |")
    summary.append(("message rate", f">= {BW_TARGET}x", bw_ratios, True, BW_TARGET))
    w("")

    # --- where our instructions go ---
    rows = breakdown(raw, res, host.get("ours_ops"))
    if rows:
        w("## Where our instructions go (callgrind, per call)\n")
        w("Every instruction executed inside each of our wrappers (callgrind `--dump-instr=yes`, the raw "
          "profile target/bench/raw/cg/all.ours.callgrind, `scripts/cg_listing.py`), summed by the source file "
          "it was compiled from (inlined code counts for its own file), per call.\n")
        w("| operation | instructions per call | where |\n| --- | ---: | --- |")
        for op, per_call, where in rows:
            w(f"| {op} | {fmt(per_call, 1)} | {where} |")
        w("")

    # --- what bounds the misses ---
    w("## What bounds the misses\n")
    cg = res["cg"]

    def per(op, side, key="per_call"):
        d = cg.get(op, {}).get(side)
        return d and d.get(key)

    def entry(op, fname):
        for o, _, where in rows or []:
            if o == op:
                m = re.search(re.escape(fname) + r"` ([\d.]+)", where)
                if m:
                    return float(m.group(1))
        return None

    ps_o, ps_c = per("post_send", "ours"), per("post_send", "c")
    if ps_o and ps_c and ps_o > INS_TARGET * ps_c:
        db = entry("post_send", "channel.rs")
        w(f"- **post_send** ({fmt(ps_o, 0)} vs {fmt(ps_c, 0)}): rxe has no doorbell page; every post ends in a "
          "`write()` of a 32-byte zero-WR `POST_SEND` command, which both libraries pay"
          + (f" (ours: {fmt(db, 0)} instructions in `channel.rs` here)" if db else "") +
          ". The rest is the request itself: checking it (opcode for the transport, destination, SGE count, "
          "message size, atomic alignment: a few instructions each) and about 15 stores of the WQE fields the "
          "kernel reads, plus the ring's index arithmetic. Halving rdma-core's count would leave about "
          f"{fmt(INS_TARGET * ps_c, 0)} instructions for all of that; we are at {fmt(ps_o / ps_c)}x.")
    pc_o, pc_c = per("poll_cq", "ours", "per_item"), per("poll_cq", "c", "per_item")
    pw_o = per("poll_with", "ours", "per_item")
    if pc_o and pc_c and pc_o > INS_TARGET * pc_c:
        w(f"- **poll_cq** ({fmt(pc_o, 1)} vs {fmt(pc_c, 1)} per completion): `ibv_poll_cq`'s contract is to fill "
          "the caller's array with 48-byte `ibv_wc` records. The compiled copy loop (`post::poll_leave`, "
          "rxe's own out-of-line function, one jump from `Cq::poll`; `objdump -d` of the bench) is 7.5 instructions per "
          "completion: eight records a round, each 6 for the copy itself (3 sixteen-byte loads and 3 stores at "
          "displacements, the x86-64 baseline has no wider moves) and 1 `or` of the record's flag word from "
          "memory (rxe reports two flag bits swapped; a batch in which one is set is gone over again), and the "
          "round's 4 steps (source, destination, count, branch) shared by the eight. That is most of the "
          f"{fmt(INS_TARGET * pc_c, 1)} that half of rdma-core's count allows, before the per-call part (the "
          "CQ's claim flag, both ring indices, publishing the consumer index, the call itself) is shared out "
          "over the batch: a copying poll does not meet the target, ours included. "
          + (f"`Cq::poll_with` hands each completion over in place and loads only what the caller reads: "
             f"{fmt(pw_o, 1)} per completion ({fmt(ratio(pw_o, pc_c))}x)." if pw_o else ""))
    pwc = per("poll_with", "ours")
    if pw_o and pc_c and pw_o > INS_TARGET * pc_c:
        w(f"- **poll_with** ({fmt(pw_o, 1)} per completion, {fmt(pwc, 0)} per call): per completion the loop "
          "computes the slot address (3 instructions), loads the fields the closure reads, runs the closure "
          "and counts; per call it takes the CQ's claim flag (one compare-exchange), reads both indices and "
          "publishes the consumer index. With batches of 16, the per-call part is several instructions per "
          "completion.")
    if misses:
        inside = [m for m in misses if m[2]]
        w(f"- **latency and message rate**: {len(misses)} row(s) missed, worst "
          f"{fmt(max((m[1] for m in misses if m[1] and m[1] > 1), default=None)) or 'n/a'}x / "
          f"{fmt(min((m[1] for m in misses if m[1] and m[1] < 1), default=None)) or 'n/a'}x; "
          f"{len(inside)} of them have our median inside perftest's own min-max over its runs "
          f"({', '.join(m[0] for m in inside) or 'none'}). Under TCG a round trip is ~30 us of emulated kernel "
          "work (rxe's requester, responder and completer tasks, the UDP loopback) against the few hundred "
          "userspace instructions per round trip counted above, on either side; the rows differ by less than "
          "the run-to-run noise of a shared 2-CPU host, in both directions. Neither side sends inline: perftest "
          "settles its latency tests' inline size by the device (perftest_parameters.c `ctx_set_max_inline`: 236 "
          "bytes for SEND, 220 for RDMA WRITE on devices its table knows) and does not know rxe or siw (its banner "
          "says `Max inline data : 0[B]` on both); `verbs-perf -I` settles it the same way.")
    w("")

    # --- wall time of the ops bench ---
    w("## Ops bench wall time (informative)\n")
    w("ns per call measured with clock_gettime around each call, median over runs. Under emulation this is "
      "mostly the cost of the emulated CPU and, for post_send, the doorbell system call into the kernel; no "
      "target.\n")
    w("| operation | rdma-core ns | ours ns | ours / rdma-core |\n| --- | ---: | ---: | ---: |")
    for op in ("post_send", "post_recv", "poll_cq", "poll_cq_empty"):
        d = res["wall"].get(op, {})
        c, o = median(d.get("c", [])), median(d.get("ours", []))
        w(f"| {op} | {fmt(c, 0)} | {fmt(o, 0)} | {fmt(ratio(o, c))} |")
    w("")

    render_capi(res, w, summary)
    render_siw(raw, w, summary)

    # --- summary (placed at the top) ---
    top = ["## Targets\n", "Ratios printed by the harness, not asserted by tests. "
           "A target is met only if every row under it was measured and met it.\n",
           "| target | rows | worst ratio (ours / rdma-core) | |\n| --- | ---: | ---: | --- |"]
    top += target_rows(summary)
    top.append("")
    # insert after the machine table
    idx = out.index("## Userspace instructions per call (callgrind)\n")
    out[idx:idx] = top
    return "\n".join(out).rstrip() + "\n"


def target_rows(summary):
    """The Targets table's rows of `summary` entries (name, target, ratios, higher, t)."""
    top = []
    for name, tgt, ratios, higher, t in summary:
        measured = [r for r in ratios if r is not None]
        if not ratios:
            top.append(f"| {name} {tgt} | 0 | n/a | not measured |")
            continue
        worst_r = (min(measured) if higher else max(measured)) if measured else None
        if len(measured) < len(ratios):
            mk = "not measured" if not measured else f"**MISS** ({len(ratios) - len(measured)} rows not measured)"
            if measured and mark(worst_r, t, higher) != "PASS":
                mk = "**MISS**" + mk[8:]
        else:
            mk = mark(worst_r, t, higher)
        misses = sum(1 for r in measured if mark(r, t, higher) != "PASS")
        rows = f"{len(ratios)}" + (f" ({misses} missed)" if misses else "")
        top.append(f"| {name} {tgt} | {rows} | {fmt(worst_r)} | {mk} |")
    return top


def render_capi(res, w, summary):
    """The C-ABI rows: the same C programs on rdma-core's libibverbs.so.1 (side c) and on ours
    (side capi, capi/ built by cargo, loaded by LD_LIBRARY_PATH)."""
    w("## Through the C ABI: the same C programs on our libibverbs.so.1 (rxe0)\n")
    have = any("capi" in d for d in res["lat"].values()) or any("capi" in d for d in res["cg"].values())
    if not have:
        w("Not measured (our libibverbs.so.1 was not built).\n")
        for name in ("C ABI: instructions per ibv_post_send/ibv_post_recv/ibv_poll_cq",
                     "C ABI: ping-pong median latency", "C ABI: message rate"):
            summary.append((name, "", [None], False, 1.0))
        return
    w("Unmodified perftest binaries and benches/c/ops_bench.c, run once on rdma-core's library (librxe) and "
      "once with `LD_LIBRARY_PATH` pointing at ours, alternating in the same VM boot. The data-path calls go "
      "through verbs.h's inline functions into the `ibv_context_ops` table, as in any C program. Target for "
      f"instructions: ours <= {CAPI_INS_TARGET}x rdma-core.\n")
    w("| operation | rdma-core | ours (C ABI) | ours / rdma-core | target | |\n| --- | ---: | ---: | ---: | ---: | --- |")
    rows = (("post_send", "ibv_post_send (8 B RDMA WRITE, list of 1)", "per_call"),
            ("post_recv", "ibv_post_recv (1 WR, 1 SGE)", "per_call"),
            ("poll_cq", "ibv_poll_cq, batch of N (per call)", "per_call"),
            ("poll_cq", "ibv_poll_cq, batch of N (per completion)", "per_item"),
            ("poll_cq_empty", "ibv_poll_cq on an empty CQ", "per_call"))
    ins = []
    for op, label, key in rows:
        d = res["cg"].get(op, {})
        c = d.get("c") and d["c"][key]
        o = d.get("capi") and d["capi"][key]
        r = ratio(o, c)
        if key == "per_call":
            ins.append(r)
        w(f"| {label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {CAPI_INS_TARGET} | {mark(r, CAPI_INS_TARGET, False)} |")
    summary.append(("C ABI: instructions per ibv_post_send/ibv_post_recv/ibv_poll_cq", f"<= {CAPI_INS_TARGET}x",
                    ins, False, CAPI_INS_TARGET))
    w("")
    w("| perftest test | size / QPs, post list | on rdma-core | on ours | ours / rdma-core | rdma-core runs | "
      "our runs | target | |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    lat, bw = [], []
    for kind, higher, target, digits in (("lat", False, LAT_TARGET, 2), ("bw", True, BW_TARGET, 4)):
        for (test, cfg) in sorted(res[kind], key=lambda k: (k[0], size_key(k[1]))):
            d = res[kind][(test, cfg)]
            if "capi" not in d:
                continue
            pick = (lambda v: v[0] if v else None) if kind == "lat" else (lambda v: v)
            cvals = [pick(v) for v in d.get("c", []) if pick(v) is not None]
            ovals = [pick(v) for v in d.get("capi", []) if pick(v) is not None]
            c, o = median(cvals), median(ovals)
            r = ratio(o, c)
            (lat if kind == "lat" else bw).append(r)
            what = f"{cfg[1:]} B" if kind == "lat" else "q{} l{}".format(*size_key(cfg))
            unit = "us" if kind == "lat" else "Mpps"
            w(f"| ib_{test} | {what} | {fmt(c, digits)} {unit} | {fmt(o, digits)} {unit} | {fmt(r)} | "
              f"{len(cvals)}: {spread(cvals, digits)} | {len(ovals)}: {spread(ovals, digits)} | "
              f"{'>=' if higher else '<='} {target} | {mark(r, target, higher)}{noisy(cvals, ovals)} |")
    summary.append(("C ABI: ping-pong median latency", f"<= {LAT_TARGET}x", lat, False, LAT_TARGET))
    summary.append(("C ABI: message rate", f">= {BW_TARGET}x", bw, True, BW_TARGET))
    w("")


def render_siw(raw, w, summary):
    """The siw0 rows: raw/siw/{lat,bw,cg}, laid out as the rxe ones."""
    guest = read_kv(os.path.join(raw, "guest-info.txt"))
    siw = os.path.join(raw, "siw")
    w("## SoftiWARP (siw0): ours vs rdma-core's libsiw\n")
    if not os.path.isdir(siw):
        w("Not measured (the VM had no siw0 or no address for it).\n")
        for name in ("siw: instructions per post_send/post_recv/poll_cq", "siw: ping-pong median latency (-R)",
                     "siw: message rate (-R)"):
            summary.append((name, "", [None], False, 1.0))
        return
    res = collect(siw)
    # bench-guest.sh writes "siw_device=<dev> siw_ip=<ip>" on one line.
    siw_words = guest.get("siw_device", "siw0").split()
    siw_dev = siw_words[0] if siw_words else "siw0"
    siw_ip = guest.get("siw_ip") or next((t.split("=", 1)[1] for t in siw_words[1:] if t.startswith("siw_ip=")), "?")
    w(f"iWARP QPs reach RTS only through the connection manager: the latency and message-rate rows run "
      f"perftest's and verbs-perf's rdma_cm mode (`-R`: the exchange over an rdma_cm QP, the test QPs "
      f"connected by rdma_cm) on {siw_dev} at {siw_ip}, both sides "
      "the same program, alternating run by run in the same VM boot as the rxe rows. The ops benches connect "
      "their two QPs through librdmacm (C) / `verbs::cm` (ours) (`-c IP`). siw's data path is kernel TCP: "
      "the doorbell system call and the kernel dominate wall time; the instruction counts are userspace only.\n")
    w("### Userspace instructions per call (callgrind)\n")
    w("| operation | rdma-core (libsiw) | ours | ours / rdma-core | target | |\n| --- | ---: | ---: | ---: | ---: | --- |")
    # siw's table has no per-completion poll_with row
    rows = tuple(r for r in OPS_ROWS if (r[0], r[2]) != ("poll_with", "per_item"))
    for op, label, key in rows:
        d = res["cg"].get(op, {})
        cd = res["cg"].get("poll_cq", {}) if op == "poll_with" else d
        c = cd.get("c") and cd["c"][key]
        o = d.get("ours") and d["ours"][key]
        r = ratio(o, c)
        w(f"| {label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {INS_TARGET} | {mark(r, INS_TARGET, False)} |")
    ins = [ratio(res["cg"].get(op, {}).get("ours") and res["cg"][op]["ours"]["per_call"],
                 res["cg"].get(op, {}).get("c") and res["cg"][op]["c"]["per_call"])
           for op in ("post_send", "post_recv", "poll_cq", "poll_cq_empty")]
    summary.append(("siw: instructions per post_send/post_recv/poll_cq", f"<= {INS_TARGET}x", ins, False, INS_TARGET))
    w("")
    render_floors(siw, res, read_kv(os.path.join(raw, "host-info.txt")).get("ours_ops"), w, summary, "siw", "siw: ")
    if any("capi" in d for d in res["cg"].values()):
        w("### Through the C ABI (siw0)\n")
        w("benches/c/ops_bench.c with `-c IP`, once on rdma-core's library (libsiw) and once on our "
          f"libibverbs.so.1 (`LD_LIBRARY_PATH`), as the rxe0 C-ABI rows. Target: ours <= {CAPI_INS_TARGET}x.\n")
        w("| operation | rdma-core (libsiw) | ours (C ABI) | ours / rdma-core | target | |\n"
          "| --- | ---: | ---: | ---: | ---: | --- |")
        cins = []
        for op, label, key in (("post_send", "ibv_post_send (8 B RDMA WRITE, list of 1)", "per_call"),
                               ("post_recv", "ibv_post_recv (1 WR, 1 SGE)", "per_call"),
                               ("poll_cq", "ibv_poll_cq, batch of N (per call)", "per_call"),
                               ("poll_cq", "ibv_poll_cq, batch of N (per completion)", "per_item"),
                               ("poll_cq_empty", "ibv_poll_cq on an empty CQ", "per_call")):
            d = res["cg"].get(op, {})
            c = d.get("c") and d["c"][key]
            o = d.get("capi") and d["capi"][key]
            r = ratio(o, c)
            if key == "per_call":
                cins.append(r)
            w(f"| {label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {CAPI_INS_TARGET} | "
              f"{mark(r, CAPI_INS_TARGET, False)} |")
        summary.append(("siw: C ABI: instructions per ibv_post_send/ibv_post_recv/ibv_poll_cq",
                        f"<= {CAPI_INS_TARGET}x", cins, False, CAPI_INS_TARGET))
        w("")
        render_capi_floors(res, w, summary, "siw")
    w("### Ping-pong latency (-R)\n")
    w("| test | bytes | perftest median us | ours median us | ours / perftest | perftest runs (min-max) | "
      "ours runs (min-max) | target | |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    lat = []
    for (test, cfg) in sorted(res["lat"], key=lambda k: (k[0], size_key(k[1]))):
        d = res["lat"][(test, cfg)]
        cvals = [v[0] for v in d.get("c", []) if v]
        ovals = [v[0] for v in d.get("ours", []) if v]
        c, o = median(cvals), median(ovals)
        r = ratio(o, c)
        lat.append(r)
        w(f"| {test} | {cfg[1:]} | {fmt(c)} | {fmt(o)} | {fmt(r)} | {len(cvals)}: {spread(cvals)} | "
          f"{len(ovals)}: {spread(ovals)} | <= {LAT_TARGET} | {mark(r, LAT_TARGET, False)}{noisy(cvals, ovals)} |")
    summary.append(("siw: ping-pong median latency (-R)", f"<= {LAT_TARGET}x", lat, False, LAT_TARGET))
    w("")
    render_loop(res, w, summary, "siw: ")
    w("### Message rate (-R)\n")
    w("`write_bw`, 8-byte messages (`send_bw` on iWARP, with perftest's receive credits, is tested "
      "against perftest but not measured here).\n")
    w("| test | QPs | post list | perftest Mpps | ours Mpps | ours / perftest | perftest runs (min-max) | "
      "ours runs (min-max) | target | |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    bw = []
    for (test, cfg) in sorted(res["bw"], key=lambda k: (k[0], size_key(k[1]))):
        d = res["bw"][(test, cfg)]
        cvals = [v for v in d.get("c", []) if v is not None]
        ovals = [v for v in d.get("ours", []) if v is not None]
        c, o = median(cvals), median(ovals)
        r = ratio(o, c)
        bw.append(r)
        q, l = size_key(cfg)
        w(f"| {test} | {q} | {l} | {fmt(c, 4)} | {fmt(o, 4)} | {fmt(r)} | {len(cvals)}: {spread(cvals, 4)} | "
          f"{len(ovals)}: {spread(ovals, 4)} | >= {BW_TARGET} | {mark(r, BW_TARGET, True)}{noisy(cvals, ovals)} |")
    summary.append(("siw: message rate (-R)", f">= {BW_TARGET}x", bw, True, BW_TARGET))
    w("")


MLX5_HEAD = "## mlx5 (simulated ConnectX): ours vs libmlx5"
# the rows of OPS_ROWS plus the inline post_send after post_send
MLX5_OPS = (OPS_ROWS[:1]
            + (("post_send_inline", "post_send inline (8 B RDMA WRITE, IBV_SEND_INLINE)", "per_call"),)
            + OPS_ROWS[1:])
MLX5_GATED = ("post_send", "post_send_inline", "post_recv", "poll_cq", "poll_cq_empty")


def mlx5_rows(res, side):
    """[(op, label, key, rdma-core, side's, ratio)] of the mlx5 table (poll_with's C column is
    ibv_poll_cq's; the C ABI has no poll_with)."""
    rows = []
    for op, label, key in MLX5_OPS:
        if side == "capi" and op == "poll_with":
            continue
        d = res["cg"].get(op, {})
        cd = res["cg"].get("poll_cq", {}) if op == "poll_with" else d
        c = cd.get("c") and cd["c"][key]
        o = d.get(side) and d[side][key]
        rows.append((op, label, key, c, o, ratio(o, c)))
    return rows


def render_mlx5(raw):
    """(the mlx5 section, its Targets rows) from scripts/sim-bench.sh's raw results."""
    host = read_kv(os.path.join(raw, "host-info.txt"))
    res = collect(raw)
    out, summary = [], []
    w = out.append
    w(MLX5_HEAD + "\n")
    w(f"Generated by `{host.get('command', 'scripts/sim-bench.sh')}` on {host.get('date', '?')} at commit "
      f"`{host.get('commit', '?')}` (issue 26 item 7), on the host, no VM: the simulated ConnectX of "
      "scripts/sim.sh (verbs-simd plays the NIC and completes the requests while the benches run; the shim "
      "is preloaded into each bench). benches/c/ops_bench.c runs on rdma-core's unmodified libibverbs + "
      f"libmlx5 ({host.get('rdma_core', '?')}), benches/ops_bench.rs with our mlx5 provider (feature `mlx5`, "
      "rustix's libc backend so that the shim sees the system calls), and the C bench again on our "
      "libibverbs.so.1 (C ABI); each under `valgrind --tool=callgrind --toggle-collect=bench_<op>` "
      f"({host.get('valgrind', '?')}): the userspace instructions inside one call of the verb, divided by "
      "the calls. mlx5's data path makes no system call: these counts are the whole cost of a post or a "
      "poll on the CPU (the doorbell is a store into the mapped UAR page, BlueFlame a 64-byte copy there). "
      f"Two RC QPs on mlx5_0, `-i 64` (max_inline_data), 2000 posts, polls of batches of 16. "
      f"Target: ours <= {INS_TARGET}x libmlx5 on every row; a row above it counts only with a written floor "
      f"it is within {round((FLOOR_SLACK - 1) * 100)} % of.\n")
    w("### Userspace instructions per call (callgrind)\n")
    w("| operation | rdma-core (libmlx5) | ours | ours / rdma-core | target | |\n| --- | ---: | ---: | ---: | ---: | --- |")
    gated = []
    for op, label, key, c, o, r in mlx5_rows(res, "ours"):
        if op in MLX5_GATED and key == "per_call":
            gated.append(r)
        w(f"| {label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {INS_TARGET} | {mark(r, INS_TARGET, False)} |")
    summary.append(("mlx5: instructions per post_send/post_send inline/post_recv/poll_cq", f"<= {INS_TARGET}x",
                    gated, False, INS_TARGET))
    w("")
    render_floors(raw, res, host.get("ours_ops"), w, summary, "mlx5", "mlx5: ")
    w("### Through the C ABI (mlx5_0)\n")
    if not any("capi" in d for d in res["cg"].values()):
        w("Not measured (our libibverbs.so.1 with the mlx5 provider was not built).\n")
        summary.append(("mlx5: C ABI: instructions per ibv_post_send/ibv_post_recv/ibv_poll_cq", "", [None], False,
                        INS_TARGET))
    else:
        w("benches/c/ops_bench.c, once on rdma-core's library (libmlx5) and once on our libibverbs.so.1 "
          f"(`LD_LIBRARY_PATH`). Target: ours <= {INS_TARGET}x.\n")
        w("| operation | rdma-core (libmlx5) | ours (C ABI) | ours / rdma-core | target | |\n"
          "| --- | ---: | ---: | ---: | ---: | --- |")
        cins = []
        for op, label, key, c, o, r in mlx5_rows(res, "capi"):
            if op in MLX5_GATED and key == "per_call":
                cins.append(r)
            w(f"| ibv_{label} | {fmt(c, 1)} | {fmt(o, 1)} | {fmt(r)} | <= {INS_TARGET} | {mark(r, INS_TARGET, False)} |")
        summary.append(("mlx5: C ABI: instructions per ibv_post_send/ibv_post_recv/ibv_poll_cq", f"<= {INS_TARGET}x",
                        cins, False, INS_TARGET))
        w("")
    return "\n".join(out).rstrip() + "\n", target_rows(summary)


def splice_targets(text, rows, prefix="| mlx5: "):
    """`text` with the Targets table's rows starting with `prefix` replaced by `rows`."""
    lines = text.split("\n")
    lines = [ln for ln in lines if not ln.startswith(prefix)]
    try:
        start = lines.index("## Targets")
    except ValueError:
        return text
    end = start + 1
    while end < len(lines) and not lines[end].startswith("## "):
        end += 1
    last = max((i for i in range(start, end) if lines[i].startswith("|")), default=None)
    if last is None:
        return text
    lines[last + 1:last + 1] = rows
    return "\n".join(lines)


def write_mlx5(raw, path):
    """Puts the mlx5 section and its Targets rows into the report at `path` (the rest stays)."""
    section, rows = render_mlx5(raw)
    old = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n"
    secs = sections(old)
    if MLX5_HEAD in secs:
        text = old.replace(secs[MLX5_HEAD].rstrip() + "\n", section, 1)
    else:
        text = old.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(splice_targets(text, rows))


def print_mlx5(raw):
    res = collect(raw)
    for side in ("ours", "capi"):
        if not any(side in d for d in res["cg"].values()):
            continue
        for op, label, key, c, o, r in mlx5_rows(res, side):
            print(f"mlx5 {side:4} {op:16} {key:8} libmlx5 {fmt(c, 1):>8}  {side} {fmt(o, 1):>8}  ratio {fmt(r)}")


def selftest():
    lat = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       500          26.73          2426.24      29.71    	       46.58       	152.14 		1250.81 		2426.24
---------------------------------------------------------------------------------------
exit=0
"""
    assert parse_perftest(lat, "lat") == (29.71, 46.58)
    assert parse_perftest(lat.replace("exit=0", "exit=1"), "lat") is None
    bw = """ #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 8          4000             0.74               0.56   		   0.073355
"""
    assert parse_perftest(bw, "bw") == 0.073355
    assert parse_perftest("Couldn't connect\nexit=1\n", "bw") is None
    ops = parse_ops("ops_bench impl=c op=poll_cq calls=20 items=320 ns_per_call=2914\n")
    assert ops == {"poll_cq": {"calls": 20.0, "items": 320.0, "ns_per_call": 2914.0}}
    assert parse_collected("==255== Collected : 197,820\n") == 197820
    assert mark(0.4, 0.5, False) == "PASS" and mark(0.6, 0.5, False) == "**MISS**"
    assert mark(1.1, 1.0, True) == "PASS" and mark(None, 1.0, True) == "not measured"
    assert noisy([30.0, 31.0], [29.0, 40.0]) == "" and noisy([30.0, 46.0], [29.0]) == " (noisy)"
    assert spread([3.0, None, 1.0]) == "1.00-3.00" and spread([]) == "n/a"
    cg_waits_mod().selftest()
    assert main_loops([(100.0, 5, "a"), (1.0, 2, "b"), (50.0, 20, "c")]) == "50 x 20 (c), 100 x 5 (a)"
    print("bench_report: selftest ok")


LOOP_HEADING = "### Userspace instructions per iteration of the latency loop (callgrind)\n"


def splice_loop(raw, path):
    """`scripts/bench.sh --loop`: the per-iteration sections of rxe0 (the first) and siw0 (the
    second) and their rows of the Targets table, rendered from `raw` into the report at
    `path` in place; the rest of the report stays as it was."""
    text = open(path, encoding="utf-8").read()
    pos = 0
    for label, d in (("", raw), ("siw: ", os.path.join(raw, "siw"))):
        if not os.path.isdir(os.path.join(d, "loop")):
            continue
        out, summ = [], []
        render_loop(collect(d), out.append, summ, label)
        body = "\n".join(out).rstrip("\n") + "\n\n"
        i = text.index(LOOP_HEADING, pos)
        j = text.find("\n#", i + len(LOOP_HEADING))
        text = text[:i] + body + (text[j + 1:] if j >= 0 else "")
        pos = i + len(body)
        text = re.sub(r"^\| " + re.escape(label) + r"instructions per latency-loop iteration.*$",
                      lambda _: target_rows(summ)[0], text, count=1, flags=re.M)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--loop":
        splice_loop(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--mlx5-rows":
        print_mlx5(sys.argv[2])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--mlx5":
        write_mlx5(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    text = render(sys.argv[1])
    # Sections measured by hand (between the markers) are kept from the old report.
    begin, end = "<!-- hand-measured: begin -->", "<!-- hand-measured: end -->"
    if os.path.exists(sys.argv[2]):
        old = open(sys.argv[2], encoding="utf-8").read()
        if begin in old and end in old:
            text = text.rstrip("\n") + "\n\n" + old[old.index(begin):old.index(end) + len(end)] + "\n"
    # and any other section this renderer does not write
    text += kept_sections(sys.argv[2], text)
    # with the Targets rows of those sections (scripts/sim-bench.sh's mlx5 rows)
    if os.path.exists(sys.argv[2]):
        old = open(sys.argv[2], encoding="utf-8").read().split("\n")
        text = splice_targets(text, [ln for ln in old if ln.startswith("| mlx5: ")])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


def sections(text):
    """{heading: body} of the `## ` sections of a Markdown text (the heading line included)."""
    out, head = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            head = line.strip()
            out[head] = line
        elif head:
            out[head] += line
    return out


def kept_sections(path, new):
    """The `## ` sections of the report at `path` that this renderer does not write (another
    harness's rows, e.g. mlx5 or huge-page registration, added to BENCHMARKS.md by hand or by
    their own script): kept, after ours, so that a regeneration does not drop them."""
    if not os.path.exists(path):
        return ""
    # ours, and headings earlier versions of this renderer wrote
    ours = set(sections(new)) | {"## Where our instructions go (callgrind, inclusive, per call)",
                                 "## Where our instructions go (callgrind, per call)"}
    old = sections(open(path, encoding="utf-8", errors="replace").read())
    kept = [body.rstrip() + "\n" for head, body in old.items() if head not in ours]
    return "\n" + "\n".join(kept) if kept else ""


if __name__ == "__main__":
    main()
