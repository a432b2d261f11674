#!/usr/bin/env python3
"""Totals and the ratchet for scripts/pyverbs.sh.

  pyverbs_report.py OUTDIR RATCHET DEV... [--update] [--subset] [--known FILE] [--skip-known FILE]

Reads OUTDIR/{rdma-core,ours}-DEV.tsv (scripts/pyverbs_run.py records) and prints, per device,
passed/failed/errors/skipped on rdma-core's libibverbs and on ours side by side, then every test
that passes on rdma-core but not on ours (the gap), and the tests that pass only on ours.

The ratchet (RATCHET: lines "DEV TEST_ID") lists the tests that passed on ours before.  Exit 1
if one of them does not pass now (a regression), if a test that passes on rdma-core's library in
the same boot does not pass on ours and is not in pyverbs-known-gap.txt next to the ratchet
(lines "DEV TEST_ID REASON"), if a run is missing, or if rdma-core's own library passed nothing on
a device (a broken environment, not a result), or if a test that rdma-core's library SKIPS
fails or errors on ours (it crashes, hangs, fails or errors, also on its reruns) and is not in
pyverbs-skip-gap.txt next to the ratchet (lines "DEV TEST_ID REASON": the iWARP cases where the
suite itself moves a QP to RTS without rdma_cm, which errors on rdma-core's library too in the
tests it runs).  A test that fails and then passes on a rerun
(scripts/pyverbs_run.py reruns each expected pass that failed, up to twice) counts as passing and
is listed as flaky.  New passes are listed;
--update rewrites RATCHET with the tests passing on ours now (regressions drop out of it only
this way, on purpose).  RATCHET "-": no ratchet (scripts/sim.sh --capi, where the gate is the
rdma-core run on the same simulated device).  --known / --skip-known name the two lists of
reasons instead of the files next to the ratchet.
"""
import os
import sys

LIBS = ("rdma-core", "ours")
# outcome -> column: crash/timeout/notrun/upass count as errors, xfail as passed (unittest's view)
COLUMN = {"pass": "passed", "xfail": "passed", "fail": "failed", "error": "errors",
          "upass": "errors", "crash": "errors", "timeout": "errors", "notrun": "errors",
          "skip": "skipped"}


def load(path):
    """{id: (outcome, detail)}, {id: (retry outcome, detail)}, mapped libs, total."""
    res, retry, libs, total = {}, {}, "", None
    with open(path) as f:
        for line in f:
            r = line.rstrip("\n").split("\t")
            d = r[3] if len(r) > 3 else ""
            if r[0] == "result":
                if res.get(r[1], ("pass",))[0] == "pass" or r[2] not in ("pass", "skip"):
                    res[r[1]] = (r[2], d)
            elif r[0] == "retry":
                retry[r[1]] = (r[2], d)
            elif r[0] == "lib" and not libs:
                libs = r[1] if len(r) > 1 else ""
            elif r[0] == "total":
                total = int(r[1])
    return res, retry, libs, total


def read_reasons(path):
    """{(dev, test id): reason} from lines "DEV TEST_ID REASON..." (# comments)."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    d, t, why = (line.rstrip("\n").split(None, 2) + [""])[:3]
                    out[(d, t)] = why
    return out


# Outcomes of ours that count as "fails or errors" for a test rdma-core's library skipped.
SKIP_FAILS = ("fail", "error", "upass", "crash", "timeout")


def counts(res):
    c = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for o, _ in res.values():
        c[COLUMN.get(o, "errors")] += 1
    return c


def short(t):
    return t[len("tests."):] if t.startswith("tests.") else t


def main(argv):
    update = "--update" in argv
    # --subset: a run of chosen tests (pyverbs.sh --tests), not the whole suite
    subset = "--subset" in argv
    argv = [a for a in argv if a not in ("--update", "--subset")]
    paths = {}
    for opt in ("--known", "--skip-known"):
        if opt in argv:
            i = argv.index(opt)
            paths[opt] = argv[i + 1]
            del argv[i:i + 2]
    outdir, ratchet_path, devs = argv[0], argv[1], argv[2:]
    use_ratchet = ratchet_path != "-"
    if not use_ratchet:
        ratchet_path = os.path.join(outdir, "no-ratchet")
        update = False
    known_path = paths.get("--known", os.path.join(os.path.dirname(ratchet_path), "pyverbs-known-gap.txt"))
    ratchet = set()
    if use_ratchet and os.path.exists(ratchet_path):
        with open(ratchet_path) as f:
            ratchet = {tuple(line.split()[:2]) for line in f if line.strip() and not line.startswith("#")}
    # Tests that pass on rdma-core's library and are known not to on ours, each with the reason
    # ("DEV TEST_ID REASON..."); any other such test fails the run.
    known = read_reasons(known_path)
    # Tests rdma-core's library skips that are known to fail on ours, each with the reason.
    skip_known_path = paths.get("--skip-known", os.path.join(os.path.dirname(ratchet_path), "pyverbs-skip-gap.txt"))
    skip_known = read_reasons(skip_known_path)
    bad, runs, behind, known_gap, flaky = [], {}, [], [], []
    skip_fails, skip_known_hit = [], []
    for dev in devs:
        for lib in LIBS:
            p = os.path.join(outdir, f"{lib}-{dev}.tsv")
            if not os.path.exists(p):
                bad.append(f"no results for {dev} on {lib} ({p})")
                runs[(lib, dev)] = ({}, {}, "", None)
            else:
                runs[(lib, dev)] = load(p)

    print("pyverbs suite (rdma-core's tests, /usr/share/doc/rdma-core/tests), per device:")
    print(f"  {'device':<7} {'library':<10} {'tests':>5} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7}  libibverbs mapped")
    for dev in devs:
        for lib in LIBS:
            res, _, libs, total = runs[(lib, dev)]
            c = counts(res)
            print(f"  {dev:<7} {lib:<10} {len(res):>5} {c['passed']:>6} {c['failed']:>6} {c['errors']:>6} {c['skipped']:>7}  {libs or '?'}")
    now_pass, regressions = set(), []
    for dev in devs:
        base, _, _, _ = runs[("rdma-core", dev)]
        ours, retry, libs, _ = runs[("ours", dev)]
        if base and counts(base)["passed"] == 0 and not subset:
            bad.append(f"rdma-core's library passed no test on {dev}: the environment is broken")
        if ours and "/usr/lib" in libs:
            bad.append(f"the run 'ours' on {dev} mapped {libs}, not our library")
        ok = lambda r, t: r.get(t, ("notrun",))[0] in ("pass", "xfail")
        # ours passes a test if it passed, or if its last rerun passed (a TCG timing race)
        ours_ok = lambda t: ok(ours, t) or ok(retry, t)
        gap = [t for t in base if ok(base, t) and not ours_ok(t)]
        for t in base:
            if ok(base, t) and not ok(ours, t) and ok(retry, t) and (dev, t) not in ratchet:
                flaky.append(f"{dev} {t}: {ours.get(t, ('notrun', ''))[0]}, passed on a rerun")
        for t in gap:
            if (dev, t) in known:
                known_gap.append(f"{dev} {short(t)}: {known[(dev, t)]}")
            elif (dev, t) not in ratchet:  # a ratchet test is reported as a regression below
                behind.append(f"{dev} {t}: {ours.get(t, ('notrun', ''))[0]} {ours.get(t, ('', ''))[1][:100]}")
        # Skipped on rdma-core, failed on ours: a verb we claim must pass the tests that use it
        # (or refuse as the kernel refuses, which the suite then skips). The last rerun counts.
        for t in base:
            if base[t][0] != "skip":
                continue
            o, d = retry.get(t, ours.get(t, ("notrun", "")))
            if o not in SKIP_FAILS:
                continue
            if (dev, t) in skip_known:
                skip_known_hit.append(f"{dev} {short(t)}: {skip_known[(dev, t)]}")
            else:
                skip_fails.append(f"{dev} {t}: {o} {d[:100]} (rdma-core: skip {base[t][1][:60]})")
        extra = [t for t in ours if ok(ours, t) and not ok(base, t)]
        print(f"\n{dev}: {len(gap)} tests pass on rdma-core but not on ours:")
        for t in gap:
            o, d = ours.get(t, ("notrun", ""))
            print(f"  {short(t):<70} {o:<7} {d[:110]}")
        if extra:
            print(f"{dev}: {len(extra)} tests pass on ours but not on rdma-core:")
            for t in extra:
                o, d = base.get(t, ("notrun", ""))
                print(f"  {short(t):<70} (rdma-core: {o} {d[:80]})")
        for t in ours:
            if ours_ok(t):
                now_pass.add((dev, t))
        for d2, t in sorted(ratchet):
            # (a run of chosen tests, pyverbs.sh --tests, has no record of the others)
            if d2 != dev or ok(ours, t) or (t not in ours and t not in base):
                continue
            if ok(retry, t):
                flaky.append(f"{dev} {t}: {ours.get(t, ('notrun', ''))[0]}, passed on a rerun")
            else:
                o, d = ours.get(t, ("notrun", ""))
                regressions.append(f"{dev} {t}: {o} {d[:100]}")
    new = sorted(p for p in now_pass - ratchet if p[0] in devs)
    print()
    if known_gap:
        print(f"pyverbs: {len(known_gap)} tests pass on rdma-core but not on ours, for known reasons "
              f"({os.path.basename(known_path)}):")
        for k in known_gap:
            print(f"  {k}")
    if flaky:
        print(f"pyverbs: {len(flaky)} tests failed and then passed on a rerun (flaky under TCG):")
        for f in flaky:
            print(f"  {f}")
    if new and use_ratchet:
        print(f"pyverbs: {len(new)} tests pass on ours that are not in the ratchet "
              f"({'added' if update else 'scripts/pyverbs.sh --update-ratchet adds them'}):")
        for d, t in new:
            print(f"  {d} {short(t)}")
    if update:
        keep = {p for p in ratchet if p[0] not in devs}
        with open(ratchet_path, "w") as f:
            f.write("# tests of rdma-core's pyverbs suite that pass on our libibverbs.so.1\n"
                    "# (scripts/pyverbs.sh fails if one stops passing; --update-ratchet rewrites this)\n")
            for d, t in sorted(keep | now_pass):
                f.write(f"{d} {t}\n")
        print(f"pyverbs: ratchet {ratchet_path} rewritten: {len(keep | now_pass)} tests")
    if skip_known_hit:
        print(f"pyverbs: {len(skip_known_hit)} tests rdma-core skips fail on ours for known reasons "
              f"({os.path.basename(skip_known_path)}):")
        for k in skip_known_hit:
            print(f"  {k}")
    for r in regressions:
        print(f"REGRESSION: {r}")
    for r in skip_fails:
        print(f"SKIPPED ON RDMA-CORE, FAILS ON OURS: {r}")
    for r in behind:
        print(f"BEHIND RDMA-CORE: {r}")
    for b in bad:
        print(f"ERROR: {b}")
    ratchet_line = f"{len(ratchet & now_pass)}/{len(ratchet)} ratchet tests pass" if use_ratchet else "no ratchet"
    totals = ", ".join(
        f"{dev} {counts(runs[('ours', dev)][0])['passed']}/{counts(runs[('rdma-core', dev)][0])['passed']}"
        for dev in devs)
    failed = regressions or behind or bad or skip_fails
    status = "FAILED" if failed else "OK"
    print(f"pyverbs: {status}: passed on ours/rdma-core: {totals}; {ratchet_line}; "
          f"{len(regressions)} regressions, {len(behind)} tests passing only on rdma-core "
          f"({len(known_gap)} known), {len(skip_fails)} tests skipped on rdma-core failing on ours "
          f"({len(skip_known_hit)} known)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
