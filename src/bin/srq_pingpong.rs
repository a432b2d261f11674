//! `verbs-srq-pingpong`: rdma-core's `ibv_srq_pingpong` on this crate.
//! `-q` RC QPs each side share one receive queue (SRQ) and one CQ; each QP
//! runs its own ping-pong, the counts are totals. Options, TCP exchange
//! (always 256 addresses each way), output and exit status as in C (see
//! `common/pingpong`).

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
use pingpong::opts::{Opts, Tool, MAX_QP};
use pingpong::report::{self, Rand48};
use pingpong::run::{self, Completion, Endpoint, Params, RECV_WRID, SEND_WRID};
use verbs::qp::{
    AhAttr, ConnInitAttr, GlobalRoute, Init, QpAccess, QpCap, QpInitAttr, QueuePair, Rc, RcQp,
    RcRtrAttr, RcRtsAttr, Rts,
};
use verbs::srq::{Srq, SrqInitAttr};
use verbs::wr::{RecvWr, Sge};
use verbs::{AccessFlags, CompChannel, Cq, Mr, Pd};

fn main() -> ExitCode {
    dev::run_tool(Tool::Srq, pingpong)
}

struct SrqEndpoint<'q, 'a> {
    qps: &'q mut [QueuePair<'a, Rc, Rts>],
    qpns: Vec<u32>,
    srq: &'q Srq<'a>,
    cq: CqSide<'q, 'a>,
    sge: Sge,
    out: Outgoing<'q, 'a>,
}

impl Endpoint for SrqEndpoint<'_, '_> {
    fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32> {
        self.cq.poll(out)
    }
    fn wait_event(&mut self) -> Result<(), String> {
        self.cq.wait_event()
    }
    fn post_recv(&mut self, n: u32) -> u32 {
        post_srq_recvs(self.srq, &self.sge, n)
    }
    fn post_send(&mut self, qp: usize) -> bool {
        self.out.post(&mut self.qps[qp], None)
    }
    fn qp_index(&self, qp_num: u32) -> Option<usize> {
        self.qpns.iter().position(|&n| n == qp_num)
    }
}

/// `pp_post_recv`: `n` receives on the SRQ, one per call.
fn post_srq_recvs(srq: &Srq<'_>, sge: &Sge, n: u32) -> u32 {
    let wr = [RecvWr {
        wr_id: RECV_WRID,
        sg_list: core::slice::from_ref(sge),
    }];
    (0..n).take_while(|_| srq.post_recv(&wr).is_ok()).count() as u32
}

/// `pp_connect_ctx`: each QP to its peer; the GRH uses the first remote
/// GID for all, as C does.
fn connect<'a>(
    qps: Vec<QueuePair<'a, Rc, Init>>,
    o: &Opts,
    mine: &[Dest],
    rem: &[Dest],
) -> Result<Vec<QueuePair<'a, Rc, Rts>>, String> {
    let grh = dev::has_gid(&rem[0]).then_some(GlobalRoute {
        dgid: rem[0].gid,
        flow_label: 0,
        sgid_index: o.gid_idx as u8,
        hop_limit: 1,
        traffic_class: 0,
    });
    let mut out = Vec::with_capacity(qps.len());
    for (i, qp) in qps.into_iter().enumerate() {
        let rtr = RcRtrAttr {
            path_mtu: o.mtu,
            dest_qp_num: rem[i].qpn,
            rq_psn: rem[i].psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: AhAttr {
                grh,
                dlid: rem[i].lid as u16,
                sl: o.sl as u8,
                src_path_bits: 0,
                static_rate: 0,
                port_num: o.ib_port,
            },
        };
        let qp = qp
            .into_rtr(rtr)
            .map_err(|_| format!("Failed to modify QP[{i}] to RTR"))?;
        let rts = RcRtsAttr {
            sq_psn: mine[i].psn,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        };
        out.push(
            qp.into_rts(rts)
                .map_err(|_| format!("Failed to modify QP[{i}] to RTS"))?,
        );
    }
    Ok(out)
}

/// `main` after the options; `Err` is the message for stderr (may be
/// empty when already printed).
fn pingpong(o: &Opts) -> Result<(), String> {
    let mut rand = Rand48::from_pid_and_time();
    let page_size = rustix::param::page_size();
    let num_qp = o.num_qp as usize;
    let list = dev::device_list()?;
    let size = o.size as usize;
    let ctx = dev::open(&list, o.ib_dev.as_deref())?;
    dev::refuse_unsupported(&ctx, o, Tool::Srq)?;
    let channel = if o.events {
        Some(CompChannel::create(&ctx).map_err(|_| "Couldn't create completion channel")?)
    } else {
        None
    };
    let pd = Pd::alloc(&ctx).map_err(|_| "Couldn't allocate PD")?;
    let mut mr = Mr::reg(&pd, dev::page_buf(size, 0)?, AccessFlags::LOCAL_WRITE)
        .map_err(|_| "Couldn't register MR")?;
    let cq = Cq::create(&ctx, o.rx_depth + o.num_qp, channel.as_ref(), 0)
        .map_err(|_| "Couldn't create CQ")?;
    let srq = Srq::create(
        &pd,
        SrqInitAttr {
            max_wr: o.rx_depth,
            max_sge: 1,
            srq_limit: 0,
        },
    )
    .map_err(|_| "Couldn't create SRQ")?;
    let cap = QpCap {
        max_send_wr: 1,
        max_recv_wr: 0,
        max_send_sge: 1,
        max_recv_sge: 0,
        max_inline_data: 0,
    };
    let mut inline = false;
    let mut created = Vec::with_capacity(num_qp);
    for i in 0..num_qp {
        let init = QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: Some(&srq),
            cap,
            sq_sig_all: false,
        };
        let qp = RcQp::create(&pd, init).map_err(|_| format!("Couldn't create QP[{i}]"))?;
        inline |= qp.cap().max_inline_data >= o.size;
        created.push(qp);
    }
    let mut qps = Vec::with_capacity(num_qp);
    for (i, qp) in created.into_iter().enumerate() {
        let init = ConnInitAttr {
            pkey_index: 0,
            port_num: o.ib_port,
            access: QpAccess::empty(),
        };
        qps.push(
            qp.into_init(init)
                .map_err(|_| format!("Failed to modify QP[{i}] to INIT"))?,
        );
    }
    let sge = Sge {
        addr: mr.addr(),
        length: o.size,
        lkey: mr.lkey(),
    };

    let mut routs = post_srq_recvs(&srq, &sge, o.rx_depth);
    if routs < o.rx_depth {
        return Err(format!("Couldn't post receive ({routs})"));
    }
    if o.events {
        cq.req_notify(false)
            .map_err(|_| "Couldn't request CQ notification")?;
    }
    let mut mine = vec![Dest::default(); MAX_QP];
    for (i, qp) in qps.iter().enumerate() {
        mine[i] = dev::local_dest(
            &ctx,
            o,
            qp.qp_num(),
            rand.psn(),
            true,
            "Could not get local gid for gid index ",
        )?;
        println!("{}", report::local_line(&mine[i], false));
    }

    let mut qps = match &o.server {
        Some(host) => {
            let rem = exchange::client(host, o.port, &mine).ok_or("")?;
            for d in &rem[..num_qp] {
                println!("{}", report::remote_line(d));
            }
            connect(qps, o, &mine, &rem)?
        }
        None => {
            let mut server = Server::accept(o.port).ok_or("")?;
            let rem = server.read_dests(MAX_QP).ok_or("")?;
            let qps = connect(qps, o, &mine, &rem)
                .map_err(|e| format!("{e}\nCouldn't connect to remote QP"))?;
            server.finish(&mine).ok_or("")?;
            for d in &rem[..num_qp] {
                println!("{}", report::remote_line(d));
            }
            qps
        }
    };

    let mut pending = vec![RECV_WRID; num_qp];
    if o.server.is_some() && o.chk {
        dev::fill_chk(&mut mr, 0, size, page_size);
    }
    let mut out = Outgoing::new(&mr, 0, o.size, inline);
    if o.server.is_some() {
        for (i, qp) in qps.iter_mut().enumerate() {
            if !out.post(qp, None) {
                return Err("Couldn't post send".into());
            }
            pending[i] = RECV_WRID | SEND_WRID;
        }
    }

    let start = Instant::now();
    let batch = num_qp + o.rx_depth as usize;
    let params = Params {
        iters: o.iters,
        rx_depth: o.rx_depth,
        refill_at: o.num_qp,
        batch,
        events: o.events,
        rc_messages: false,
    };
    let done = {
        let qpns = qps.iter().map(QueuePair::qp_num).collect();
        let mut ep = SrqEndpoint {
            qps: &mut qps,
            qpns,
            srq: &srq,
            cq: CqSide::new(&cq, channel.as_ref(), batch),
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
    for (i, qp) in qps.into_iter().enumerate() {
        qp.destroy()
            .map_err(|_| format!("Couldn't destroy QP[{i}]"))?;
    }
    srq.destroy().map_err(|_| "Couldn't destroy SRQ")?;
    cq.destroy().map_err(|_| "Couldn't destroy CQ")?;
    mr.destroy().map_err(|_| "Couldn't deregister MR")?;
    pd.destroy().map_err(|_| "Couldn't deallocate PD")?;
    if let Some(ch) = channel {
        ch.destroy();
    }
    Ok(())
}
