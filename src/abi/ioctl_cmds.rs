//! `<rdma/ib_user_ioctl_cmds.h>`: object, method and attribute ids of the
//! ioctl interface.
//!
//! Naming: every constant is its C enumerator with the leading `UVERBS_`
//! removed, so `UVERBS_METHOD_CQ_CREATE` is `cq::METHOD_CQ_CREATE` and
//! `UVERBS_ATTR_CREATE_CQ_HANDLE` is `cq::ATTR_CREATE_CQ_HANDLE`; grep for
//! the C name minus `UVERBS_`. Object ids and the driver-data attribute ids
//! live at the top of this module (`OBJECT_CQ`, `ATTR_UHW_IN`); the
//! methods of an object and the attributes of those methods live in the
//! submodule named after the object. All ids are `u16`, the width of the
//! id fields in [`IoctlHdr`](super::ioctl::IoctlHdr) and
//! [`IoctlAttr`](super::ioctl::IoctlAttr).
//!
//! Each module also has an `IDS` table of `(C name, value)` pairs, used by
//! the cross-check test and handy for debug output.

use super::ioctl::UVERBS_UDATA_DRIVER_DATA_FLAG;

c_consts! {
    /// Every `UVERBS_OBJECT_*` id and the driver-data attribute ids, with their C names.
    IDS: u16, prefix "UVERBS_";

    OBJECT_DEVICE = 0;
    OBJECT_PD = 1;
    OBJECT_COMP_CHANNEL = 2;
    OBJECT_CQ = 3;
    OBJECT_QP = 4;
    OBJECT_SRQ = 5;
    OBJECT_AH = 6;
    OBJECT_MR = 7;
    OBJECT_MW = 8;
    OBJECT_FLOW = 9;
    OBJECT_XRCD = 10;
    OBJECT_RWQ_IND_TBL = 11;
    OBJECT_WQ = 12;
    OBJECT_FLOW_ACTION = 13;
    OBJECT_DM = 14;
    OBJECT_COUNTERS = 15;
    OBJECT_ASYNC_EVENT = 16;
    /// Driver-specific input (`udata` in): the provider's command bytes.
    ATTR_UHW_IN = UVERBS_UDATA_DRIVER_DATA_FLAG;
    /// Driver-specific output (`udata` out): the provider's response bytes.
    ATTR_UHW_OUT = UVERBS_UDATA_DRIVER_DATA_FLAG + 1;
}

/// `UVERBS_OBJECT_DEVICE`: methods on the device itself (write-command tunnel, context, ports, GIDs, handle listing).
pub mod device {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_device
        METHOD_INVOKE_WRITE = 0;
        METHOD_INFO_HANDLES = 1;
        METHOD_QUERY_PORT = 2;
        METHOD_GET_CONTEXT = 3;
        METHOD_QUERY_CONTEXT = 4;
        METHOD_QUERY_GID_TABLE = 5;
        METHOD_QUERY_GID_ENTRY = 6;
        // enum uverbs_attrs_invoke_write_cmd_attr_ids
        ATTR_CORE_IN = 0;
        ATTR_CORE_OUT = 1;
        ATTR_WRITE_CMD = 2;
        // enum uverbs_attrs_info_handles_id
        ATTR_INFO_OBJECT_ID = 0;
        ATTR_INFO_TOTAL_HANDLES = 1;
        ATTR_INFO_HANDLES_LIST = 2;
        // enum uverbs_attrs_query_port_cmd_attr_ids
        ATTR_QUERY_PORT_PORT_NUM = 0;
        ATTR_QUERY_PORT_RESP = 1;
        // enum uverbs_attrs_get_context_attr_ids
        ATTR_GET_CONTEXT_NUM_COMP_VECTORS = 0;
        ATTR_GET_CONTEXT_CORE_SUPPORT = 1;
        // enum uverbs_attrs_query_context_attr_ids
        ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS = 0;
        ATTR_QUERY_CONTEXT_CORE_SUPPORT = 1;
        // enum uverbs_attrs_query_gid_table_cmd_attr_ids
        ATTR_QUERY_GID_TABLE_ENTRY_SIZE = 0;
        ATTR_QUERY_GID_TABLE_FLAGS = 1;
        ATTR_QUERY_GID_TABLE_RESP_ENTRIES = 2;
        ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES = 3;
        // enum uverbs_attrs_query_gid_entry_cmd_attr_ids
        ATTR_QUERY_GID_ENTRY_PORT = 0;
        ATTR_QUERY_GID_ENTRY_GID_INDEX = 1;
        ATTR_QUERY_GID_ENTRY_FLAGS = 2;
        ATTR_QUERY_GID_ENTRY_RESP_ENTRY = 3;
    }
}

/// `UVERBS_OBJECT_PD`: protection domains.
pub mod pd {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_pd
        METHOD_PD_DESTROY = 0;
        // enum uverbs_attrs_pd_destroy_ids
        ATTR_DESTROY_PD_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_CQ`: completion queues.
pub mod cq {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_cq
        METHOD_CQ_CREATE = 0;
        METHOD_CQ_DESTROY = 1;
        // enum uverbs_attrs_create_cq_cmd_attr_ids
        ATTR_CREATE_CQ_HANDLE = 0;
        ATTR_CREATE_CQ_CQE = 1;
        ATTR_CREATE_CQ_USER_HANDLE = 2;
        ATTR_CREATE_CQ_COMP_CHANNEL = 3;
        ATTR_CREATE_CQ_COMP_VECTOR = 4;
        ATTR_CREATE_CQ_FLAGS = 5;
        ATTR_CREATE_CQ_RESP_CQE = 6;
        ATTR_CREATE_CQ_EVENT_FD = 7;
        // enum uverbs_attrs_destroy_cq_cmd_attr_ids
        ATTR_DESTROY_CQ_HANDLE = 0;
        ATTR_DESTROY_CQ_RESP = 1;
    }
}

/// `UVERBS_OBJECT_QP`: queue pairs.
pub mod qp {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_qp
        METHOD_QP_CREATE = 0;
        METHOD_QP_DESTROY = 1;
        // enum uverbs_attrs_create_qp_cmd_attr_ids
        ATTR_CREATE_QP_HANDLE = 0;
        ATTR_CREATE_QP_XRCD_HANDLE = 1;
        ATTR_CREATE_QP_PD_HANDLE = 2;
        ATTR_CREATE_QP_SRQ_HANDLE = 3;
        ATTR_CREATE_QP_SEND_CQ_HANDLE = 4;
        ATTR_CREATE_QP_RECV_CQ_HANDLE = 5;
        ATTR_CREATE_QP_IND_TABLE_HANDLE = 6;
        ATTR_CREATE_QP_USER_HANDLE = 7;
        ATTR_CREATE_QP_CAP = 8;
        ATTR_CREATE_QP_TYPE = 9;
        ATTR_CREATE_QP_FLAGS = 10;
        ATTR_CREATE_QP_SOURCE_QPN = 11;
        ATTR_CREATE_QP_EVENT_FD = 12;
        ATTR_CREATE_QP_RESP_CAP = 13;
        ATTR_CREATE_QP_RESP_QP_NUM = 14;
        // enum uverbs_attrs_destroy_qp_cmd_attr_ids
        ATTR_DESTROY_QP_HANDLE = 0;
        ATTR_DESTROY_QP_RESP = 1;
    }
}

/// `UVERBS_OBJECT_SRQ`: shared receive queues.
pub mod srq {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_srq
        METHOD_SRQ_CREATE = 0;
        METHOD_SRQ_DESTROY = 1;
        // enum uverbs_attrs_create_srq_cmd_attr_ids
        ATTR_CREATE_SRQ_HANDLE = 0;
        ATTR_CREATE_SRQ_PD_HANDLE = 1;
        ATTR_CREATE_SRQ_XRCD_HANDLE = 2;
        ATTR_CREATE_SRQ_CQ_HANDLE = 3;
        ATTR_CREATE_SRQ_USER_HANDLE = 4;
        ATTR_CREATE_SRQ_MAX_WR = 5;
        ATTR_CREATE_SRQ_MAX_SGE = 6;
        ATTR_CREATE_SRQ_LIMIT = 7;
        ATTR_CREATE_SRQ_MAX_NUM_TAGS = 8;
        ATTR_CREATE_SRQ_TYPE = 9;
        ATTR_CREATE_SRQ_EVENT_FD = 10;
        ATTR_CREATE_SRQ_RESP_MAX_WR = 11;
        ATTR_CREATE_SRQ_RESP_MAX_SGE = 12;
        ATTR_CREATE_SRQ_RESP_SRQ_NUM = 13;
        // enum uverbs_attrs_destroy_srq_cmd_attr_ids
        ATTR_DESTROY_SRQ_HANDLE = 0;
        ATTR_DESTROY_SRQ_RESP = 1;
    }
}

/// `UVERBS_OBJECT_AH`: address handles.
pub mod ah {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_ah
        METHOD_AH_DESTROY = 0;
        // enum uverbs_attrs_ah_destroy_ids
        ATTR_DESTROY_AH_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_MR`: memory regions (device-memory, dma-buf, advise, query, destroy).
pub mod mr {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_mr
        METHOD_DM_MR_REG = 0;
        METHOD_MR_DESTROY = 1;
        METHOD_ADVISE_MR = 2;
        METHOD_QUERY_MR = 3;
        METHOD_REG_DMABUF_MR = 4;
        // enum uverbs_attrs_mr_destroy_ids
        ATTR_DESTROY_MR_HANDLE = 0;
        // enum uverbs_attrs_reg_dm_mr_cmd_attr_ids
        ATTR_REG_DM_MR_HANDLE = 0;
        ATTR_REG_DM_MR_OFFSET = 1;
        ATTR_REG_DM_MR_LENGTH = 2;
        ATTR_REG_DM_MR_PD_HANDLE = 3;
        ATTR_REG_DM_MR_ACCESS_FLAGS = 4;
        ATTR_REG_DM_MR_DM_HANDLE = 5;
        ATTR_REG_DM_MR_RESP_LKEY = 6;
        ATTR_REG_DM_MR_RESP_RKEY = 7;
        // enum uverbs_attrs_advise_mr_cmd_attr_ids
        ATTR_ADVISE_MR_PD_HANDLE = 0;
        ATTR_ADVISE_MR_ADVICE = 1;
        ATTR_ADVISE_MR_FLAGS = 2;
        ATTR_ADVISE_MR_SGE_LIST = 3;
        // enum uverbs_attrs_query_mr_cmd_attr_ids
        ATTR_QUERY_MR_HANDLE = 0;
        ATTR_QUERY_MR_RESP_LKEY = 1;
        ATTR_QUERY_MR_RESP_RKEY = 2;
        ATTR_QUERY_MR_RESP_LENGTH = 3;
        ATTR_QUERY_MR_RESP_IOVA = 4;
        // enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids
        ATTR_REG_DMABUF_MR_HANDLE = 0;
        ATTR_REG_DMABUF_MR_PD_HANDLE = 1;
        ATTR_REG_DMABUF_MR_OFFSET = 2;
        ATTR_REG_DMABUF_MR_LENGTH = 3;
        ATTR_REG_DMABUF_MR_IOVA = 4;
        ATTR_REG_DMABUF_MR_FD = 5;
        ATTR_REG_DMABUF_MR_ACCESS_FLAGS = 6;
        ATTR_REG_DMABUF_MR_RESP_LKEY = 7;
        ATTR_REG_DMABUF_MR_RESP_RKEY = 8;
    }
}

/// `UVERBS_OBJECT_MW`: memory windows.
pub mod mw {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_mw
        METHOD_MW_DESTROY = 0;
        // enum uverbs_attrs_mw_destroy_ids
        ATTR_DESTROY_MW_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_FLOW`: steering flows.
pub mod flow {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_flow
        METHOD_FLOW_DESTROY = 0;
        // enum uverbs_attrs_flow_destroy_ids
        ATTR_DESTROY_FLOW_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_XRCD`: XRC domains.
pub mod xrcd {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_xrcd
        METHOD_XRCD_DESTROY = 0;
        // enum uverbs_attrs_xrcd_destroy_ids
        ATTR_DESTROY_XRCD_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_RWQ_IND_TBL`: receive WQ indirection tables.
pub mod rwq_ind_tbl {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_rwq_ind_tbl
        METHOD_RWQ_IND_TBL_DESTROY = 0;
        // enum uverbs_attrs_rwq_ind_tbl_destroy_ids
        ATTR_DESTROY_RWQ_IND_TBL_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_WQ`: work queues.
pub mod wq {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_wq
        METHOD_WQ_CREATE = 0;
        METHOD_WQ_DESTROY = 1;
        // enum uverbs_attrs_create_wq_cmd_attr_ids
        ATTR_CREATE_WQ_HANDLE = 0;
        ATTR_CREATE_WQ_PD_HANDLE = 1;
        ATTR_CREATE_WQ_CQ_HANDLE = 2;
        ATTR_CREATE_WQ_USER_HANDLE = 3;
        ATTR_CREATE_WQ_TYPE = 4;
        ATTR_CREATE_WQ_EVENT_FD = 5;
        ATTR_CREATE_WQ_MAX_WR = 6;
        ATTR_CREATE_WQ_MAX_SGE = 7;
        ATTR_CREATE_WQ_FLAGS = 8;
        ATTR_CREATE_WQ_RESP_MAX_WR = 9;
        ATTR_CREATE_WQ_RESP_MAX_SGE = 10;
        ATTR_CREATE_WQ_RESP_WQ_NUM = 11;
        // enum uverbs_attrs_destroy_wq_cmd_attr_ids
        ATTR_DESTROY_WQ_HANDLE = 0;
        ATTR_DESTROY_WQ_RESP = 1;
    }
}

/// `UVERBS_OBJECT_FLOW_ACTION`: flow actions (ESP).
pub mod flow_action {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_actions_flow_action_ops
        METHOD_FLOW_ACTION_ESP_CREATE = 0;
        METHOD_FLOW_ACTION_DESTROY = 1;
        METHOD_FLOW_ACTION_ESP_MODIFY = 2;
        // enum uverbs_attrs_create_flow_action_esp
        ATTR_CREATE_FLOW_ACTION_ESP_HANDLE = 0;
        ATTR_FLOW_ACTION_ESP_ATTRS = 1;
        ATTR_FLOW_ACTION_ESP_ESN = 2;
        ATTR_FLOW_ACTION_ESP_KEYMAT = 3;
        ATTR_FLOW_ACTION_ESP_REPLAY = 4;
        ATTR_FLOW_ACTION_ESP_ENCAP = 5;
        // enum uverbs_attrs_modify_flow_action_esp
        ATTR_MODIFY_FLOW_ACTION_ESP_HANDLE = ATTR_CREATE_FLOW_ACTION_ESP_HANDLE;
        // enum uverbs_attrs_destroy_flow_action_esp
        ATTR_DESTROY_FLOW_ACTION_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_DM`: device memory.
pub mod dm {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_dm
        METHOD_DM_ALLOC = 0;
        METHOD_DM_FREE = 1;
        // enum uverbs_attrs_alloc_dm_cmd_attr_ids
        ATTR_ALLOC_DM_HANDLE = 0;
        ATTR_ALLOC_DM_LENGTH = 1;
        ATTR_ALLOC_DM_ALIGNMENT = 2;
        // enum uverbs_attrs_free_dm_cmd_attr_ids
        ATTR_FREE_DM_HANDLE = 0;
    }
}

/// `UVERBS_OBJECT_COUNTERS`: counter sets.
pub mod counters {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_methods_actions_counters_ops
        METHOD_COUNTERS_CREATE = 0;
        METHOD_COUNTERS_DESTROY = 1;
        METHOD_COUNTERS_READ = 2;
        // enum uverbs_attrs_create_counters_cmd_attr_ids
        ATTR_CREATE_COUNTERS_HANDLE = 0;
        // enum uverbs_attrs_destroy_counters_cmd_attr_ids
        ATTR_DESTROY_COUNTERS_HANDLE = 0;
        // enum uverbs_attrs_read_counters_cmd_attr_ids
        ATTR_READ_COUNTERS_HANDLE = 0;
        ATTR_READ_COUNTERS_BUFF = 1;
        ATTR_READ_COUNTERS_FLAGS = 2;
    }
}

/// `UVERBS_OBJECT_ASYNC_EVENT`: the async event file.
pub mod async_event {
    c_consts! {
        /// Every id in this module with its C name.
        IDS: u16, prefix "UVERBS_";
        // enum uverbs_method_async_event
        METHOD_ASYNC_EVENT_ALLOC = 0;
        // enum uverbs_attrs_async_event_create
        ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE = 0;
    }
}

/// Every per-object `IDS` table, for the cross-check test.
pub const ALL_IDS: &[&[(&str, u64)]] = &[
    IDS,
    device::IDS,
    pd::IDS,
    cq::IDS,
    qp::IDS,
    srq::IDS,
    ah::IDS,
    mr::IDS,
    mw::IDS,
    flow::IDS,
    xrcd::IDS,
    rwq_ind_tbl::IDS,
    wq::IDS,
    flow_action::IDS,
    dm::IDS,
    counters::IDS,
    async_event::IDS,
];
