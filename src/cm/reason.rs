//! What an event's status means, in words (librdmacm's `rdma_reject_msg`):
//! on InfiniBand/RoCE a [`Rejected`](super::EventKind::Rejected) status is
//! the IB CM reject reason (the kernel's `ibcm_reject_msg` table); on
//! iWARP, and for the other events, it is a negative errno (the kernel's
//! `iwcm_reject_msg` names the three iWARP rejections).

/// The IB CM reject reasons (`enum ib_cm_rej_reason`), by value.
const IB_CM_REJ: [(i32, &str); 34] = [
    (1, "no QP"),
    (2, "no EEC"),
    (3, "no resources"),
    (4, "timeout"),
    (5, "unsupported"),
    (6, "invalid comm ID"),
    (7, "invalid comm instance"),
    (8, "invalid service ID"),
    (9, "invalid transport type"),
    (10, "stale conn"),
    (11, "RDC not exist"),
    (12, "invalid GID"),
    (13, "invalid LID"),
    (14, "invalid SL"),
    (15, "invalid traffic class"),
    (16, "invalid hop limit"),
    (17, "invalid packet rate"),
    (18, "invalid alt GID"),
    (19, "invalid alt LID"),
    (20, "invalid alt SL"),
    (21, "invalid alt traffic class"),
    (22, "invalid alt hop limit"),
    (23, "invalid alt packet rate"),
    (24, "port CM redirect"),
    (25, "port redirect"),
    (26, "invalid MTU"),
    (27, "insufficient resp resources"),
    (28, "consumer defined"),
    (29, "invalid RNR retry"),
    (30, "duplicate local comm ID"),
    (31, "invalid class version"),
    (32, "invalid flow label"),
    (33, "invalid alt flow label"),
    (35, "vendor option is not supported"),
];

/// The IB CM reject reason meaning "nobody listens on that port" (the
/// passive side has no listener for the service ID).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) const IB_CM_REJ_INVALID_SERVICE_ID: i32 = 8;
/// The IB CM reject reason of an application's `rdma_reject`.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) const IB_CM_REJ_CONSUMER_DEFINED: i32 = 28;

/// `rdma_reject_msg`: the text of a [`Rejected`](super::EventKind::Rejected)
/// event's status: an IB CM reject reason (positive, InfiniBand/RoCE) or
/// an iWARP status (`-ECONNRESET`, `-ECONNREFUSED`, `-ETIMEDOUT`);
/// `"unrecognized reason"` for anything else, as the kernel says.
#[doc(alias = "rdma_reject_msg")]
pub fn reject_msg(status: i32) -> &'static str {
    const ECONNRESET: i32 = 104;
    const ETIMEDOUT: i32 = 110;
    const ECONNREFUSED: i32 = 111;
    match status {
        s if s > 0 => IB_CM_REJ.iter().find(|(v, _)| *v == s).map_or("unrecognized reason", |(_, m)| m),
        s if s == -ECONNRESET => "reset by remote host",
        s if s == -ECONNREFUSED => "refused by remote application",
        s if s == -ETIMEDOUT => "setup timeout",
        _ => "unrecognized reason",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_reasons_and_iwarp_statuses_have_text() {
        assert_eq!(reject_msg(IB_CM_REJ_INVALID_SERVICE_ID), "invalid service ID");
        assert_eq!(reject_msg(IB_CM_REJ_CONSUMER_DEFINED), "consumer defined");
        assert_eq!(reject_msg(1), "no QP");
        assert_eq!(reject_msg(26), "invalid MTU");
        assert_eq!(reject_msg(35), "vendor option is not supported");
        // 34 is not a reason; neither are 0 and values past the table.
        for s in [0, 34, 36, 1000] {
            assert_eq!(reject_msg(s), "unrecognized reason", "{s}");
        }
        assert_eq!(reject_msg(-104), "reset by remote host");
        assert_eq!(reject_msg(-111), "refused by remote application");
        assert_eq!(reject_msg(-110), "setup timeout");
        assert_eq!(reject_msg(-22), "unrecognized reason");
        // Ascending, no duplicates.
        assert!(IB_CM_REJ.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
