#!/usr/bin/env python3
"""Compares `verbs-devinfo` output with rdma-core's `ibv_devinfo` output, as
tests/device/devinfo.rs does on the VM's devices: every field both print must
be equal, and ours must print at least 90 % of rdma-core's fields.

usage: devinfo_compare.py [--exact] THEIRS.txt OURS.txt   (exit 0: same; 1: differs)
  --exact   the same fields, all equal (as the port-selection test: `-i N` prints few fields)

Fields are keyed by their path: `hca <name>/`, then `port <n>/` for port
fields, then the enclosing heading for indented sub-fields, then the name;
lines of five or more tabs (flag names) are appended to the field above."""
import sys


def parse(text):
    fields = {}
    hca = port = heading = ""
    last = None
    for line in text.splitlines():
        tabs = len(line) - len(line.lstrip("\t"))
        body = line.strip()
        if not body:
            continue
        if tabs >= 5:
            if last is None:
                raise ValueError(f"flag line {line!r} follows no field")
            fields[last] += "|" + body
            continue
        if ":\t" in body:
            name, value = body.split(":\t", 1)
            name, value = name.strip(), value.strip()
        elif body.endswith(":"):
            name, value = body[:-1], ""
        else:
            name, value = body, ""
        if tabs == 0 and name == "hca_id":
            hca, port, heading = value, "", ""
            continue
        if tabs == 2 and name == "port":
            port, heading = f"port {value}", ""
            continue
        base = 3 if port else 1
        if tabs == base:
            heading = name if not value else ""
        key = f"hca {hca}/" + (port + "/" if port else "")
        if tabs > base and heading:
            key += heading + "/"
        key += name
        if key in fields:
            raise ValueError(f"field {key} printed twice")
        fields[key] = value
        last = key
    return fields


def main():
    args = sys.argv[1:]
    exact = args[:1] == ["--exact"]
    if exact:
        args = args[1:]
    theirs = parse(open(args[0]).read())
    ours = parse(open(args[1]).read())
    both = [k for k in theirs if k in ours]
    differ = [f"  {k}: ibv_devinfo {theirs[k]!r}, verbs-devinfo {ours[k]!r}" for k in both if theirs[k] != ours[k]]
    only_theirs = [k for k in theirs if k not in ours]
    only_ours = [k for k in ours if k not in theirs]
    print(f"{len(both)} fields in both; only in ibv_devinfo: {only_theirs}; only in verbs-devinfo: {only_ours}")
    ok = True
    if exact:
        ok = theirs == ours and len(theirs) > 0
    elif len(theirs) <= 40:
        print(f"ibv_devinfo printed only {len(theirs)} fields")
        ok = False
    if differ:
        print("fields that differ:\n" + "\n".join(differ))
        ok = False
    if len(both) * 10 < len(theirs) * 9:
        print(f"only {len(both)} of ibv_devinfo's {len(theirs)} fields printed by verbs-devinfo")
        ok = False
    print("same" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
