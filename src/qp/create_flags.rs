//! `ibv_create_qp_ex`'s creation flags (`enum ibv_qp_create_flags`).
//!
//! They travel in the extended `CREATE_QP` command's `create_flags`
//! (`struct ib_uverbs_ex_create_qp`), whose bits the kernel names
//! `IB_UVERBS_QP_CREATE_*` with the same values. A provider passes the
//! ones its library passes ([`crate::ProviderCaps::qp_create_flags`]: all
//! four on mlx5, none on rxe and siw) and the kernel judges them for the
//! QP type and the device (mlx5_ib: multicast loopback blocking where the
//! device has `block_lb_mc`, end padding where it has `end_pad`, FCS
//! scatter and CVLAN stripping on raw packet QPs only).

bitflags::bitflags! {
    /// `ibv_qp_init_attr_ex.create_flags` (`IBV_QP_CREATE_*`).
    #[doc(alias = "ibv_qp_create_flags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QpCreateFlags: u32 {
        /// `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB`: multicast this QP sends is
        /// not looped back to the QP itself.
        const BLOCK_SELF_MCAST_LB = 1 << 1;
        /// `IBV_QP_CREATE_SCATTER_FCS`: the frame check sequence is
        /// scattered with received packets (raw packet QPs).
        const SCATTER_FCS = 1 << 8;
        /// `IBV_QP_CREATE_CVLAN_STRIPPING`: the customer VLAN tag is
        /// stripped from received packets (raw packet QPs).
        const CVLAN_STRIPPING = 1 << 9;
        /// `IBV_QP_CREATE_PCI_WRITE_END_PADDING`: the device pads the
        /// writes of received data to a cache line.
        const PCI_WRITE_END_PADDING = 1 << 11;
    }
}
