//! `verbs-rc-pingpong`: rdma-core's `ibv_rc_pingpong` on this crate. One
//! RC QP each side; the client sends first, each side sends its next
//! message once its previous send and a receive completed. Options, TCP
//! exchange, output and exit status as in C (see `common/pingpong`).

#[allow(dead_code)]
#[path = "common/devlist.rs"]
mod devlist;
#[path = "common/getopt.rs"]
mod getopt;
#[allow(dead_code)]
#[path = "common/pingpong/mod.rs"]
mod pingpong;
#[allow(dead_code)]
#[path = "common/strings.rs"]
mod strings;

use std::process::ExitCode;
use std::time::Instant;

use pingpong::device::{self as dev, CqSide, Outgoing};
use pingpong::exchange::{self, Dest, Server};
use pingpong::opts::{Opts, Tool};
use pingpong::report::{self, Rand48};
use pingpong::run::{self, Completion, Endpoint, Params, RECV_WRID, SEND_WRID};
use verbs::qp::{
    AhAttr, ConnInitAttr, GlobalRoute, Init, QpAccess, QpCap, QpInitAttr, QueuePair, Rc, RcQp,
    RcRtrAttr, RcRtsAttr, Rts,
};
use verbs::wr::Sge;
use verbs::{AccessFlags, CompChannel, Cq, Mr, Pd};

fn main() -> ExitCode {
    dev::run_tool(Tool::Rc, pingpong)
}

/// The QP and CQ during the loop.
struct RcEndpoint<'q, 'a> {
    qp: &'q mut QueuePair<'a, Rc, Rts>,
    cq: CqSide<'q, 'a>,
    sge: Sge,
    out: Outgoing<'q, 'a>,
}

impl Endpoint for RcEndpoint<'_, '_> {
    fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32> {
        self.cq.poll(out)
    }
    fn wait_event(&mut self) -> Result<(), String> {
        self.cq.wait_event()
    }
    fn post_recv(&mut self, n: u32) -> u32 {
        dev::post_recvs(self.qp, &self.sge, n)
    }
    fn post_send(&mut self, _qp: usize) -> bool {
        self.out.post(self.qp, None)
    }
    fn qp_index(&self, _qp_num: u32) -> Option<usize> {
        Some(0)
    }
}

/// `pp_connect_ctx`: INIT -> RTR -> RTS towards `rem`.
fn connect<'a>(
    qp: QueuePair<'a, Rc, Init>,
    o: &Opts,
    my_psn: u32,
    rem: &Dest,
) -> Result<QueuePair<'a, Rc, Rts>, String> {
    let grh = dev::has_gid(rem).then_some(GlobalRoute {
        dgid: rem.gid,
        flow_label: 0,
        sgid_index: o.gid_idx as u8,
        hop_limit: 1,
        traffic_class: 0,
    });
    let rtr = RcRtrAttr {
        path_mtu: o.mtu,
        dest_qp_num: rem.qpn,
        rq_psn: rem.psn,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah_attr: AhAttr {
            grh,
            dlid: rem.lid as u16,
            sl: o.sl as u8,
            src_path_bits: 0,
            static_rate: 0,
            port_num: o.ib_port,
        },
    };
    let qp = qp
        .into_rtr(rtr)
        .map_err(|_| "Failed to modify QP to RTR".to_owned())?;
    let rts = RcRtsAttr {
        sq_psn: my_psn,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    qp.into_rts(rts)
        .map_err(|_| "Failed to modify QP to RTS".to_owned())
}

/// `main` after the options; `Err` is the message for stderr (may be
/// empty when already printed).
fn pingpong(o: &Opts) -> Result<(), String> {
    let mut rand = Rand48::from_pid_and_time();
    let page_size = rustix::param::page_size();
    let list = dev::device_list()?;
    let ctx = dev::open(&list, o.ib_dev.as_deref())?;
    let channel = if o.events {
        Some(CompChannel::create(&ctx).map_err(|_| "Couldn't create completion channel")?)
    } else {
        None
    };
    let pd = Pd::alloc(&ctx).map_err(|_| "Couldn't allocate PD")?;
    dev::refuse_unsupported(&ctx, o, Tool::Rc)?;
    let size = o.size as usize;
    let mut mr = Mr::reg(&pd, dev::page_buf(size, 0x7b)?, AccessFlags::LOCAL_WRITE)
        .map_err(|_| "Couldn't register MR")?;
    let cq =
        Cq::create(&ctx, o.rx_depth + 1, channel.as_ref(), 0).map_err(|_| "Couldn't create CQ")?;
    let cap = QpCap {
        max_send_wr: 1,
        max_recv_wr: o.rx_depth,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let qp = RcQp::create(
        &pd,
        QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: None,
            cap,
            sq_sig_all: false,
        },
    )
    .map_err(|_| "Couldn't create QP")?;
    let inline = qp.cap().max_inline_data >= o.size;
    let init = ConnInitAttr {
        pkey_index: 0,
        port_num: o.ib_port,
        access: QpAccess::empty(),
    };
    let mut qp = qp
        .into_init(init)
        .map_err(|_| "Failed to modify QP to INIT")?;
    let sge = Sge {
        addr: mr.addr(),
        length: o.size,
        lkey: mr.lkey(),
    };

    let mut routs = dev::post_recvs(&mut qp, &sge, o.rx_depth);
    if routs < o.rx_depth {
        return Err(format!("Couldn't post receive ({routs})"));
    }
    if o.events {
        cq.req_notify(false)
            .map_err(|_| "Couldn't request CQ notification")?;
    }
    let my = dev::local_dest(
        &ctx,
        o,
        qp.qp_num(),
        rand.psn(),
        true,
        "can't read sgid of index ",
    )?;
    println!("{}", report::local_line(&my, false));

    let mut qp = match &o.server {
        Some(host) => {
            let rem = exchange::client(host, o.port, &[my]).ok_or("")?[0];
            println!("{}", report::remote_line(&rem));
            connect(qp, o, my.psn, &rem)?
        }
        None => {
            let mut server = Server::accept(o.port).ok_or("")?;
            let rem = server.read_dests(1).ok_or("")?[0];
            let qp = connect(qp, o, my.psn, &rem)
                .map_err(|e| format!("{e}\nCouldn't connect to remote QP"))?;
            server.finish(&[my]).ok_or("")?;
            println!("{}", report::remote_line(&rem));
            qp
        }
    };

    let mut pending = [RECV_WRID];
    if o.server.is_some() && o.chk {
        dev::fill_chk(&mut mr, 0, size, page_size);
    }
    let mut out = Outgoing::new(&mr, 0, o.size, inline);
    if o.server.is_some() {
        if !out.post(&mut qp, None) {
            return Err("Couldn't post send".into());
        }
        pending[0] |= SEND_WRID;
    }

    let start = Instant::now();
    let params = Params {
        iters: o.iters,
        rx_depth: o.rx_depth,
        refill_at: 1,
        batch: 2,
        events: o.events,
        rc_messages: true,
    };
    let done = {
        let cq = CqSide::new(&cq, channel.as_ref(), 2);
        let mut ep = RcEndpoint {
            qp: &mut qp,
            cq,
            sge,
            out,
        };
        run::run(&mut ep, params, &mut routs, &mut pending)?
    };
    let usec = start.elapsed().as_micros() as i64;
    for line in report::result_lines(o.size, o.iters, usec) {
        println!("{line}");
    }
    if o.server.is_none() && o.chk {
        dev::check_chk(&mr, 0, size, page_size);
    }

    let _ = cq.ack_events(done.cq_events);
    qp.destroy().map_err(|_| "Couldn't destroy QP")?;
    cq.destroy().map_err(|_| "Couldn't destroy CQ")?;
    mr.destroy().map_err(|_| "Couldn't deregister MR")?;
    pd.destroy().map_err(|_| "Couldn't deallocate PD")?;
    if let Some(ch) = channel {
        ch.destroy();
    }
    Ok(())
}
