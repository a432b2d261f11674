//! GET_CONTEXT (mlx5_ib_alloc_ucontext), QUERY_DEVICE, QUERY_PORT: the
//! device's attributes, those of a ConnectX-6 Dx with one 100 GbE RoCE port.

use super::cmd::{errno, u32_at, u64_at, u8_at, Out, Req, Resp};
use super::{sock, uar, Daemon, State};
use crate::fixture::{FW, GID_TBL_LEN, PCI_DEVICE};
use crate::mem::Pid;

/// log2 of the largest queue (WQEBBs / WQEs): mlx5 log_max_qp_sz.
pub const LOG_MAX_QP_SZ: u32 = 15;
/// Largest CQ (entries - 1).
pub const MAX_CQE: u32 = (1 << 22) - 1;
/// Largest SGE count of a send or receive WQE.
pub const MAX_SGE: u32 = 30;
/// Largest SRQ.
pub const MAX_SRQ_WR: u32 = (1 << 15) - 1;
/// Outstanding RDMA READ / atomic per QP.
pub const MAX_RD_ATOMIC: u32 = 16;
/// Completion vectors.
pub const NUM_COMP_VECTORS: u32 = 4;
/// Path MTU enum: 3 = 1024 (active, as with a 1500-byte Ethernet MTU), 5 = 4096 (max).
pub const ACTIVE_MTU: u8 = 3;
/// See [`ACTIVE_MTU`].
pub const MAX_MTU: u8 = 5;

const DEVX: u32 = 1;

/// GET_CONTEXT: mlx5_ib_alloc_ucontext_req(_v2) in, mlx5_ib_alloc_ucontext_resp
/// out, plus the async event descriptor. Legacy UAR mode: tot_bfregs pages
/// served by mmap at offsets 0.., no dynamic UARs.
pub fn get_context(d: &Daemon, st: &mut State, ctx: u32, _pid: Pid, req: &Req) -> Result<Resp, i32> {
    let u = &req.udata;
    if u.len() < 8 {
        return Err(errno::EINVAL);
    }
    if st.ctxx.get(&ctx).is_some_and(|c| c.open) {
        return Err(errno::EINVAL);
    }
    let (total, low_lat) = (u32_at(u, 0), u32_at(u, 4));
    let (flags, comp_mask, max_cqe_version) = (u32_at(u, 8), u32_at(u, 12), u8_at(u, 16));
    if u.len() >= 16 && (flags & !DEVX != 0 || comp_mask != 0) {
        return Err(errno::EOPNOTSUPP);
    }
    if u.len() >= 24 && (u8_at(u, 17) != 0 || u32_at(u, 18) & 0xffff != 0 || u32_at(u, 20) != 0) {
        return Err(errno::EINVAL);
    }
    let total = total.max(2).next_multiple_of(2);
    if total > crate::proto::UAR_PAGES * 2 {
        return Err(errno::ENOMEM);
    }
    if low_lat > total - 1 {
        return Err(errno::EINVAL);
    }
    let cqe_version = max_cqe_version.min(1);
    let (mine, theirs) = sock::event_pair().map_err(|_| errno::ENOMEM)?;
    let dup = theirs.try_clone().map_err(|_| errno::ENOMEM)?;
    st.sink.async_fds.insert(ctx, (mine, dup));
    if let Some(u) = st.uars.get(&ctx) {
        u.active_pages.store(total / 2, std::sync::atomic::Ordering::Release);
    }
    let x = st.ctxx.entry(ctx).or_default();
    x.open = true;
    x.tot_bfregs = total;
    // The kernel's `bfregi->ver`: 0 for the 8-byte request, else 2.
    x.bfregs = super::bfreg::Bfregs::new(total, low_lat, u.len() > 8);
    x.cqe_version = cqe_version;
    let core = Out::new(8).u32(0, 0).u32(4, NUM_COMP_VECTORS).done();
    let mut m = Out::new(72);
    m.u32(0, 1 << 18) // qp_tab_size
        .u32(4, uar::BF_REG_SIZE as u32)
        .u32(8, total) // tot_bfregs
        .u32(12, 64) // cache_line_size
        .u16(16, 1024) // max_sq_desc_sz
        .u16(18, 512) // max_rq_desc_sz
        .u32(20, 1 << LOG_MAX_QP_SZ) // max_send_wqebb
        .u32(24, 1 << LOG_MAX_QP_SZ) // max_recv_wr
        .u32(28, 1 << LOG_MAX_QP_SZ) // max_srq_recv_wr
        .u16(32, 1) // num_ports
        .u32(36, 0) // comp_mask
        .u32(40, req.drv_out_len.min(72) as u32) // response_length
        .u8(44, cqe_version)
        .u8(45, 2) // cmds_supp_uhw: CREATE_AH (the kernel resolves the dmac)
        .u8(46, 1) // eth_min_inline: MLX5_USER_INLINE_MODE_NONE
        .u8(47, 0) // clock_info_versions
        .u64(48, 0) // hca_core_clock_offset
        .u32(56, 12) // log_uar_size
        .u32(60, 1) // num_uars_per_page
        .u32(64, 0) // num_dyn_bfregs
        .u32(68, 0); // dump_fill_mkey
    let _ = d;
    Ok(Resp {
        core,
        drv: m.done(),
        fds: vec![(theirs, 0)],
        note: format!("tot_bfregs={total} low_lat={low_lat} flags={flags:#x} cqe_version={cqe_version} lib_caps={:#x}", u64_at(u, 24)),
    })
}

/// IB_DEVICE_* capability bits of a ConnectX-6 Dx (no XRC: not modelled).
pub const DEVICE_CAP_FLAGS: u32 = 0x2 // BAD_PKEY_CNTR
    | 0x4 // BAD_QKEY_CNTR
    | 0x20 // CHANGE_PHY_PORT
    | 0x400 // PORT_ACTIVE_EVENT
    | 0x800 // SYS_IMAGE_GUID
    | 0x1000 // RC_RNR_NAK_GEN
    | 0x20000 // MEM_WINDOW
    | 0x40000 // UD_IP_CSUM
    | 0x200000 // MEM_MGT_EXTENSIONS
    | 0x1000000; // MEM_WINDOW_TYPE_2B

/// QUERY_DEVICE: struct ib_uverbs_query_device_resp.
pub fn query_device(d: &Daemon, _req: &Req) -> Result<Resp, i32> {
    let guid = d.id.node_guid.to_be();
    let mut o = Out::new(176);
    o.u64(0, FW.0 << 32 | FW.1 << 16 | FW.2)
        .u64(8, guid)
        .u64(16, guid)
        .u64(24, u64::MAX) // max_mr_size
        .u64(32, 0xffff_ffff_ffff_f000) // page_size_cap
        .u32(40, 0x02c9) // vendor_id (Mellanox OUI)
        .u32(44, u32::from(PCI_DEVICE)) // vendor_part_id
        .u32(48, 0) // hw_ver
        .u32(52, 1 << 17) // max_qp
        .u32(56, 1 << LOG_MAX_QP_SZ) // max_qp_wr
        .u32(60, DEVICE_CAP_FLAGS)
        .u32(64, MAX_SGE) // max_sge
        .u32(68, MAX_SGE) // max_sge_rd
        .u32(72, 1 << 24) // max_cq
        .u32(76, MAX_CQE)
        .u32(80, 1 << 24) // max_mr
        .u32(84, 1 << 24) // max_pd
        .u32(88, MAX_RD_ATOMIC) // max_qp_rd_atom
        .u32(92, 0) // max_ee_rd_atom
        .u32(96, MAX_RD_ATOMIC << 17) // max_res_rd_atom
        .u32(100, MAX_RD_ATOMIC) // max_qp_init_rd_atom
        .u32(104, 0) // max_ee_init_rd_atom
        .u32(108, 1) // atomic_cap: IBV_ATOMIC_HCA
        .u32(112, 0) // max_ee
        .u32(116, 0) // max_rdd
        .u32(120, 1 << 24) // max_mw
        .u32(124, 0) // max_raw_ipv6_qp
        .u32(128, 0) // max_raw_ethy_qp
        .u32(132, 1 << 21) // max_mcast_grp
        .u32(136, 240) // max_mcast_qp_attach
        .u32(140, 240 << 21) // max_total_mcast_qp_attach
        .u32(144, i32::MAX as u32) // max_ah
        .u32(148, 0) // max_fmr
        .u32(152, 0) // max_map_per_fmr
        .u32(156, 1 << 23) // max_srq
        .u32(160, MAX_SRQ_WR)
        .u32(164, MAX_SGE + 1) // max_srq_sge
        .u16(168, 1) // max_pkeys (RoCE)
        .u8(170, 16) // local_ca_ack_delay
        .u8(171, 1); // phys_port_cnt
    Ok(Resp { core: o.done(), ..Default::default() })
}

/// EX QUERY_DEVICE: struct ib_uverbs_ex_query_device_resp — the base
/// attributes, then no ODP, no timestamps, no RSS/TSO/tag matching, CQ
/// moderation as mlx5 reports it; cut to the room userspace gave (the
/// kernel's response_length says how much was written).
pub fn query_device_ex(d: &Daemon, req: &Req) -> Result<Resp, i32> {
    if u32_at(&req.core, 0) != 0 {
        return Err(errno::EINVAL); // comp_mask
    }
    let base = query_device(d, req)?.core;
    let mut o = Out::new(EX_QUERY_DEVICE_LEN);
    o.bytes(0, &base)
        .u32(176, 0) // comp_mask
        .u32(180, req.core_out.min(EX_QUERY_DEVICE_LEN) as u32) // response_length
        .u64(224, u64::from(DEVICE_CAP_FLAGS)) // device_cap_flags_ex
        .u16(280, u16::MAX) // max_cq_moderation_count
        .u16(282, 4095); // max_cq_moderation_period (µs)
    Ok(Resp { core: o.done(), note: format!("out={}", req.core_out), ..Default::default() })
}

/// Size of struct ib_uverbs_ex_query_device_resp.
const EX_QUERY_DEVICE_LEN: usize = 304;

/// QUERY_PORT: struct ib_uverbs_query_port_resp of port 1 (RoCE; active
/// unless its netdev is down).
pub fn query_port(d: &Daemon, req: &Req) -> Result<Resp, i32> {
    let port = u8_at(&req.core, 0);
    if port != 1 {
        return Err(errno::EINVAL);
    }
    Ok(Resp { core: port_attr(d.port_up.load(std::sync::atomic::Ordering::Acquire)), note: format!("port={port}"), ..Default::default() })
}

/// Active speed of the port (`IB_SPEED_EDR`: 25 Gb/s per lane).
pub const ACTIVE_SPEED: u8 = 32;

/// struct ib_uverbs_query_port_resp of port 1 (the write command's
/// response, and the first 40 bytes of the ioctl's): ACTIVE / LINK_UP, or
/// DOWN / DISABLED while its netdev is down (`mlx5_query_port_roce`).
pub fn port_attr(up: bool) -> Vec<u8> {
    let mut o = Out::new(40);
    o.u32(0, 0x0401_0000) // port_cap_flags: CM_SUP | IP_BASED_GIDS
        .u32(4, 1 << 30) // max_msg_sz
        .u32(8, 0)
        .u32(12, 0)
        .u32(16, GID_TBL_LEN)
        .u16(20, 1) // pkey_tbl_len
        .u16(22, 0) // lid
        .u16(24, 0) // sm_lid
        .u8(26, if up { 4 } else { 1 }) // state ACTIVE / DOWN
        .u8(27, MAX_MTU)
        .u8(28, ACTIVE_MTU)
        .u8(29, 0) // lmc
        .u8(30, 0) // max_vl_num
        .u8(31, 0) // sm_sl
        .u8(32, 0) // subnet_timeout
        .u8(33, 0) // init_type_reply
        .u8(34, 2) // active_width 4X
        .u8(35, ACTIVE_SPEED)
        .u8(36, if up { 5 } else { 3 }) // phys_state LinkUp / Disabled
        .u8(37, 2) // link_layer Ethernet
        .u8(38, 0); // flags
    o.done()
}
