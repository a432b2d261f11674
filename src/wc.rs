//! Work completions (`struct ibv_wc`).
//!
//! [`Wc`] has the exact layout of `struct ibv_wc` (which is also the
//! kernel's `struct ib_uverbs_wc` that rxe writes into its completion
//! ring), so polling is a copy of 48 bytes per completion, and arrays of
//! `Wc` can be handed to code that expects `ibv_wc`.

use core::fmt;

use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::abi::uverbs::Wc as AbiWc;

/// A work completion (`struct ibv_wc`).
#[doc(alias = "ibv_wc")]
#[derive(Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(transparent)]
pub struct Wc(AbiWc);

static_assertions::assert_eq_size!(Wc, [u8; 48]);

impl Default for Wc {
    fn default() -> Self {
        Self::ZERO
    }
}

/// `enum ibv_wc_status`.
#[doc(alias = "ibv_wc_status")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcStatus {
    /// `IBV_WC_SUCCESS`.
    Success,
    /// `IBV_WC_LOC_LEN_ERR`.
    LocLenErr,
    /// `IBV_WC_LOC_QP_OP_ERR`.
    LocQpOpErr,
    /// `IBV_WC_LOC_EEC_OP_ERR`.
    LocEecOpErr,
    /// `IBV_WC_LOC_PROT_ERR`.
    LocProtErr,
    /// `IBV_WC_WR_FLUSH_ERR`: the QP went to the error state.
    WrFlushErr,
    /// `IBV_WC_MW_BIND_ERR`.
    MwBindErr,
    /// `IBV_WC_BAD_RESP_ERR`.
    BadRespErr,
    /// `IBV_WC_LOC_ACCESS_ERR`.
    LocAccessErr,
    /// `IBV_WC_REM_INV_REQ_ERR`.
    RemInvReqErr,
    /// `IBV_WC_REM_ACCESS_ERR`.
    RemAccessErr,
    /// `IBV_WC_REM_OP_ERR`.
    RemOpErr,
    /// `IBV_WC_RETRY_EXC_ERR`.
    RetryExcErr,
    /// `IBV_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr,
    /// `IBV_WC_LOC_RDD_VIOL_ERR`.
    LocRddViolErr,
    /// `IBV_WC_REM_INV_RD_REQ_ERR`.
    RemInvRdReqErr,
    /// `IBV_WC_REM_ABORT_ERR`.
    RemAbortErr,
    /// `IBV_WC_INV_EECN_ERR`.
    InvEecnErr,
    /// `IBV_WC_INV_EEC_STATE_ERR`.
    InvEecStateErr,
    /// `IBV_WC_FATAL_ERR`.
    FatalErr,
    /// `IBV_WC_RESP_TIMEOUT_ERR`.
    RespTimeoutErr,
    /// `IBV_WC_GENERAL_ERR`.
    GeneralErr,
    /// `IBV_WC_TM_ERR`.
    TmErr,
    /// `IBV_WC_TM_RNDV_INCOMPLETE`.
    TmRndvIncomplete,
    /// A value this library does not know.
    Other(u32),
}

impl WcStatus {
    /// From the raw `enum ibv_wc_status` value.
    pub const fn from_raw(v: u32) -> Self {
        use WcStatus::*;
        const ALL: [WcStatus; 24] = [
            Success, LocLenErr, LocQpOpErr, LocEecOpErr, LocProtErr, WrFlushErr, MwBindErr,
            BadRespErr, LocAccessErr, RemInvReqErr, RemAccessErr, RemOpErr, RetryExcErr,
            RnrRetryExcErr, LocRddViolErr, RemInvRdReqErr, RemAbortErr, InvEecnErr,
            InvEecStateErr, FatalErr, RespTimeoutErr, GeneralErr, TmErr, TmRndvIncomplete,
        ];
        if (v as usize) < ALL.len() {
            ALL[v as usize]
        } else {
            Other(v)
        }
    }

    /// Whether this is `IBV_WC_SUCCESS`.
    pub const fn is_success(self) -> bool {
        matches!(self, WcStatus::Success)
    }
}

/// `enum ibv_wc_opcode`: what completed.
#[doc(alias = "ibv_wc_opcode")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcOpcode {
    /// `IBV_WC_SEND`.
    Send,
    /// `IBV_WC_RDMA_WRITE`.
    RdmaWrite,
    /// `IBV_WC_RDMA_READ`.
    RdmaRead,
    /// `IBV_WC_COMP_SWAP`.
    CompSwap,
    /// `IBV_WC_FETCH_ADD`.
    FetchAdd,
    /// `IBV_WC_BIND_MW`.
    BindMw,
    /// `IBV_WC_LOCAL_INV`.
    LocalInv,
    /// `IBV_WC_TSO`.
    Tso,
    /// `IBV_WC_ATOMIC_WRITE` (Linux 6.2+).
    AtomicWrite,
    /// `IBV_WC_RECV`: a receive consumed by a SEND.
    Recv,
    /// `IBV_WC_RECV_RDMA_WITH_IMM`: a receive consumed by an RDMA WRITE
    /// with immediate.
    RecvRdmaWithImm,
    /// A value this library does not know.
    Other(u32),
}

impl WcOpcode {
    /// From the raw `enum ibv_wc_opcode` value.
    pub const fn from_raw(v: u32) -> Self {
        match v {
            0 => Self::Send,
            1 => Self::RdmaWrite,
            2 => Self::RdmaRead,
            3 => Self::CompSwap,
            4 => Self::FetchAdd,
            5 => Self::BindMw,
            6 => Self::LocalInv,
            7 => Self::Tso,
            9 => Self::AtomicWrite,
            128 => Self::Recv,
            129 => Self::RecvRdmaWithImm,
            v => Self::Other(v),
        }
    }
}

bitflags! {
    /// `enum ibv_wc_flags`.
    #[doc(alias = "ibv_wc_flags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct WcFlags: u32 {
        /// `IBV_WC_GRH`: the first 40 bytes of the receive buffer hold the
        /// GRH (UD).
        const GRH = 1 << 0;
        /// `IBV_WC_WITH_IMM`: immediate data is valid.
        const WITH_IMM = 1 << 1;
        /// `IBV_WC_IP_CSUM_OK`.
        const IP_CSUM_OK = 1 << 2;
        /// `IBV_WC_WITH_INV`: an rkey was invalidated.
        const WITH_INV = 1 << 3;
        /// `IBV_WC_TM_SYNC_REQ`.
        const TM_SYNC_REQ = 1 << 4;
        /// `IBV_WC_TM_MATCH`.
        const TM_MATCH = 1 << 5;
        /// `IBV_WC_TM_DATA_VALID`.
        const TM_DATA_VALID = 1 << 6;
    }
}

impl Wc {
    /// An all-zero completion, to fill arrays with before polling.
    pub const ZERO: Wc = Wc(AbiWc {
        wr_id: 0,
        status: 0,
        opcode: 0,
        vendor_err: 0,
        byte_len: 0,
        ex: 0,
        qp_num: 0,
        src_qp: 0,
        wc_flags: 0,
        pkey_index: 0,
        slid: 0,
        sl: 0,
        dlid_path_bits: 0,
        port_num: 0,
        reserved: 0,
    });

    /// An all-zero completion ([`Wc::ZERO`]; also `Wc::default()`), to
    /// fill arrays with before polling: `[Wc::zeroed(); 16]`.
    pub const fn zeroed() -> Wc {
        Wc::ZERO
    }

    /// Wraps the kernel's record.
    pub const fn from_abi(wc: AbiWc) -> Self {
        Self(wc)
    }

    /// The same, borrowed: `Wc` is a transparent wrapper.
    #[inline(always)]
    pub fn from_abi_ref(wc: &AbiWc) -> &Self {
        zerocopy::transmute_ref!(wc)
    }

    /// The kernel's record.
    pub const fn as_abi(&self) -> &AbiWc {
        &self.0
    }

    /// The kernel's record, for a provider that puts right what its kernel
    /// driver reports differently.
    #[cfg_attr(not(feature = "rxe"), allow(dead_code))]
    pub(crate) fn as_abi_mut(&mut self) -> &mut AbiWc {
        &mut self.0
    }

    /// The `wr_id` of the work request that completed.
    pub const fn wr_id(&self) -> u64 {
        self.0.wr_id
    }

    /// The status.
    pub const fn status(&self) -> WcStatus {
        WcStatus::from_raw(self.0.status)
    }

    /// The raw status (for [`crate::strings::wc_status_str`]).
    pub const fn status_raw(&self) -> u32 {
        self.0.status
    }

    /// Whether the request succeeded.
    pub const fn is_success(&self) -> bool {
        self.0.status == 0
    }

    /// What completed. Only meaningful on success (as in C).
    pub const fn opcode(&self) -> WcOpcode {
        WcOpcode::from_raw(self.0.opcode)
    }

    /// Vendor error syndrome.
    pub const fn vendor_err(&self) -> u32 {
        self.0.vendor_err
    }

    /// Bytes transferred (receives, RDMA READ, atomics).
    pub const fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// The immediate data in host order, if the completion carries one
    /// (`IBV_WC_WITH_IMM`; C's `ntohl(wc.imm_data)`).
    pub const fn imm_data(&self) -> Option<u32> {
        if self.0.wc_flags & WcFlags::WITH_IMM.bits() != 0 {
            Some(u32::from_be(self.0.ex))
        } else {
            None
        }
    }

    /// The rkey the sender invalidated (`IBV_WC_WITH_INV`).
    pub const fn invalidated_rkey(&self) -> Option<u32> {
        if self.0.wc_flags & WcFlags::WITH_INV.bits() != 0 {
            Some(self.0.ex)
        } else {
            None
        }
    }

    /// The local QP number.
    pub const fn qp_num(&self) -> u32 {
        self.0.qp_num
    }

    /// The remote QP number (UD).
    pub const fn src_qp(&self) -> u32 {
        self.0.src_qp
    }

    /// The flags.
    pub const fn wc_flags(&self) -> WcFlags {
        WcFlags::from_bits_retain(self.0.wc_flags)
    }

    /// P_Key index (GSI QPs).
    pub const fn pkey_index(&self) -> u16 {
        self.0.pkey_index
    }

    /// Source LID.
    pub const fn slid(&self) -> u16 {
        self.0.slid
    }

    /// Service level.
    pub const fn sl(&self) -> u8 {
        self.0.sl
    }

    /// Destination LID path bits.
    pub const fn dlid_path_bits(&self) -> u8 {
        self.0.dlid_path_bits
    }

    /// The addressing fields `ibv_init_ah_from_wc` needs.
    pub fn addressing(&self) -> WcInfo {
        WcInfo::from(&self.0)
    }
}

impl fmt::Debug for Wc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wc")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.opcode())
            .field("byte_len", &self.byte_len())
            .field("imm_data", &self.imm_data())
            .field("qp_num", &self.qp_num())
            .field("src_qp", &self.src_qp())
            .field("wc_flags", &self.wc_flags())
            .finish()
    }
}


/// The fields of a work completion (`struct ibv_wc`) that addressing needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WcInfo {
    /// Remote QP number.
    pub src_qp: u32,
    /// Remote LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// Destination LID path bits.
    pub dlid_path_bits: u8,
    /// `IBV_WC_*` flags; [`WC_GRH`](crate::ah::from_wc::WC_GRH) says a GRH precedes the payload.
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
}

impl From<&crate::abi::uverbs::Wc> for WcInfo {
    fn from(wc: &crate::abi::uverbs::Wc) -> Self {
        Self {
            src_qp: wc.src_qp,
            slid: wc.slid,
            sl: wc.sl,
            dlid_path_bits: wc.dlid_path_bits,
            wc_flags: wc.wc_flags,
            pkey_index: wc.pkey_index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn accessors_read_the_c_fields() {
        let mut a = AbiWc::new_zeroed();
        a.wr_id = 7;
        a.status = 5;
        a.opcode = 129;
        a.ex = 0x1234_5678u32.to_be();
        a.wc_flags = 2;
        let wc = Wc::from_abi(a);
        assert_eq!(wc.status(), WcStatus::WrFlushErr);
        assert_eq!(wc.opcode(), WcOpcode::RecvRdmaWithImm);
        assert_eq!(wc.imm_data(), Some(0x1234_5678));
        assert_eq!(wc.invalidated_rkey(), None);
        assert_eq!(WcStatus::from_raw(23), WcStatus::TmRndvIncomplete);
        assert_eq!(WcStatus::from_raw(24), WcStatus::Other(24));
        assert!(Wc::ZERO.is_success());
        assert_eq!(Wc::zeroed(), Wc::ZERO);
        assert_eq!(Wc::default(), Wc::zeroed());
    }
}

/// Where a poll stores completions: an array of [`Wc`]
/// ([`Cq::poll`](crate::Cq::poll)) or of `MaybeUninit<Wc>`
/// ([`Cq::poll_uninit`](crate::Cq::poll_uninit): memory a C caller hands
/// in, never read). Sealed: implemented for those two only.
pub trait WcOut: sealed::Sealed {
    /// Stores `wc` in this slot and returns it, stored.
    fn set(&mut self, wc: Wc) -> &mut Wc;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Wc {}
    impl Sealed for core::mem::MaybeUninit<super::Wc> {}
}

impl WcOut for Wc {
    #[inline(always)]
    fn set(&mut self, wc: Wc) -> &mut Wc {
        *self = wc;
        self
    }
}

impl WcOut for core::mem::MaybeUninit<Wc> {
    #[inline(always)]
    fn set(&mut self, wc: Wc) -> &mut Wc {
        self.write(wc)
    }
}
