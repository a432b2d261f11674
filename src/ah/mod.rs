//! Address handles (`struct ibv_ah`): `ibv_create_ah`, `ibv_destroy_ah`,
//! and building one from a received completion ([`from_wc`]).
//!
//! An AH names a UD destination: on RoCE (rxe) it must be global — the
//! [`GlobalRoute`] carries the destination GID, the index of the local
//! source GID (whose type, RoCE v1 or v2, picks the packet format), hop
//! limit and traffic class. siw (iWARP) has no AHs: the kernel refuses the
//! command and the error is [`ErrorKind::Unsupported`](crate::ErrorKind).

pub(crate) mod attr;
pub mod from_wc;

use zerocopy::FromZeros;

use crate::abi::uverbs::{CreateAh, DestroyAh};
use crate::error::Result;
use crate::pd::{DestroyError, Pd};

pub use attr::{AhAttr, GlobalRoute};
pub use from_wc::{init_ah_from_wc, GidKind, WcInfo, GRH_LEN};

/// An address handle (`struct ibv_ah`).
#[doc(alias = "ibv_ah")]
#[derive(Debug)]
pub struct Ah<'a> {
    pd: &'a Pd<'a>,
    handle: u32,
    ah_num: u32,
    attr: AhAttr,
}

impl<'a> Ah<'a> {
    /// `ibv_create_ah`: creates an address handle in `pd`.
    ///
    /// The address is checked first, as a transition's is: a service level
    /// wider than 4 bits, a flow label wider than 20, a static rate that
    /// is no `enum ibv_rate`, a port the device does not have, an sgid
    /// index past the GID table (or naming an empty entry, which the
    /// kernel reports) and a missing GRH on a RoCE port are
    /// `InvalidArgument` errors whose [detail](crate::Error::detail) names
    /// the field.
    #[doc(alias = "ibv_create_ah")]
    pub fn create(pd: &'a Pd<'a>, attr: &AhAttr) -> Result<Self> {
        const VERB: &str = "ibv_create_ah";
        pd.context().check_ah(VERB, attr)?;
        let mut cmd = CreateAh::new_zeroed();
        cmd.pd_handle = pd.handle();
        cmd.attr = attr.to_abi();
        let (handle, ah_num) =
            exec_create_ah(pd.context(), VERB, &cmd).map_err(crate::attr_check::explain_gid_error)?;
        Ok(Self { pd, handle, ah_num, attr: *attr })
    }

    /// `ibv_create_ah_from_wc`: [`crate::Context::init_ah_from_wc`] then
    /// [`Ah::create`] — an AH that answers the sender of a received
    /// datagram.
    #[doc(alias = "ibv_create_ah_from_wc")]
    pub fn create_from_wc(pd: &'a Pd<'a>, wc: &WcInfo, grh: Option<&[u8; GRH_LEN]>, port_num: u8) -> Result<Self> {
        let attr = pd.context().init_ah_from_wc(port_num, wc, grh)?;
        Self::create(pd, &attr)
    }

    /// The kernel's handle for this AH.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The provider's number for this AH: rxe's `ah_num` (the AH's index
    /// for UD send WQEs), mlx5's slot of its address vector; 0 on
    /// providers or kernels that do not have one.
    pub fn ah_num(&self) -> u32 {
        self.ah_num
    }

    /// The address the AH was created with.
    pub fn attr(&self) -> &AhAttr {
        &self.attr
    }

    /// The protection domain the AH belongs to.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.pd
    }

    /// `ibv_destroy_ah`: destroys the AH, returning it with the error if the
    /// kernel refuses.
    #[doc(alias = "ibv_destroy_ah")]
    pub fn destroy(self) -> core::result::Result<(), DestroyError<Self>> {
        match self.destroy_in_kernel() {
            Ok(()) => {
                core::mem::forget(self);
                Ok(())
            }
            Err(error) => Err(DestroyError { error, object: self }),
        }
    }

    fn destroy_in_kernel(&self) -> Result<()> {
        let mut cmd = DestroyAh::new_zeroed();
        cmd.ah_handle = self.handle;
        self.pd.context().channel().exec("ibv_destroy_ah", &cmd, &[], &mut [])?;
        self.pd.context().provider_state().destroy_ah(self.ah_num);
        Ok(())
    }
}

impl Drop for Ah<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.destroy_in_kernel() {
            crate::error::report_drop_failure(e);
        }
    }
}

/// Sends `IB_USER_VERBS_CMD_CREATE_AH` with the provider's driver data;
/// returns (handle, the provider's AH number: rxe's `ah_num`, 0 where
/// there is none). Providers without AHs refuse it (siw's kernel does).
fn exec_create_ah(ctx: &crate::Context, verb: &'static str, cmd: &CreateAh) -> Result<(u32, u32)> {
    let mut dc = crate::providers::seam::DriverCmd::new(ctx.channel(), verb, *cmd);
    let (resp, ah_num) = ctx.provider_state().create_ah(&mut dc)?;
    Ok((resp.ah_handle, ah_num))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_round_trip_and_is_global() {
        let a = AhAttr {
            grh: Some(GlobalRoute { dgid: [7; 16], flow_label: 0xabcde, sgid_index: 3, hop_limit: 64, traffic_class: 9 }),
            dlid: 0,
            sl: 2,
            src_path_bits: 0,
            static_rate: 3,
            port_num: 1,
        };
        let k = a.to_abi();
        assert_eq!((k.is_global, k.grh.sgid_index, k.grh.flow_label, k.port_num), (1, 3, 0xabcde, 1));
        assert_eq!(AhAttr::from_abi(&k), a);
        let local = AhAttr { grh: None, dlid: 5, port_num: 1, ..Default::default() };
        let k = local.to_abi();
        assert_eq!((k.is_global, k.dlid, k.grh), (0, 5, crate::abi::uverbs::GlobalRoute::default()));
        assert_eq!(AhAttr::from_abi(&k), local);
    }
}
