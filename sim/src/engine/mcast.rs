//! UD multicast: a datagram whose address vector names a multicast GID
//! reaches every UD QP of the port attached to that group (ATTACH_MCAST,
//! kept in [`crate::model::Qp::mcast`]), each through its own receive queue
//! and Q_Key check, as a ConnectX loops multicast back to the QPs of its
//! own port (mlx5_ib leaves the QP context's `block_lb_mc` clear unless
//! the QP was created with IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK, which
//! keeps a QP's own datagrams from it). A group with no member drops the
//! datagram; the requester completes either way (UD is unreliable).

use super::consts::{cqe_op, ctrl, GRH_LEN};
use super::rdma::{make_grh_from, ud_qkey};
use super::recv::Incoming;
use super::send::Outcome;
use super::wqe::{be32, SendWqe};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::{Qp, QpType};

/// The destination QPN of every multicast packet (IB spec 9.6.1.5: a
/// multicast DGID with another DestQP is dropped by the receivers).
pub const MULTICAST_QPN: u32 = 0xff_ffff;

/// `rdma_is_multicast_addr` (include/rdma/ib_addr.h): an IPv6 multicast
/// GID (ff00::/8) or an IPv4-mapped one in 224.0.0.0/4 (rdma_cm's RoCE v2
/// groups, `cma_iboe_set_mgid`).
pub fn is_multicast_gid(g: &[u8; 16]) -> bool {
    g[0] == 0xff || (g[..10] == [0; 10] && g[10..12] == [0xff, 0xff] && g[12] & 0xf0 == 0xe0)
}

/// Whether a UD address vector (mlx5_wqe_av: rgid at 32) sends to a group.
pub(crate) fn to_group(av: &[u8]) -> bool {
    av.get(32..48).and_then(|g| <&[u8; 16]>::try_from(g).ok()).is_some_and(is_multicast_gid)
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// Delivers one datagram (`data`, already gathered) of `w` to every
    /// member of the group `av` names.
    pub(crate) fn send_to_group(&mut self, qp: &Qp, w: &SendWqe, av: &[u8], data: &[u8], cqe_opcode: u8) -> Outcome {
        let done = Outcome::Done(data.len() as u32);
        if be32(av, 8) & 0xff_ffff != MULTICAST_QPN {
            return done;
        }
        let mut group = [0u8; 16];
        group.copy_from_slice(&av[32..48]);
        // grh_gid_fl: the source GID index in bits 20-27 (libmlx5's
        // mlx5_create_ah); the source address is that GID of the port.
        let sgid_index = (be32(av, 28) >> 20) & 0xff;
        let src = self.dev.gids.get(sgid_index as usize).copied().unwrap_or(group);
        let grh: [u8; GRH_LEN] = make_grh_from(av, &src, data.len());
        let qkey = ud_qkey(qp, av);
        let mut members: Vec<u32> = self
            .dev
            .qps
            .values()
            .filter(|m| m.qp_type == QpType::Ud && m.mcast.iter().any(|(g, _)| *g == group))
            .filter(|m| !(m.qpn == qp.qpn && qp.block_self_mcast_lb))
            .map(|m| m.qpn)
            .collect();
        members.sort_unstable();
        for qpn in members {
            let Some(dst) = self.receiver(qpn, QpType::Ud) else { continue };
            if dst.attrs.qkey != qkey {
                continue;
            }
            let m = Incoming {
                src: qp.qpn,
                data,
                cqe_opcode,
                imm: if cqe_opcode == cqe_op::RESP_SEND { 0 } else { w.imm },
                solicited: w.fm_ce_se & ctrl::SOLICITED != 0,
                grh: Some(grh),
            };
            self.deliver_send(&dst, &m);
        }
        done
    }
}
