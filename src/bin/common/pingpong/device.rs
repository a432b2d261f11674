//! The device-side steps the three pingpong programs share: finding and
//! opening the device, refusing what this crate cannot do, the work
//! buffer, the local address, posting receives and the `Endpoint` glue
//! between a CQ and the completion loop. Messages are the C programs'.

use std::process::ExitCode;

use super::exchange::Dest;
use super::opts::{self, Opts, Stop, Tool};
use super::run::{Completion, RECV_WRID, SEND_WRID};
use verbs::cq::get_cq_event;
use verbs::discovery::{self, DeviceList};
use verbs::qp::{CanPostRecv, CanPostSend, QueuePair, Transport};
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge, UdDest};
use verbs::{CompChannel, Context, Cq, Mr, Wc};

/// A tool's `main`: parses the command line (on a bad one prints what C
/// prints), runs `pingpong` with the options, prints its error message if
/// it has one, and gives C's exit status (0, or 1 on any failure).
pub(crate) fn run_tool(tool: Tool, pingpong: impl FnOnce(&Opts) -> Result<(), String>) -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let prog = argv.first().cloned().unwrap_or_default();
    let o = match opts::parse(tool, &argv) {
        Ok(o) => o,
        Err(Stop { stderr, usage }) => {
            if let Some(e) = stderr {
                eprintln!("{e}");
            }
            if usage {
                print!("{}", opts::usage(tool, &prog));
            }
            return ExitCode::from(1);
        }
    };
    match pingpong(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("{msg}");
            }
            ExitCode::from(1)
        }
    }
}

/// `ibv_get_device_list` and the choice of `-d` (or the first device).
pub(crate) fn device_list() -> Result<DeviceList, String> {
    discovery::devices().map_err(|e| super::super::devlist::list_error_message(&e))
}

/// Opens `-d`'s device, or the first one.
pub(crate) fn open(list: &DeviceList, name: Option<&str>) -> Result<Context, String> {
    let dev = match name {
        None => list.iter().next().ok_or("No IB devices found".to_owned())?,
        Some(n) => list
            .by_name(n)
            .map_err(|_| format!("IB device {n} not found"))?,
    };
    Context::open(dev).map_err(|_| format!("Couldn't get context for {}", dev.name()))
}

/// What rc_pingpong and srq_pingpong check after opening the device for
/// `-o`/`-O` (on-demand paging), `-t` (timestamps) and `-j` (device
/// memory): the C messages when the device lacks the feature; when it has
/// it, that this implementation does not do it (none of the three is in
/// the crate's API). `-N` and `-U` need `ibv_wr_*` and parent domains,
/// which the crate does not have either.
pub(crate) fn refuse_unsupported(ctx: &Context, o: &Opts, tool: Tool) -> Result<(), String> {
    const ODP_SUPPORT: u64 = 1;
    const ODP_IMPLICIT: u64 = 1 << 1;
    const ODP_SEND: u32 = 1;
    const ODP_RECV: u32 = 1 << 1;
    const ODP_SRQ_RECV: u32 = 1 << 5;
    let me = match tool {
        Tool::Rc => "verbs-rc-pingpong",
        Tool::Ud => "verbs-ud-pingpong",
        Tool::Srq => "verbs-srq-pingpong",
    };
    if o.odp || o.ts || o.dm {
        let attr = ctx
            .query_device()
            .map_err(|_| "Couldn't query device for its features".to_owned())?;
        let ex = &attr.ex;
        if o.odp {
            let need = if tool == Tool::Srq {
                ODP_SEND | ODP_SRQ_RECV
            } else {
                ODP_SEND | ODP_RECV
            };
            let caps = ex.odp_caps.general_caps;
            if caps & ODP_SUPPORT == 0 || ex.odp_caps.per_transport_caps.rc_odp_caps & need != need
            {
                return Err(if tool == Tool::Srq {
                    "The device isn't ODP capable or does not support RC send, receive and srq with ODP"
                } else {
                    "The device isn't ODP capable or does not support RC send and receive with ODP"
                }
                .to_owned());
            }
            if o.implicit_odp && caps & ODP_IMPLICIT == 0 {
                return Err("The device doesn't support implicit ODP".to_owned());
            }
            return Err(format!("{me}: on demand paging is not implemented"));
        }
        if o.ts {
            if ex.timestamp_mask == 0 {
                return Err("The device isn't completion timestamp capable".to_owned());
            }
            return Err(format!("{me}: completion timestamps are not implemented"));
        }
        if o.dm {
            if ex.max_dm_size == 0 {
                return Err("Device doesn't support dm allocation".to_owned());
            }
            return Err(format!("{me}: device memory is not implemented"));
        }
    }
    if o.cc_unprotected {
        return Err(format!("{me}: parent domains (-U) are not implemented"));
    }
    if o.new_send {
        return Err(format!(
            "{me}: the ibv_wr_* send API (-N) is not implemented"
        ));
    }
    Ok(())
}

/// A work buffer of `len` bytes starting on a page boundary (C:
/// `memalign(page_size, …)`), every byte `fill`; the region registered
/// over it owns it.
pub(crate) fn page_buf(len: usize, fill: u8) -> Result<verbs::PageBuf, String> {
    let mut b = verbs::PageBuf::new(len).map_err(|_| "Couldn't allocate work buf.".to_owned())?;
    b.fill(fill);
    Ok(b)
}

/// The local address: the port's LID (required unless the link layer is
/// Ethernet), the QPN, a PSN and the GID at `-g` (zeros without it).
pub(crate) fn local_dest(
    ctx: &Context,
    o: &Opts,
    qpn: u32,
    psn: u32,
    need_lid: bool,
    gid_msg: &str,
) -> Result<Dest, String> {
    const LINK_LAYER_ETHERNET: u8 = 2;
    let port = ctx
        .query_port(o.ib_port)
        .map_err(|_| "Couldn't get port info".to_owned())?;
    if need_lid && port.link_layer != LINK_LAYER_ETHERNET && port.lid == 0 {
        return Err("Couldn't get local LID".to_owned());
    }
    let gid = if o.gid_idx >= 0 {
        ctx.query_gid(o.ib_port, o.gid_idx as u32)
            .map_err(|_| format!("{gid_msg}{}", o.gid_idx))?
    } else {
        [0; 16]
    };
    Ok(Dest {
        lid: u32::from(port.lid),
        qpn,
        psn,
        gid,
    })
}

/// `dest->gid.global.interface_id != 0`: the remote side gave a GID, so
/// the path has a GRH.
pub(crate) fn has_gid(d: &Dest) -> bool {
    d.gid[8..].iter().any(|&b| b != 0)
}

/// `pp_post_recv` on a QP: `n` receives of `sge`, one per call; returns
/// how many went in.
pub(crate) fn post_recvs<T: Transport, S: CanPostRecv>(
    qp: &mut QueuePair<'_, T, S>,
    sge: &Sge,
    n: u32,
) -> u32 {
    let wr = [RecvWr {
        wr_id: RECV_WRID,
        sg_list: core::slice::from_ref(sge),
    }];
    (0..n).take_while(|_| qp.post_recv(&wr).is_ok()).count() as u32
}

/// `pp_post_send`'s request: `IBV_WR_SEND` of the message, signaled, and
/// inline (`IBV_SEND_INLINE`) when the QP's `max_inline_data` holds it —
/// then the bytes are copied out of the region at post time, as the
/// provider copies them in C.
pub(crate) struct Outgoing<'q, 'a> {
    sge: Sge,
    inline: Option<(&'q Mr<'a>, usize, Vec<u8>)>,
}

impl<'q, 'a> Outgoing<'q, 'a> {
    /// Sends `len` bytes at `offset` of `mr`; inline if `inline`.
    pub(crate) fn new(mr: &'q Mr<'a>, offset: usize, len: u32, inline: bool) -> Self {
        let sge = Sge {
            addr: mr.addr() + offset as u64,
            length: len,
            lkey: mr.lkey(),
        };
        Self {
            sge,
            inline: inline.then(|| (mr, offset, vec![0; len as usize])),
        }
    }

    /// Posts one send (with a UD destination for UD QPs); false if the
    /// provider refused it.
    pub(crate) fn post<T: Transport, S: CanPostSend>(
        &mut self,
        qp: &mut QueuePair<'_, T, S>,
        ud: Option<UdDest<'_>>,
    ) -> bool {
        let sg = [self.sge];
        let mut wr = SendWr::send(SEND_WRID, &sg).flags(SendFlags::SIGNALED);
        if let Some((mr, offset, data)) = &mut self.inline {
            if mr.read_at(*offset, data).is_err() {
                return false;
            }
            wr = wr.inline(data);
        }
        if let Some(d) = ud {
            wr = wr.ud(d);
        }
        qp.post_send(&[wr]).is_ok()
    }
}

/// The CQ side of an `Endpoint`: polling, events and their count.
pub(crate) struct CqSide<'q, 'a> {
    /// The one CQ of the program.
    pub(crate) cq: &'q Cq<'a>,
    /// Its completion channel with `-e`.
    pub(crate) channel: Option<&'q CompChannel<'a>>,
    wcs: Vec<Wc>,
}

impl<'q, 'a> CqSide<'q, 'a> {
    /// For polling up to `batch` completions at a time.
    pub(crate) fn new(cq: &'q Cq<'a>, channel: Option<&'q CompChannel<'a>>, batch: usize) -> Self {
        Self {
            cq,
            channel,
            wcs: vec![Wc::ZERO; batch.max(1)],
        }
    }

    /// `Endpoint::poll`.
    pub(crate) fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32> {
        let n = out.len().min(self.wcs.len());
        let got = self
            .cq
            .poll(&mut self.wcs[..n])
            .map_err(|e| e.raw_os_error())?;
        for (o, wc) in out.iter_mut().zip(&self.wcs[..got]) {
            *o = Completion {
                wr_id: wc.wr_id(),
                status: wc.status_raw(),
                qp_num: wc.qp_num(),
            };
        }
        Ok(got)
    }

    /// `Endpoint::wait_event`: one event for our CQ, then re-arm.
    pub(crate) fn wait_event(&mut self) -> Result<(), String> {
        let channel = self.channel.ok_or("Failed to get cq_event")?;
        get_cq_event(channel, &[self.cq]).map_err(|_| "Failed to get cq_event".to_owned())?;
        self.cq
            .req_notify(false)
            .map_err(|_| "Couldn't request CQ notification".to_owned())
    }
}

/// `-c` on the sending side: the check byte at the start of each page.
pub(crate) fn fill_chk(mr: &mut verbs::Mr<'_>, at: usize, size: usize, page_size: usize) {
    for i in (0..size).step_by(page_size) {
        // in bounds: i < size and the region holds at + size bytes
        let _ = mr.write_at(at + i, &[super::report::chk_byte(i / page_size)]);
    }
}

/// `-c` on the receiving side: `"invalid data in page %d"` for each page
/// whose first byte is wrong (on stdout, and the exit status stays 0, as
/// in C).
pub(crate) fn check_chk(mr: &verbs::Mr<'_>, at: usize, size: usize, page_size: usize) {
    let mut data = vec![0u8; size];
    if mr.read_at(at, &mut data).is_ok() {
        for page in super::report::invalid_pages(&data, page_size) {
            println!("{}", super::report::invalid_page_line(page));
        }
    }
}
