//! Multicast: `ibv_attach_mcast` / `ibv_detach_mcast` on UD queue pairs.
//!
//! Only UD QPs can join multicast groups, so the methods exist only on
//! [`QueuePair<'_, Ud, S>`](crate::QueuePair); on other transports they do
//! not compile (`tests/ui/fail_mcast_on_rc.rs`). siw has no UD QPs (its `ibv_create_qp` of a UD QP is
//! already `Unsupported`), so multicast is out of reach there too.
//!
//! On RoCE a group is named by a multicast GID (`ff…`; IPv4 groups are
//! IPv4-mapped, e.g. `::ffff:224.0.1.1` becomes `ff0e::ffff:e000:101`) and
//! the LID is ignored (0).

use zerocopy::FromZeros;

use crate::abi::uverbs::{AttachMcast, DetachMcast};
use crate::error::{Error, ErrorKind, Result};
use crate::qp::{QpState, QueuePair, Ud};

/// Whether `gid` is a multicast GID, the only kind the kernel accepts for
/// attach/detach (`rdma_is_multicast_addr`): an IPv6 multicast address
/// (first byte `0xff`), or an IPv4-mapped IPv4 multicast address
/// (`::ffff:224.0.0.0/4`), which is what RoCE v2 over IPv4 uses: rxe turns
/// the GID into the packet's IP destination, and only the mapped form
/// gives an IPv4 one.
pub fn is_multicast_gid(gid: &[u8; 16]) -> bool {
    let v4_mapped = gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff;
    gid[0] == 0xff || (v4_mapped && gid[12] & 0xf0 == 0xe0)
}

impl<S: QpState> QueuePair<'_, Ud, S> {
    /// `ibv_attach_mcast`: makes this UD QP receive the datagrams sent to
    /// the group `gid` (LID `lid`, 0 on RoCE). A `gid` that is not a
    /// multicast GID is `InvalidArgument` (checked before the kernel, which
    /// refuses it the same way).
    #[doc(alias = "ibv_attach_mcast")]
    pub fn attach_mcast(&self, gid: &[u8; 16], lid: u16) -> Result<()> {
        const VERB: &str = "ibv_attach_mcast";
        if !is_multicast_gid(gid) {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        let mut cmd = AttachMcast::new_zeroed();
        cmd.gid = *gid;
        cmd.qp_handle = self.handle();
        cmd.mlid = lid;
        self.pd().context().channel().exec(VERB, &cmd, &[], &mut [])
    }

    /// `ibv_detach_mcast`: leaves the group joined with
    /// [`attach_mcast`](Self::attach_mcast). Leaving a group the QP is not
    /// in is refused by the kernel (`InvalidArgument`).
    #[doc(alias = "ibv_detach_mcast")]
    pub fn detach_mcast(&self, gid: &[u8; 16], lid: u16) -> Result<()> {
        const VERB: &str = "ibv_detach_mcast";
        if !is_multicast_gid(gid) {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        let mut cmd = DetachMcast::new_zeroed();
        cmd.gid = *gid;
        cmd.qp_handle = self.handle();
        cmd.mlid = lid;
        self.pd().context().channel().exec(VERB, &cmd, &[], &mut [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_gid_prefix() {
        let mut g = [0u8; 16];
        assert!(!is_multicast_gid(&g));
        g[0] = 0xff;
        assert!(is_multicast_gid(&g));
        g[0] = 0xfe;
        assert!(
            !is_multicast_gid(&g),
            "link-local unicast fe80:: is not multicast"
        );
    }
}
