//! The QP state machine: which transitions exist and which attributes each
//! requires and allows (IB spec 1.3 table 91; the kernel's
//! `ib_modify_qp_is_ok`), for RC, UC and UD.

use crate::model::{QpState, QpType};

// IBV_QP_* attribute mask bits.
pub const STATE: u32 = 1;
pub const CUR_STATE: u32 = 1 << 1;
pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
pub const ACCESS_FLAGS: u32 = 1 << 3;
pub const PKEY_INDEX: u32 = 1 << 4;
pub const PORT: u32 = 1 << 5;
pub const QKEY: u32 = 1 << 6;
pub const AV: u32 = 1 << 7;
pub const PATH_MTU: u32 = 1 << 8;
pub const TIMEOUT: u32 = 1 << 9;
pub const RETRY_CNT: u32 = 1 << 10;
pub const RNR_RETRY: u32 = 1 << 11;
pub const RQ_PSN: u32 = 1 << 12;
pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
pub const ALT_PATH: u32 = 1 << 14;
pub const MIN_RNR_TIMER: u32 = 1 << 15;
pub const SQ_PSN: u32 = 1 << 16;
pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
pub const PATH_MIG_STATE: u32 = 1 << 18;
pub const CAP: u32 = 1 << 19;
pub const DEST_QPN: u32 = 1 << 20;

/// IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK
pub const IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: u32 = 1 << 1;

pub fn state_from(v: u8) -> Option<QpState> {
    Some(match v {
        0 => QpState::Reset,
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => return None,
    })
}

pub fn state_num(s: QpState) -> u8 {
    match s {
        QpState::Reset => 0,
        QpState::Init => 1,
        QpState::Rtr => 2,
        QpState::Rts => 3,
        QpState::Sqd => 4,
        QpState::Sqe => 5,
        QpState::Err => 6,
    }
}

/// (required, optional) attribute masks of a transition, or None if the
/// transition is not allowed (IB spec 1.3 table 91; the kernel's
/// qp_state_table for RC, UC and UD).
pub fn transition(t: QpType, cur: QpState, next: QpState) -> Option<(u32, u32)> {
    use QpState::*;
    use QpType::*;
    let by = |ud: (u32, u32), uc: (u32, u32), rc: (u32, u32)| match t {
        Ud => ud,
        Uc => uc,
        Rc => rc,
    };
    Some(match (cur, next) {
        (_, Reset) => (0, 0),
        (_, Err) => (0, 0),
        (Reset, Init) => by((PKEY_INDEX | PORT | QKEY, 0), (PKEY_INDEX | PORT | ACCESS_FLAGS, 0), (PKEY_INDEX | PORT | ACCESS_FLAGS, 0)),
        (Init, Init) => by((0, PKEY_INDEX | PORT | QKEY), (0, PKEY_INDEX | PORT | ACCESS_FLAGS), (0, PKEY_INDEX | PORT | ACCESS_FLAGS)),
        (Init, Rtr) => by(
            (0, PKEY_INDEX | QKEY),
            (AV | PATH_MTU | DEST_QPN | RQ_PSN, ALT_PATH | ACCESS_FLAGS | PKEY_INDEX),
            (AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER, ALT_PATH | ACCESS_FLAGS | PKEY_INDEX),
        ),
        (Rtr, Rts) => by(
            (SQ_PSN, CUR_STATE | QKEY),
            (SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE),
            (
                TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
            ),
        ),
        (Rts, Rts) | (Sqd, Rts) => by(
            (0, CUR_STATE | QKEY),
            (0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE),
            (0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER),
        ),
        (Rts, Sqd) => (0, EN_SQD_ASYNC_NOTIFY),
        (Sqd, Sqd) => by(
            (0, PKEY_INDEX | QKEY),
            (0, AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE),
            (
                0,
                PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC | ALT_PATH | ACCESS_FLAGS
                    | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE,
            ),
        ),
        (Sqe, Rts) => match t {
            Ud => (0, CUR_STATE | QKEY),
            Uc => (0, CUR_STATE | ACCESS_FLAGS),
            Rc => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_table_matches_the_spec() {
        use QpState::*;
        // rc_pingpong's three steps
        assert_eq!(transition(QpType::Rc, Reset, Init), Some((PKEY_INDEX | PORT | ACCESS_FLAGS, 0)));
        let (r, _) = transition(QpType::Rc, Init, Rtr).unwrap();
        assert_eq!(r, AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER);
        assert_eq!(transition(QpType::Ud, Rtr, Rts), Some((SQ_PSN, CUR_STATE | QKEY)));
        // not allowed
        assert_eq!(transition(QpType::Rc, Reset, Rts), None);
        assert_eq!(transition(QpType::Rc, Init, Rts), None);
        assert_eq!(transition(QpType::Rc, Sqe, Rts), None);
        // to RESET and ERR from anywhere
        for s in [Reset, Init, Rtr, Rts, Sqd, Sqe, Err] {
            assert_eq!(transition(QpType::Uc, s, Err), Some((0, 0)));
            assert_eq!(transition(QpType::Uc, s, Reset), Some((0, 0)));
        }
    }
}
