//! Checks of QP transition and address attributes before the syscall.
//!
//! The kernel refuses an out-of-range field with a bare `EINVAL` (or, for
//! an sgid index with no GID behind it, `ENODATA`), which does not say
//! which of the ~20 fields of a transition was wrong; several fields are
//! also narrower on the wire than their C type (a 24-bit PSN in a
//! `uint32_t`, a 3-bit retry count in a `uint8_t`), and some kernels
//! silently truncate them. So every field with a range is checked here
//! first, and a bad one is an [`ErrorKind::InvalidArgument`] error whose
//! [detail](Error::detail) names the field.
//!
//! The port number, P_Key index and sgid index are checked against the
//! port (one `ibv_query_port` by the caller, which also refuses a port
//! the device does not have); the rest are checked by their width alone.
//! Every check works on plain data: the context is above this file.

use crate::ah::attr::AhAttr;
use crate::error::{Errno, Error, ErrorKind, Result};
use crate::query::PortAttr;

/// `IBV_LINK_LAYER_ETHERNET`: RoCE, whose packets always carry a GRH.
const LINK_LAYER_ETHERNET: u8 = 2;

/// `Err(Error::invalid(verb, detail))` if `v` needs more than `width`
/// bits.
#[inline]
pub(crate) fn bits(verb: &'static str, v: u32, width: u32, detail: &'static str) -> Result<()> {
    if v >> width != 0 {
        return Err(Error::invalid(verb, detail));
    }
    Ok(())
}

/// `pkey_index` against the port's P_Key table. A port without one
/// (iWARP: `pkey_tbl_len` 0) has no P_Keys to index, and its transitions
/// ignore the field.
pub(crate) fn pkey_index(verb: &'static str, port: &PortAttr, index: u16) -> Result<()> {
    if port.pkey_tbl_len != 0 && index >= port.pkey_tbl_len {
        return Err(Error::invalid(verb, "pkey_index is past the port's P_Key table (pkey_tbl_len)"));
    }
    Ok(())
}

/// Whether `rate` is an `enum ibv_rate` value (0, the port's rate, or one
/// of the named rates).
fn static_rate_ok(rate: u8) -> bool {
    crate::strings::Rate::from_raw(u32::from(rate)).is_some()
}

/// The checks of an address vector that need no port: service level,
/// static rate, flow label.
pub(crate) fn ah_fields(verb: &'static str, ah: &AhAttr) -> Result<()> {
    bits(verb, u32::from(ah.sl), 4, "ah_attr.sl is wider than 4 bits")?;
    if !static_rate_ok(ah.static_rate) {
        return Err(Error::invalid(verb, "ah_attr.static_rate is not an enum ibv_rate value"));
    }
    if let Some(g) = &ah.grh {
        bits(verb, g.flow_label, 20, "ah_attr.grh.flow_label is wider than 20 bits")?;
    }
    Ok(())
}

/// The checks of an address vector against its port (`port`, queried by
/// the caller: [`Context::check_ah`](crate::Context)): the sgid index
/// inside the GID table, and a GRH on a RoCE port (whose packets always
/// carry one; an iWARP port, also Ethernet, needs none: `iwarp`).
pub(crate) fn ah_on_port(verb: &'static str, port: &PortAttr, iwarp: bool, ah: &AhAttr) -> Result<()> {
    match &ah.grh {
        Some(g) if u32::from(g.sgid_index) >= port.gid_tbl_len => {
            Err(Error::invalid(verb, "ah_attr.grh.sgid_index is past the port's GID table (gid_tbl_len)"))
        }
        None if port.link_layer == LINK_LAYER_ETHERNET && !iwarp => Err(Error::invalid(
            verb,
            "a RoCE port needs a global route: set ah_attr.grh (the peer's GID and the local sgid_index)",
        )),
        _ => Ok(()),
    }
}

/// `Err` naming the port if `port_num` cannot be a port (ports count
/// from 1).
pub(crate) fn port_num(verb: &'static str, port_num: u8) -> Result<()> {
    if port_num == 0 {
        return Err(Error::invalid(verb, NO_PORT));
    }
    Ok(())
}

/// A port query's error for a port the device does not have (the kernel's
/// `rdma_is_port_valid` failed: `EINVAL`), named as such.
pub(crate) fn no_such_port(verb: &'static str, e: Error) -> Error {
    match e.errno() {
        Some(errno @ Errno::INVAL) => Error::with_errno(verb, ErrorKind::InvalidArgument, errno).with_detail(NO_PORT),
        _ => e,
    }
}

const NO_PORT: &str = "port_num is not a port of the device (ports count from 1)";

/// What the kernel's `ENODATA` means for a verb given an address: its
/// sgid index names an empty entry of the GID table. Other errors pass
/// unchanged.
pub(crate) fn explain_gid_error(e: Error) -> Error {
    match e.errno() {
        Some(errno @ Errno::NODATA) => Error::with_errno(e.verb(), ErrorKind::InvalidArgument, errno)
            .with_detail("the sgid_index names an empty entry of the port's GID table (see ibv_query_gid_table)"),
        _ => e,
    }
}

/// The widths of the fields of `ibv_qp_attr` that are narrower than their
/// C type.
pub(crate) mod width {
    /// PSNs and QP numbers.
    pub(crate) const PSN: u32 = 24;
    /// `timeout` and `min_rnr_timer` (codes 0–31).
    pub(crate) const TIMER: u32 = 5;
    /// `retry_cnt` and `rnr_retry` (0–7).
    pub(crate) const RETRY: u32 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ah::attr::GlobalRoute;

    #[test]
    fn widths() {
        assert!(bits("v", 0xff_ffff, width::PSN, "d").is_ok());
        let e = bits("v", 0x100_0000, width::PSN, "rq_psn is wider than 24 bits").unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.detail()), ("v", ErrorKind::InvalidArgument, Some("rq_psn is wider than 24 bits")));
        assert!(bits("v", 7, width::RETRY, "d").is_ok());
        assert!(bits("v", 8, width::RETRY, "d").is_err());
        assert!(bits("v", 31, width::TIMER, "d").is_ok());
        assert!(bits("v", 32, width::TIMER, "d").is_err());
    }

    #[test]
    fn address_fields() {
        let good = AhAttr {
            grh: Some(GlobalRoute { flow_label: 0xf_ffff, ..Default::default() }),
            sl: 15,
            static_rate: 3,
            port_num: 1,
            ..Default::default()
        };
        ah_fields("ibv_create_ah", &good).unwrap();
        let detail = |a: AhAttr| ah_fields("ibv_create_ah", &a).unwrap_err().detail().unwrap();
        assert!(detail(AhAttr { sl: 16, ..good }).contains("sl"));
        assert!(detail(AhAttr { static_rate: 1, ..good }).contains("static_rate"));
        assert!(detail(AhAttr { static_rate: 25, ..good }).contains("static_rate"));
        let wide = GlobalRoute { flow_label: 0x10_0000, ..Default::default() };
        assert!(detail(AhAttr { grh: Some(wide), ..good }).contains("flow_label"));
        for rate in [0, 2, 10, 24] {
            assert!(static_rate_ok(rate), "{rate}");
        }
    }

    #[test]
    fn enodata_names_the_gid_table() {
        let e = explain_gid_error(Error::from_errno("ibv_modify_qp", Errno::NODATA));
        assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidArgument, Some(Errno::NODATA)));
        assert!(e.detail().unwrap().contains("sgid_index"));
        let other = Error::from_errno("ibv_modify_qp", Errno::INVAL);
        assert_eq!(explain_gid_error(other), other);
    }
}
