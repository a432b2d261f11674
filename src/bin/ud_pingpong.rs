//! `verbs-ud-pingpong`: rdma-core's `ibv_ud_pingpong` on this crate. One
//! UD QP each side (Q_Key 0x11111111) and an address handle for the peer;
//! receives land 40 bytes early, leaving room for the GRH. Options, TCP
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
    AhAttr, GlobalRoute, Init, QpCap, QpInitAttr, QueuePair, Rts, SqPsnAttr, Ud, UdInitAttr, UdQp,
    UdRtrAttr,
};
use verbs::wr::{Sge, UdDest};
use verbs::{AccessFlags, Ah, CompChannel, Cq, Mr, Pd};

/// `0x11111111`, both sides' Q_Key.
const QKEY: u32 = 0x1111_1111;
/// Room for the GRH in front of every received message.
const GRH_ROOM: usize = 40;

fn main() -> ExitCode {
    dev::run_tool(Tool::Ud, pingpong)
}

/// Where sends go.
struct Peer<'q, 'a> {
    ah: &'q Ah<'a>,
    qpn: u32,
}

impl Peer<'_, '_> {
    fn dest(&self) -> UdDest<'_> {
        UdDest {
            ah: self.ah,
            remote_qpn: self.qpn,
            remote_qkey: QKEY,
        }
    }
}

struct UdEndpoint<'q, 'a> {
    qp: &'q mut QueuePair<'a, Ud, Rts>,
    cq: CqSide<'q, 'a>,
    recv_sge: Sge,
    out: Outgoing<'q, 'a>,
    peer: Peer<'q, 'a>,
}

impl Endpoint for UdEndpoint<'_, '_> {
    fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32> {
        self.cq.poll(out)
    }
    fn wait_event(&mut self) -> Result<(), String> {
        self.cq.wait_event()
    }
    fn post_recv(&mut self, n: u32) -> u32 {
        dev::post_recvs(self.qp, &self.recv_sge, n)
    }
    fn post_send(&mut self, _qp: usize) -> bool {
        self.out.post(self.qp, Some(self.peer.dest()))
    }
    fn qp_index(&self, _qp_num: u32) -> Option<usize> {
        Some(0)
    }
}

/// `pp_connect_ctx`: RTR, RTS with our PSN, and the AH towards `rem`.
fn connect<'a, 'p>(
    qp: QueuePair<'a, Ud, Init>,
    pd: &'p Pd<'p>,
    o: &Opts,
    my_psn: u32,
    rem: &Dest,
) -> Result<(QueuePair<'a, Ud, Rts>, Ah<'p>), String> {
    let qp = qp
        .into_rtr(UdRtrAttr)
        .map_err(|_| "Failed to modify QP to RTR".to_owned())?;
    let qp = qp
        .into_rts(SqPsnAttr { sq_psn: my_psn })
        .map_err(|_| "Failed to modify QP to RTS".to_owned())?;
    let grh = dev::has_gid(rem).then_some(GlobalRoute {
        dgid: rem.gid,
        flow_label: 0,
        sgid_index: o.gid_idx as u8,
        hop_limit: 64,
        traffic_class: 0,
    });
    let attr = AhAttr {
        grh,
        dlid: rem.lid as u16,
        sl: o.sl as u8,
        src_path_bits: 0,
        static_rate: 0,
        port_num: o.ib_port,
    };
    let ah = Ah::create(pd, &attr).map_err(|_| "Failed to create AH".to_owned())?;
    Ok((qp, ah))
}

/// `main` after the options; `Err` is the message for stderr (may be
/// empty when already printed).
fn pingpong(o: &Opts) -> Result<(), String> {
    let mut rand = Rand48::from_pid_and_time();
    let page_size = rustix::param::page_size();
    let list = dev::device_list()?;
    let size = o.size as usize;
    let ctx = dev::open(&list, o.ib_dev.as_deref())?;
    let port = ctx
        .query_port(o.ib_port)
        .map_err(|_| format!("Unable to query port info for port {}", o.ib_port))?;
    let mtu = i64::from(port.active_mtu.bytes());
    if o.size as i32 as i64 > mtu {
        return Err(format!("Requested size larger than port MTU ({mtu})"));
    }
    let channel = if o.events {
        Some(CompChannel::create(&ctx).map_err(|_| "Couldn't create completion channel")?)
    } else {
        None
    };
    let pd = Pd::alloc(&ctx).map_err(|_| "Couldn't allocate PD")?;
    let mut mr = Mr::reg(
        &pd,
        dev::page_buf(size + GRH_ROOM, 0x7b)?,
        AccessFlags::LOCAL_WRITE,
    )
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
    let qp = UdQp::create(
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
    let init = UdInitAttr {
        pkey_index: 0,
        port_num: o.ib_port,
        qkey: QKEY,
    };
    let mut qp = qp
        .into_init(init)
        .map_err(|_| "Failed to modify QP to INIT")?;
    let recv_sge = Sge {
        addr: mr.addr(),
        length: o.size + GRH_ROOM as u32,
        lkey: mr.lkey(),
    };

    let mut routs = dev::post_recvs(&mut qp, &recv_sge, o.rx_depth);
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
        false,
        "Could not get local gid for gid index ",
    )?;
    println!("{}", report::local_line(&my, true));

    let (rem, mut qp, ah) = match &o.server {
        Some(host) => {
            let rem = exchange::client(host, o.port, &[my]).ok_or("")?[0];
            println!("{}", report::remote_line(&rem));
            let (qp, ah) = connect(qp, &pd, o, my.psn, &rem)?;
            (rem, qp, ah)
        }
        None => {
            let mut server = Server::accept(o.port).ok_or("")?;
            let rem = server.read_dests(1).ok_or("")?[0];
            let (qp, ah) = connect(qp, &pd, o, my.psn, &rem)
                .map_err(|e| format!("{e}\nCouldn't connect to remote QP"))?;
            server.finish(&[my]).ok_or("")?;
            println!("{}", report::remote_line(&rem));
            (rem, qp, ah)
        }
    };

    let mut pending = [RECV_WRID];
    if o.server.is_some() && o.chk {
        dev::fill_chk(&mut mr, GRH_ROOM, size, page_size);
    }
    let mut out = Outgoing::new(&mr, GRH_ROOM, o.size, inline);
    let peer = Peer {
        ah: &ah,
        qpn: rem.qpn,
    };
    if o.server.is_some() {
        if !out.post(&mut qp, Some(peer.dest())) {
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
        rc_messages: false,
    };
    let done = {
        let mut ep = UdEndpoint {
            qp: &mut qp,
            cq: CqSide::new(&cq, channel.as_ref(), 2),
            recv_sge,
            out,
            peer,
        };
        run::run(&mut ep, params, &mut routs, &mut pending)?
    };
    let usec = start.elapsed().as_micros() as i64;
    for line in report::result_lines(o.size, o.iters, usec) {
        println!("{line}");
    }
    if o.server.is_none() && o.chk {
        dev::check_chk(&mr, GRH_ROOM, size, page_size);
    }

    let _ = cq.ack_events(done.cq_events);
    qp.destroy().map_err(|_| "Couldn't destroy QP")?;
    cq.destroy().map_err(|_| "Couldn't destroy CQ")?;
    mr.destroy().map_err(|_| "Couldn't deregister MR")?;
    ah.destroy().map_err(|_| "Couldn't destroy AH")?;
    pd.destroy().map_err(|_| "Couldn't deallocate PD")?;
    if let Some(ch) = channel {
        ch.destroy();
    }
    Ok(())
}
