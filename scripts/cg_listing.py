#!/usr/bin/env python3
"""Annotated listing of the instructions one measured call executes.

usage: cg_listing.py CALLGRIND_OUT BINARY CALLS [MAX_LINES [WRAPPER]]
       cg_listing.py --inclusive CALLGRIND_OUT NAME    (the inclusive Ir of the functions
                                                        whose name ends with NAME)

CALLGRIND_OUT comes from `valgrind --tool=callgrind --dump-instr=yes
--toggle-collect=<wrapper>` over BINARY (an unstripped executable), so every cost in it
was spent inside one of the CALLS calls of the wrapper; or toggled on several wrappers
with `--separate-callers=N`, and WRAPPER names the one to list (costs whose caller chain
holds it). Prints, per function of BINARY
that ran (other objects -- libc, the vDSO, the kernel -- are summed in one line), each
executed instruction as `objdump -d -l` shows it, prefixed with how many times it ran per
call, and the source line it was compiled from. Used by bench_report.py for the floors of
BENCHMARKS.md; runnable by hand on the raw profiles of scripts/bench.sh.
"""
import collections
import re
import subprocess
import sys


def self_costs(path, inclusive=None):
    """{(object, function): {address: Ir}} of self cost (calls' inclusive costs skipped);
    with `inclusive`, {function: Ir} of self and call costs (what the function cost with
    its callees) instead."""
    names = {"ob": {}, "fn": {}, "fl": {}}
    ob = fn = None
    costs = collections.defaultdict(lambda: collections.defaultdict(int))
    incl = collections.defaultdict(int)
    skip_next = False
    last = 0
    npos = 1
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
            continue
        m = re.match(r"^(c?)(ob|fn|fl|fi|fe)=\((\d+)\)(?: (.*))?$", line)
        if m:
            call, kind, idx, name = m.groups()
            table = names["fl" if kind in ("fi", "fe") else kind]
            if name is not None:
                table[idx] = name
            if not call:
                if kind == "ob":
                    ob = table[idx]
                elif kind == "fn":
                    fn = table[idx]
            continue
        if line.startswith("calls="):
            skip_next = True
            continue
        f = line.split()
        if len(f) <= npos or not re.match(r"^(0x[0-9a-fA-F]+|[+-]\d+|\*|\d+)$", f[0]) or not f[npos].isdigit():
            continue
        pos, ir = f[0], int(f[npos])
        if inclusive is not None:
            incl[fn] += ir
            skip_next = False
            continue
        if npos == 1:
            continue
        if pos.startswith("0x"):
            addr = int(pos, 16)
        elif pos == "*":
            addr = last
        else:
            addr = last + int(pos)
        last = addr
        if skip_next:
            skip_next = False
            continue
        costs[(ob, fn)][addr] += ir
    return incl if inclusive is not None else costs


def disassemble(binary, start, end):
    """objdump -d -l of [start, end): [(address, text, source)]."""
    out = subprocess.run(["objdump", "-d", "-l", "-C", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={end:#x}", binary], capture_output=True, text=True).stdout
    rows, src = [], "?"
    for line in out.splitlines():
        m = re.match(r"^(/\S+|\S+\.rs):(\d+)", line)
        if m:
            src = f"{m.group(1).split('/')[-1]}:{m.group(2)}"
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            rows.append((int(m.group(1), 16), re.sub(r"\s+", " ", m.group(2)).strip(), src))
    return rows


def symbols(binary):
    """{demangled name: [(address, size)]} of the binary's functions (a generic function's
    instances share their demangled name)."""
    out = subprocess.run(["nm", "-C", "-S", "--defined-only", binary], capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split(maxsplit=3)
        if len(f) == 4 and f[2] in "tTwW":
            syms.setdefault(f[3], []).append((int(f[0], 16), int(f[1], 16)))
    return syms


def pick(cands, addrs):
    """The instance of `cands` that holds every executed address of `addrs` as they are (a
    shared object's profile gives its own addresses), else the first (an executable mapped
    elsewhere: its entry is then the lowest executed address)."""
    lo, hi = min(addrs), max(addrs)
    return next((c for c in cands if c[0] <= lo and hi < c[0] + c[1]), cands[0])


def base_name(fn):
    """A function's name without callgrind's caller chain (`--separate-callers`: f'g'h) and
    without the Rust symbol hash."""
    return re.sub(r"::h[0-9a-f]{16}$", "", (fn or "?").split("'")[0])


def within(fn, op):
    """Whether the cost of `fn` (with its caller chain) was spent inside wrapper `op`."""
    return any(re.sub(r"::h[0-9a-f]{16}$", "", f).split("::")[-1] == op for f in (fn or "").split("'"))


def listing(cg, binary, calls, max_lines=400, op=None):
    costs = self_costs(cg)
    if op is not None:
        costs = {k: v for k, v in costs.items() if within(k[1], op)}
    syms = symbols(binary)
    total = sum(sum(a.values()) for a in costs.values())
    out = [f"{total / calls:.1f} instructions per call in all"]
    other = 0
    lines = 0
    for (ob, fn), by_addr in sorted(costs.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(by_addr.values())
        name = base_name(fn)
        cands = syms.get(name) or next((v for k, v in syms.items() if re.sub(r"::h[0-9a-f]{16}$", "", k) == name), None)
        sym = pick(cands, by_addr) if cands else None
        if not ob or not ob.endswith(binary.split("/")[-1]) or sym is None:
            other += n
            continue
        # valgrind maps the executable at its own base: the function's lowest executed
        # address is its entry (every call enters there), which gives the offset
        base = min(by_addr) - sym[0]
        rows = disassemble(binary, sym[0], sym[0] + sym[1])
        out.append(f"\n{name}: {n / calls:.1f} per call")
        for addr, text, src in rows:
            ran = by_addr.get(addr + base, 0)
            if ran == 0:
                continue
            if lines >= max_lines:
                out.append("  ...")
                break
            out.append(f"  {ran / calls:6.2f}  {addr:6x}  {text:<48} {src}")
            lines += 1
    if other:
        out.append(f"\noutside the binary (libc, vDSO, system call entry): {other / calls:.1f} per call")
    return "\n".join(out)


def inclusive(cg, name):
    """The inclusive Ir of the functions whose (hash-less) name ends with `name`."""
    return sum(ir for fn, ir in self_costs(cg, inclusive=True).items() if base_name(fn).split("::")[-1] == name)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--inclusive":
        print(inclusive(sys.argv[2], sys.argv[3]))
        sys.exit(0)
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    print(listing(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 400,
                  sys.argv[5] if len(sys.argv) > 5 else None))
