//! `id->verbs`: the device context an id is bound to, found by the node
//! GUID the kernel reports (as librdmacm matches its device list).

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};

use super::id::CmId;

impl CmId<'_> {
    /// Opens the [`Context`] of the device this id is bound to (after
    /// `rdma_resolve_addr`, `rdma_bind_addr` to a device address, or on a
    /// connection request's id). librdmacm's `id->verbs`.
    pub fn open_device(&self) -> Result<Context> {
        const VERB: &str = "rdma_cm_id.verbs";
        let info = self.query_addr()?;
        if info.node_guid_be == 0 {
            return Err(Error::new(VERB, ErrorKind::WrongState)
                .with_detail("the id is not bound to a device yet: resolve an address or bind to a device's address"));
        }
        let list = crate::discovery::devices()?;
        let dev = list
            .iter()
            .find(|d| d.guid_be() == info.node_guid_be && d.index().is_none_or(|i| i == info.ibdev_index))
            .or_else(|| list.iter().find(|d| d.guid_be() == info.node_guid_be))
            .ok_or(Error::new(VERB, ErrorKind::NoDevice).with_detail("no uverbs device has the id's node GUID"))?;
        Context::open(dev)
    }
}
