//! `enum ibv_event_type`: plain data below the handles (the async event
//! reader and the event names read it).

/// `enum ibv_event_type` (same numbering as the kernel's
/// `enum ib_event_type`).
#[doc(alias = "ibv_event_type")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventType {
    /// `IBV_EVENT_CQ_ERR`: CQ overrun or other CQ error.
    CqErr,
    /// `IBV_EVENT_QP_FATAL`: the QP went to the error state.
    QpFatal,
    /// `IBV_EVENT_QP_REQ_ERR`: invalid request on the QP.
    QpReqErr,
    /// `IBV_EVENT_QP_ACCESS_ERR`: local access violation on the QP.
    QpAccessErr,
    /// `IBV_EVENT_COMM_EST`: communication established (first receive in RTR).
    CommEst,
    /// `IBV_EVENT_SQ_DRAINED`: the send queue drained (SQD).
    SqDrained,
    /// `IBV_EVENT_PATH_MIG`: path migration completed.
    PathMig,
    /// `IBV_EVENT_PATH_MIG_ERR`: path migration failed.
    PathMigErr,
    /// `IBV_EVENT_DEVICE_FATAL`: the device is unusable.
    DeviceFatal,
    /// `IBV_EVENT_PORT_ACTIVE`: a port became active.
    PortActive,
    /// `IBV_EVENT_PORT_ERR`: a port left the active state.
    PortErr,
    /// `IBV_EVENT_LID_CHANGE`: a port's LID changed.
    LidChange,
    /// `IBV_EVENT_PKEY_CHANGE`: a port's P_Key table changed.
    PkeyChange,
    /// `IBV_EVENT_SM_CHANGE`: the subnet manager changed.
    SmChange,
    /// `IBV_EVENT_SRQ_ERR`: the SRQ went to the error state.
    SrqErr,
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`: the SRQ fell below its limit.
    SrqLimitReached,
    /// `IBV_EVENT_QP_LAST_WQE_REACHED`: last WQE of a QP on an SRQ consumed.
    QpLastWqeReached,
    /// `IBV_EVENT_CLIENT_REREGISTER`: the SM asks clients to re-register.
    ClientReregister,
    /// `IBV_EVENT_GID_CHANGE`: a port's GID table changed.
    GidChange,
    /// `IBV_EVENT_WQ_FATAL`: a work queue went to the error state.
    WqFatal,
    /// `IBV_EVENT_DEVICE_SPEED_CHANGE`: a port's link speed changed.
    DeviceSpeedChange,
    /// A value this library does not know.
    Unknown(u32),
}

const EVENT_TYPES: [EventType; 21] = [
    EventType::CqErr,
    EventType::QpFatal,
    EventType::QpReqErr,
    EventType::QpAccessErr,
    EventType::CommEst,
    EventType::SqDrained,
    EventType::PathMig,
    EventType::PathMigErr,
    EventType::DeviceFatal,
    EventType::PortActive,
    EventType::PortErr,
    EventType::LidChange,
    EventType::PkeyChange,
    EventType::SmChange,
    EventType::SrqErr,
    EventType::SrqLimitReached,
    EventType::QpLastWqeReached,
    EventType::ClientReregister,
    EventType::GidChange,
    EventType::WqFatal,
    EventType::DeviceSpeedChange,
];

impl EventType {
    /// From the kernel's number.
    pub fn from_raw(raw: u32) -> Self {
        EVENT_TYPES.get(raw as usize).copied().unwrap_or(EventType::Unknown(raw))
    }

    /// The kernel's number.
    pub fn raw(self) -> u32 {
        match self {
            EventType::Unknown(raw) => raw,
            known => EVENT_TYPES.iter().position(|t| *t == known).map_or(u32::MAX, |i| i as u32),
        }
    }
}
