#!/usr/bin/python3
"""Runs rdma-core's pyverbs test suite on one device and records every test's outcome.

Guest side of scripts/pyverbs.sh (runs in the VM, or natively).  The suite is the one Debian's
python3-pyverbs ships in /usr/share/doc/rdma-core/tests (copied and gunzipped by the caller);
which libibverbs.so.1 it runs on is decided by the caller's LD_LIBRARY_PATH.

  pyverbs_run.py --suite DIR --dev rxe0 --gid 1 --out FILE [--map-netdev] [--stall S] [--budget S]
                 [--retry-file RATCHET] [--baseline RDMA_CORE_RESULTS] [--retries N] [--tests IDS]

Results go to FILE, one tab-separated record a line, written as they happen:
  lib   PATH                     the libibverbs the tests' process mapped (/proc/self/maps)
  start ID                       a test began
  result ID OUTCOME DETAIL       pass | fail | error | skip | xfail | upass
  result ID crash|timeout DETAIL the test's process died, or made no progress for --stall s
  result ID notrun DETAIL        never reached (--budget exhausted, or no progress after a crash)
  retry ID OUTCOME DETAIL        a rerun of a test expected to pass that did not: one in the
                                 ratchet (--retry-file) or passing on --baseline; or of a test
                                 --baseline skipped that ours neither passed nor skipped; up to
                                 --retries (2) reruns, each recorded, the last one counts
The tests run in a child process; when it dies or hangs (a crash in the library under test
must not take the other tests with it), the parent records the test in flight and starts a
new child that skips every test already started.

--map-netdev: rxe and siw have no /sys/class/infiniband/<dev>/device/net link, so the suite's
RDMATestCase finds no IP address for them and every rdma_cm test skips ("doesn't have net
interface"); pyverbs has no option for it.  With --map-netdev the child replaces
RDMATestCase._get_ip_mac by one that takes the device's netdev from `rdma -j link show`.
"""
import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import unittest


def clean(s):
    return " ".join(str(s).split())[:200]


# --- child: runs the tests, appends records ----------------------------------------------------

def netdev_of(dev, port):
    try:
        out = subprocess.check_output(["rdma", "-j", "link", "show", f"{dev}/{port}"])
        for link in json.loads(out.decode()):
            if link.get("netdev"):
                return link["netdev"]
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    return None


def patch_netdev(base):
    def _get_ip_mac(self, dev, port, idx):
        ip = mac = None
        ifname = netdev_of(dev, port)
        if ifname:
            try:
                ip, mac = self.get_ip_mac_address(ifname)
            except (KeyError, IndexError, subprocess.CalledProcessError):
                pass
        self.args.append([dev, port, idx, ip, mac])
    base.RDMATestCase._get_ip_mac = _get_ip_mac


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


class Recorder(unittest.TextTestResult):
    """A verbose text result that also appends one record per outcome to the results file."""
    out = None

    def rec(self, *fields):
        self.out.write("\t".join(clean(f) for f in fields) + "\n")
        self.out.flush()

    def startTest(self, test):
        self.rec("start", test.id())
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.rec("result", test.id(), "pass", "")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.rec("result", test.id(), "fail", f"{err[0].__name__}: {err[1]}")

    def addError(self, test, err):
        super().addError(test, err)
        self.rec("result", test.id(), "error", f"{err[0].__name__}: {err[1]}")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.rec("result", test.id(), "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.rec("result", test.id(), "xfail", f"{err[0].__name__}: {err[1]}")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.rec("result", test.id(), "upass", "")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self.rec("result", test.id(), kind, f"{subtest.id()}: {err[0].__name__}: {err[1]}")


def child(a):
    sys.path.insert(0, a.suite)
    sys.argv = ["run_tests.py", "--dev", a.dev, "--gid", str(a.gid), "-v"]
    from args_parser import parser  # the suite's own argument holder
    parser.parse_args()
    spec = importlib.util.spec_from_file_location(
        "tests", os.path.join(a.suite, "__init__.py"), submodule_search_locations=[a.suite])
    tests = importlib.util.module_from_spec(spec)
    sys.modules["tests"] = tests
    spec.loader.exec_module(tests)
    if a.map_netdev:
        patch_netdev(sys.modules["tests.base"])
    skip = set()
    if a.skip:
        with open(a.skip) as f:
            skip = {line.strip() for line in f if line.strip()}
    only = None
    if a.only:
        with open(a.only) as f:
            only = {line.strip() for line in f if line.strip()}
    cases = [t for t in flatten(unittest.TestLoader().loadTestsFromModule(tests))
             if t.id() not in skip and (only is None or t.id() in only)]
    out = open(a.out, "a")
    with open("/proc/self/maps") as m:
        libs = sorted({line.split()[-1] for line in m if "libibverbs.so" in line})
    out.write("lib\t" + " ".join(libs) + "\n")
    out.flush()
    Recorder.out = out
    unittest.TextTestRunner(verbosity=2, resultclass=Recorder, stream=sys.stderr).run(
        unittest.TestSuite(cases))
    out.close()


# --- parent: supervises children ----------------------------------------------------------------

def read_records(path):
    started, results = [], {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = line.rstrip("\n").split("\t")
                if r[0] == "start":
                    started.append(r[1])
                elif r[0] == "result":
                    # the worst outcome wins (a subtest failure, then the test's own result)
                    if results.get(r[1], ("pass",))[0] == "pass" or r[2] not in ("pass", "skip"):
                        results[r[1]] = (r[2], r[3] if len(r) > 3 else "")
    return started, results


def list_ids(a):
    """Every test id of the suite, in order (the suite's own --list-tests)."""
    out = subprocess.run([sys.executable, os.path.join(a.suite, "run_tests.py"), "--dev", a.dev,
                          "--list-tests"], cwd=a.suite, capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.startswith("tests.")]


def supervise(a, out, only=None):
    """Runs children until every test (of `only`, if given) has started; returns the ids."""
    t0 = time.monotonic()
    skipfile = out + ".skip"
    base = [sys.executable, os.path.abspath(__file__), "--child", "--suite", a.suite,
            "--dev", a.dev, "--gid", str(a.gid), "--out", out, "--skip", skipfile]
    if a.map_netdev:
        base.append("--map-netdev")
    if only is not None:
        onlyfile = out + ".only"
        with open(onlyfile, "w") as f:
            f.write("\n".join(only) + "\n")
        base += ["--only", onlyfile]
    log = open(out + ".log", "a")
    while True:
        started, results = read_records(out)
        with open(skipfile, "w") as f:
            f.write("\n".join(started) + "\n")
        if time.monotonic() - t0 > a.budget:
            log.write(f"pyverbs_run: budget of {a.budget}s exhausted\n")
            break
        p = subprocess.Popen(base, stdout=log, stderr=log, start_new_session=True)
        size, last = -1, time.monotonic()
        while p.poll() is None:
            time.sleep(0.5)
            s = os.path.getsize(out) if os.path.exists(out) else 0
            if s != size:
                size, last = s, time.monotonic()
            elif time.monotonic() - last > a.stall:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                break
        stalled = p.returncode == -signal.SIGKILL and time.monotonic() - last > a.stall
        try:
            os.killpg(p.pid, signal.SIGKILL)  # forked helpers of a crashed test
        except ProcessLookupError:
            pass
        now_started, results = read_records(out)
        inflight = [t for t in now_started if t not in results]
        with open(out, "a") as f:
            for t in inflight:
                if stalled:
                    f.write(f"result\t{t}\ttimeout\tno progress for {a.stall}s\n")
                else:
                    f.write(f"result\t{t}\tcrash\tthe test process exited with {p.returncode}\n")
        if p.returncode == 0 or len(now_started) == len(started):
            break  # done, or a child that starts nothing (broken import: see the .log)
    log.close()
    return read_records(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--suite", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--gid", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip")
    ap.add_argument("--only")
    ap.add_argument("--map-netdev", action="store_true")
    ap.add_argument("--stall", type=float, default=120)
    ap.add_argument("--budget", type=float, default=900)
    ap.add_argument("--retry-file")
    ap.add_argument("--baseline", help="results of the same suite on rdma-core's library: "
                    "its passing tests are retried too")
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--tests", help="a file of test ids, one a line: run only these (the rest of the "
                    "suite is left out of the results, not recorded as notrun)")
    a = ap.parse_args()
    a.suite = os.path.abspath(a.suite)
    if a.child:
        return child(a)
    ids = list_ids(a)
    chosen = None
    if a.tests:
        with open(a.tests) as f:
            chosen = [line.strip() for line in f if line.strip() and not line.startswith("#")]
        ids = [t for t in ids if t in set(chosen)]
    started, results = supervise(a, a.out, only=ids if chosen is not None else None)
    with open(a.out, "a") as f:
        f.write(f"total\t{len(ids)}\n")
        for t in ids:
            if t not in results:
                f.write(f"result\t{t}\tnotrun\tnever started\n")
    # Tests expected to pass: the ratchet's for this device, and those that passed in the
    # baseline run (rdma-core's library, same boot). Each one that did not pass is run again,
    # alone, up to --retries times (TCG timing races), and every rerun is recorded.
    want = set()
    if a.retry_file and os.path.exists(a.retry_file):
        with open(a.retry_file) as f:
            want |= {line.split()[1] for line in f
                     if line.strip() and not line.startswith("#") and line.split()[0] == a.dev}
    # Tests the baseline skipped: ours must pass or skip them too (scripts/pyverbs_report.py
    # fails on "skipped on rdma-core, failed on ours"); one that did neither is rerun as well,
    # so that a lost record or a TCG race is not taken for a failure.
    base_skip = set()
    if a.baseline and os.path.exists(a.baseline):
        _, base = read_records(a.baseline)
        want |= {t for t, (o, _) in base.items() if o in ("pass", "xfail")}
        base_skip = {t for t, (o, _) in base.items() if o == "skip"}

    def fine(t, o):
        return o in ("pass", "xfail") or (t in base_skip and t not in want and o == "skip")

    again = [t for t in ids if (t in want or t in base_skip) and not fine(t, results.get(t, ("notrun",))[0])]
    for n in range(a.retries):
        if not again:
            break
        retry_out = f"{a.out}.retry{n + 1}"
        _, rr = supervise(a, retry_out, only=again)
        with open(a.out, "a") as f:
            for t in again:
                o, d = rr.get(t, ("notrun", ""))
                f.write(f"retry\t{t}\t{o}\t{d}\n")
        again = [t for t in again if not fine(t, rr.get(t, ("notrun",))[0])]
    return 0


if __name__ == "__main__":
    sys.exit(main())
