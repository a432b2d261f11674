#!/usr/bin/python3
# The simulated ConnectX's port taken down and up under connected QPs, judged by rdma-core's
# libibverbs + libmlx5 (pyverbs; run under the shim by scripts/sim.sh, row "port down").
#
# While the port's netdev is down no packet leaves or arrives: an RC send that was posted to a
# connected QP ends, after the QP's retry count of ACK timeouts, in a "transport retry counter
# exceeded" completion (IBV_WC_RETRY_EXC_ERR) and moves the QP to ERR; the responder receives
# nothing. A UD send completes at the sender (the datagram is lost) and is not received. Once
# the netdev is up again, traffic flows: a new RC pair and the same UD pair deliver.
# `ip link set dev lo down|up` reaches the simulator through the shim (LD_PRELOAD, inherited by
# the `ip` child), never the host's kernel. The port's state follows in QUERY_PORT and in the
# simulator's sysfs tree (SYSFS_PATH: `ports/1/state`, `phys_state`). Prints PASS on success; any other outcome raises.
import os
import subprocess
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

DEV, PORT, GID = (sys.argv[1] if len(sys.argv) > 1 else "mlx5_0"), 1, 3
QKEY = 0x11111111
GRH = 40


def ip_link(state):
    subprocess.run(["ip", "link", "set", "dev", "lo", state], check=True)


def port_state(ctx):
    return ctx.query_port(PORT).state


def sysfs_state():
    """Port 1's (state, phys_state) in the simulator's sysfs tree (SYSFS_PATH), as the kernel's."""
    port = os.path.join(os.environ["SYSFS_PATH"], "class/infiniband", DEV, "ports", str(PORT))
    return tuple(open(os.path.join(port, f)).read().strip() for f in ("state", "phys_state"))


def poll(cq, seconds):
    """The completions of `cq` within `seconds` (at least one, or [] when none came)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        n, wcs = cq.poll(4)
        if n:
            return wcs
        time.sleep(0.001)
    return []


class Side:
    def __init__(self, ctx, pd, qp_type):
        self.cq = CQ(ctx, 16, None, None, 0)
        self.mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        # with a QPAttr, pyverbs takes an RC QP to INIT and a UD QP all the way to RTS
        attr = QPAttr(port_num=PORT)
        attr.qkey = QKEY
        self.qp = QP(pd, QPInitAttr(qp_type=qp_type, scq=self.cq, rcq=self.cq, cap=cap), attr)

    def recv(self, length):
        self.qp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(self.mr.buf, length, self.mr.lkey)]), None)

    def send_wr(self, text):
        self.mr.write(text, len(text), 2048)
        return SendWR(wr_id=9, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(self.mr.buf + 2048, len(text), self.mr.lkey)])


def rc_pair(ctx, pd):
    a, b = Side(ctx, pd, e.IBV_QPT_RC), Side(ctx, pd, e.IBV_QPT_RC)
    gr = GlobalRoute(dgid=ctx.query_gid(PORT, GID), sgid_index=GID)
    for me, peer in ((a, b), (b, a)):
        attr = QPAttr(port_num=PORT)
        attr.path_mtu = e.IBV_MTU_1024
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.rnr_retry = 7
        attr.timeout = 14  # 4.096 us * 2^14: 67 ms per attempt
        attr.retry_cnt = 2  # three attempts: the error comes after ~0.2 s
        attr.ah_attr = AHAttr(port_num=PORT, is_global=1, gr=gr)
        attr.dest_qp_num = peer.qp.qp_num
        attr.rq_psn = attr.sq_psn = 0
        me.qp.to_rts(attr)
    return a, b


def ud_pair(ctx, pd):
    a, b = Side(ctx, pd, e.IBV_QPT_UD), Side(ctx, pd, e.IBV_QPT_UD)
    gr = GlobalRoute(dgid=ctx.query_gid(PORT, GID), sgid_index=GID)
    ah = AH(pd, attr=AHAttr(port_num=PORT, is_global=1, gr=gr))
    return a, b, ah


def ud_send(a, b, ah, text):
    wr = a.send_wr(text)
    wr.set_wr_ud(ah, b.qp.qp_num, QKEY)
    a.qp.post_send(wr, None)


def main():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    assert port_state(ctx) == e.IBV_PORT_ACTIVE, "the port must start ACTIVE"
    assert sysfs_state() == ("4: ACTIVE", "5: LinkUp"), sysfs_state()
    # connected while up
    a, b = rc_pair(ctx, pd)
    ua, ub, ah = ud_pair(ctx, pd)
    b.recv(64)
    ub.recv(64 + GRH)
    ip_link("down")
    try:
        assert port_state(ctx) == e.IBV_PORT_DOWN, f"port state {port_state(ctx)} while down"
        assert sysfs_state() == ("1: DOWN", "3: Disabled"), f"sysfs while down: {sysfs_state()}"
        t0 = time.monotonic()
        a.qp.post_send(a.send_wr(b"lost on the way"), None)
        wcs = poll(a.cq, 20)
        took = time.monotonic() - t0
        assert len(wcs) == 1 and wcs[0].status == e.IBV_WC_RETRY_EXC_ERR, \
            f"RC send with the port down: {[(w.wr_id, w.status) for w in wcs]}, want one RETRY_EXC_ERR (12)"
        assert wcs[0].wr_id == 9
        # three attempts of one 67 ms timeout each, whatever the host's load adds
        assert took >= 0.15, f"retry exceeded after {took:.3f} s: before the QP's retries ran out"
        assert a.qp.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR, "the requester is in ERR"
        ud_send(ua, ub, ah, b"datagram lost")
        wcs = poll(ua.cq, 10)
        assert len(wcs) == 1 and wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].opcode == e.IBV_WC_SEND, \
            f"UD send with the port down: {[(w.wr_id, w.status, w.opcode) for w in wcs]}, want one SEND success"
        assert poll(b.cq, 0.3) == [] and poll(ub.cq, 0.3) == [], "something was received with the port down"
    finally:
        ip_link("up")
    assert port_state(ctx) == e.IBV_PORT_ACTIVE, f"port state {port_state(ctx)} after up"
    assert sysfs_state() == ("4: ACTIVE", "5: LinkUp"), f"sysfs after up: {sysfs_state()}"
    # up again: a new RC pair delivers, and the UD receive still posted takes the next datagram
    c, d = rc_pair(ctx, pd)
    d.recv(64)
    c.qp.post_send(c.send_wr(b"flows again"), None)
    wcs = poll(c.cq, 10)
    assert [(w.wr_id, w.status) for w in wcs] == [(9, e.IBV_WC_SUCCESS)], f"RC send after up: {wcs}"
    wcs = poll(d.cq, 10)
    assert [(w.status, w.opcode, w.byte_len) for w in wcs] == [(e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 11)]
    assert d.mr.read(11, 0) == b"flows again"
    ud_send(ua, ub, ah, b"datagram here")
    assert [w.status for w in poll(ua.cq, 10)] == [e.IBV_WC_SUCCESS]
    wcs = poll(ub.cq, 10)
    assert [(w.status, w.byte_len) for w in wcs] == [(e.IBV_WC_SUCCESS, 13 + GRH)], f"UD receive after up: {wcs}"
    assert ub.mr.read(13, GRH) == b"datagram here"
    assert poll(b.cq, 0.1) == [], "the receive posted before the port went down stays unused"
    print("PASS")


if __name__ == "__main__":
    main()
