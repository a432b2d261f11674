#!/usr/bin/env python3
"""Run under the simulator's shim (scripts/sim.sh): two rtnetlink requests in
one send, a link change of the simulated port's netdev (lo, IFF_UP: the shim
diverts it to the daemon) and then RTM_GETLINK of lo, each with NLM_F_ACK,
once by sendto and once by sendmsg with one iovec per request. Both requests
must be answered, in order: the shim must not drop (or reorder) what comes
after a diverted request in the same send. "up" only: were the change to reach
the host's kernel, lo is up already."""
import select
import socket
import struct
import sys

RTM_NEWLINK, RTM_GETLINK = 16, 18
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
IFF_UP = 1
LO = socket.if_nametoindex("lo")


def req(ty, seq, flags, change):
    body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, LO, flags, change)
    return struct.pack("=IHHII", 16 + len(body), ty, NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body


def answers(s, want):
    """(type, seq, error) of each answer, until `want` ACKs came (or 5 s)."""
    got, acks = [], 0
    while acks < want:
        if not select.select([s], [], [], 5)[0]:
            break
        data, at = s.recv(65536), 0
        while at + 16 <= len(data):
            ln, ty, _, seq, _ = struct.unpack_from("=IHHII", data, at)
            err = struct.unpack_from("=i", data, at + 16)[0] if ty == NLMSG_ERROR else None
            got.append((ty, seq, err))
            acks += ty == NLMSG_ERROR
            at += max((ln + 3) & ~3, 16)
    return got


def check(how, first, send):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    s.bind((0, 0))
    a, b = req(RTM_NEWLINK, first, IFF_UP, IFF_UP), req(RTM_GETLINK, first + 1, 0, 0)
    n = send(s, a, b)
    got = answers(s, 2)
    s.close()
    # The change's ACK (error 0), then lo's RTM_NEWLINK and the GETLINK's ACK.
    want = [(NLMSG_ERROR, first, 0), (RTM_NEWLINK, first + 1, None), (NLMSG_ERROR, first + 1, 0)]
    ok = n == len(a) + len(b) and got == want
    print(f"{how}: sent {n} of {len(a) + len(b)}, answers {got}: {'ok' if ok else 'WRONG, want ' + str(want)}")
    return ok


ok = check("sendto", 1, lambda s, a, b: s.sendto(a + b, (0, 0)))
ok &= check("sendmsg", 3, lambda s, a, b: s.sendmsg([a, b], [], 0, (0, 0)))
print("batch ok" if ok else "batch WRONG")
sys.exit(0 if ok else 1)
