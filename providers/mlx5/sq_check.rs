//! The checks of one lowered send request, all made before the first
//! store of a list: the provider-independent ones of `wr::check_send`
//! restated on [`Req`] (a UD destination is an address vector here, not an
//! AH) and what libmlx5 refuses (`ATOMIC_WRITE`, atomics on a device
//! without them, windows over 2 GiB).

use super::{Req, SendQueue};
use crate::error::ErrorKind;
use crate::qp::QpType;
use crate::wr::{sge_len, unknown_send_flags, Payload, Refusal, SendOp};

impl SendQueue {
    /// The mlx5-side checks of one request (the provider-independent ones
    /// of `wr::check_send`, on the lowered form, and what libmlx5 refuses).
    pub(super) fn check(&self, r: &Req<'_>) -> core::result::Result<(), Refusal> {
        use ErrorKind::InvalidArgument as Inval;
        let t = self.cfg.qp_type;
        if unknown_send_flags(r.flags) {
            return Err(Refusal(Inval, "send_flags has bits this library does not know (only FENCE, SIGNALED, SOLICITED; inline is Payload::Inline)"));
        }
        if !r.op.valid_for(t) {
            return Err(Refusal(ErrorKind::UnsupportedOpcode, "the QP's transport cannot carry this opcode"));
        }
        if (t == QpType::Ud) != r.ud.is_some() {
            return Err(Refusal(Inval, "a UD send needs a destination (SendWr::ud), a connected QP's send must have none"));
        }
        match r.op {
            SendOp::AtomicWrite { .. } => return Err(Refusal(ErrorKind::UnsupportedOpcode, "mlx5 has no ATOMIC_WRITE (libmlx5 v44 refuses it too)")),
            // libmlx5: EOPNOTSUPP (one KLM entry covers at most 2 GiB).
            SendOp::BindMw(b) if b.length() > 1 << 31 => return Err(Refusal(ErrorKind::Unsupported, "mlx5: a window longer than 2 GiB")),
            SendOp::BindMw(b) if crate::mr::unknown_access(b.access()) => {
                return Err(Refusal(Inval, "the bind's access has bits this library does not know"))
            }
            _ if r.op.is_atomic() && !self.cfg.atomics => return Err(Refusal(ErrorKind::Unsupported, "the device does no atomics")),
            _ => {}
        }
        let len = match r.payload {
            Payload::Sges(s) if s.len() > self.cfg.size.max_gs as usize => return Err(Refusal(ErrorKind::TooManySge, "num_sge is above the QP's max_send_sge")),
            Payload::Sges(s) => sge_len(s),
            Payload::Inline(d) if d.len() > self.cfg.size.max_inline as usize => {
                return Err(Refusal(ErrorKind::InlineTooLarge, "inline data is longer than the QP's max_inline_data"))
            }
            Payload::Inline(_) if matches!(r.op, SendOp::RdmaRead { .. }) || r.op.is_atomic() => {
                return Err(Refusal(Inval, "an RDMA READ or atomic needs an SGE to land its result in, not inline data"))
            }
            Payload::Inline(d) => d.len() as u64,
        };
        if len > 1 << 31 {
            return Err(Refusal(Inval, "the message is longer than 2^31 bytes"));
        }
        match r.op {
            SendOp::AtomicCmpSwp { remote_addr, .. } | SendOp::AtomicFetchAdd { remote_addr, .. } if len < 8 || !remote_addr.is_multiple_of(8) => {
                Err(Refusal(Inval, "an atomic needs an 8-byte aligned remote_addr and at least 8 bytes of SGE"))
            }
            SendOp::BindMw(_) | SendOp::LocalInv { .. } if len != 0 => Err(Refusal(Inval, "a bind or local invalidate carries no data")),
            _ => Ok(()),
        }
    }
}
