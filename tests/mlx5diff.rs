//! The differential of issue 26 item 3: our mlx5 send queue against rdma-core's libmlx5, byte
//! for byte. `tests/fixtures/mlx5diff/libmlx5.txt` is what libmlx5 (rdma-core v44, unmodified,
//! on the simulated ConnectX) wrote for a table of send request lists: every RC opcode and UD
//! send, SGE counts 0..max (and one over), inline sizes up to the limit (and one over),
//! unsignaled/signaled/fenced/solicited, lists of three, on four QP geometries; each QP is
//! renewed when it is full (no completions retire its requests); and a UD QP whose ring wraps
//! six times (WQEs of 1 to 3 basic blocks, some across the ring's end), its requests
//! retired by requester CQEs libmlx5 polled (`retire QP INDEX`). Regenerate the file with
//! `scripts/mlx5diff-record.sh` (source: `tests/mlx5diff/record.c`).
//!
//! Every recorded list is replayed, in order, through [`SendQueue::post_with`] (a list of one
//! through [`SendQueue::post_straight`] first, as the provider posts it) into a ring of
//! the geometry our sizing computes (asserted equal to libmlx5's: `wqe_cnt` and the reported
//! caps), filled with 0xee as the recorder filled libmlx5's, and the basic blocks written and
//! the doorbell record must equal libmlx5's; a list libmlx5 refused must be refused at the
//! same index, leaving nothing written. The kind of doorbell libmlx5 rang (BlueFlame copy or
//! 8-byte store), as the daemon's trace saw it, is recorded and tallied against our [`Ring`]
//! but not asserted (the daemon's polling cannot tell them apart reliably: see the test).
//! No field is ignored: every byte of every written basic
//! block is compared (libmlx5 leaves the ctrl segment's signature 0 without `wq_sig`, as we
//! do, and the bytes it does not write keep the ring's 0xee on both sides).
//!
//! The format (one record a line, numbers decimal unless hex):
//! `ah` the UD address handle's attributes; `qp NAME TYPE req WR SGE INL qpn N uidx U wqe_cnt N
//! got MAX_WR MAX_SGE MAX_INLINE bf BF_SIZE cqe_cnt N`; `list QP CASE`; then per request `wr ID
//! OP FLAGS imm IMM inv RKEY raddr A rkey K cmp C swap S ud QPN QKEY` and `sges A:L:K...` or
//! `inline HEX|-`; `end rc RC bad I dbrec HEX [ring BF|DB|-]`; after a refused list, `left
//! INDEX HEX64` for the blocks from the refused request's slot as libmlx5 left them (the doorbell libmlx5 rang, as
//! the simulated NIC's trace saw it: a BlueFlame copy of the WQE or the 8-byte store; `-`
//! when the daemon missed it); `bb INDEX HEX64` per basic block written;
//! `retire QP INDEX` after a requester CQE for the WQE at INDEX was polled;
//! `cqe HEX64 wc0 HEX48 wc1 HEX48`: a CQE libmlx5 polled, and its `ibv_wc` (filled with 0x00,
//! then with 0xff before the poll; `wr_id` zeroed) — see [`cqe_parse_equals_libmlx5_poll`].
#![cfg(all(feature = "internals", feature = "mlx5"))]

use std::collections::HashMap;

use verbs::ah::{AhAttr, GlobalRoute};
use verbs::providers::mlx5::av::{build_av, roce_v2_sport, Link};
use verbs::providers::mlx5::buf::WqBuf;
use verbs::providers::mlx5::sizing::{sq_size, DeviceLimits};
use verbs::providers::mlx5::sq::{BlueFlame, Req, Ring, SendQueue, SqConfig, UdAv};
use verbs::qp::QpType;
use verbs::wr::{Payload, SendFlags, SendOp, SendWr, Sge};

const DATA: &str = include_str!("fixtures/mlx5diff/libmlx5.txt");

/// What verbs-simd's `GET_CONTEXT` answers (sim/src/server/device.rs).
const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };

fn hex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn num<T: core::str::FromStr>(s: &str) -> T
where
    T::Err: core::fmt::Debug,
{
    s.parse().unwrap()
}

/// One recorded request, owning its gather list or inline bytes.
struct Wr {
    wr_id: u64,
    op: String,
    flags: u32,
    imm: u32,
    inv: u32,
    raddr: u64,
    rkey: u32,
    cmp: u64,
    swap: u64,
    ud: (u32, u32),
    sges: Vec<Sge>,
    inline: Option<Vec<u8>>,
}

fn parse_wr(t: &[&str]) -> Wr {
    // wr ID OP FLAGS imm X inv X raddr X rkey X cmp X swap X ud Q K (sges ...|inline H)
    let mut w = Wr {
        wr_id: num(t[1]),
        op: t[2].to_string(),
        flags: num(t[3]),
        imm: num(t[5]),
        inv: num(t[7]),
        raddr: num(t[9]),
        rkey: num(t[11]),
        cmp: num(t[13]),
        swap: num(t[15]),
        ud: (num(t[17]), num(t[18])),
        sges: Vec::new(),
        inline: None,
    };
    match t[19] {
        "inline" => w.inline = Some(hex(t[20])),
        "sges" => {
            for s in &t[20..] {
                let f: Vec<&str> = s.split(':').collect();
                w.sges.push(Sge { addr: num(f[0]), length: num(f[1]), lkey: num(f[2]) });
            }
        }
        x => panic!("bad wr line: {x}"),
    }
    w
}

fn req<'a>(w: &'a Wr, ud: Option<UdAv>) -> Req<'a> {
    let op = match w.op.as_str() {
        "SEND" => SendOp::Send,
        "SEND_WITH_IMM" => SendOp::SendWithImm { imm: w.imm },
        "SEND_WITH_INV" => SendOp::SendWithInv { invalidate_rkey: w.inv },
        "RDMA_WRITE" => SendOp::RdmaWrite { remote_addr: w.raddr, rkey: w.rkey },
        "RDMA_WRITE_WITH_IMM" => SendOp::RdmaWriteWithImm { remote_addr: w.raddr, rkey: w.rkey, imm: w.imm },
        "RDMA_READ" => SendOp::RdmaRead { remote_addr: w.raddr, rkey: w.rkey },
        "ATOMIC_CMP_AND_SWP" => SendOp::AtomicCmpSwp { remote_addr: w.raddr, rkey: w.rkey, compare: w.cmp, swap: w.swap },
        "ATOMIC_FETCH_AND_ADD" => SendOp::AtomicFetchAdd { remote_addr: w.raddr, rkey: w.rkey, add: w.cmp },
        o => panic!("unknown opcode {o}"),
    };
    let payload = match &w.inline {
        Some(d) => Payload::Inline(d),
        None => Payload::Sges(&w.sges),
    };
    let ud = ud.map(|u| UdAv { remote_qpn: w.ud.0, remote_qkey: w.ud.1, ..u });
    Req { wr_id: w.wr_id, op, flags: SendFlags::from_bits_truncate(w.flags), payload, ud }
}

/// A replayed QP: our send queue over a ring as libmlx5's was.
struct Qp {
    sq: SendQueue,
    buf: WqBuf,
    db: usize,
    wqe_cnt: u32,
    ud: bool,
}

fn new_qp(t: &[&str]) -> Qp {
    // qp NAME TYPE req WR SGE INL qpn N uidx U wqe_cnt N got W S I bf B cqe_cnt C
    let ud = t[2] == "UD";
    let qp_type = if ud { QpType::Ud } else { QpType::Rc };
    let size = sq_size(&LIM, qp_type, num(t[4]), num(t[5]), num(t[6])).unwrap().unwrap();
    let wqe_cnt: u32 = num(t[12]);
    let got: (u32, u32, u32) = (num(t[14]), num(t[15]), num(t[16]));
    assert_eq!(size.wqe_cnt, wqe_cnt, "{}: wqe_cnt", t[1]);
    assert_eq!((size.max_post, size.max_gs, size.max_inline), got, "{}: reported caps", t[1]);
    let db = size.bytes() as usize;
    // The QP's BlueFlame register (a dynamic UAR's, never register 0: enabled), half of
    // bf_reg_size as mlx5dv reports it; libmlx5's default prefers BlueFlame.
    let bf = BlueFlame { enabled: true, prefer: true, buf_size: num(t[18]) };
    let cfg = SqConfig { qpn: num(t[8]), qp_type, size, sq_offset: 0, dbrec_offset: db, sig_all: false, atomics: true, bf };
    let mut buf = WqBuf::new("mlx5diff", db + 8).unwrap();
    assert!(buf.put_bytes(0, &vec![0xee; db]));
    Qp { sq: SendQueue::new("mlx5diff", cfg).unwrap(), buf, db, wqe_cnt, ud }
}

#[test]
fn send_queue_bytes_equal_libmlx5() {
    let lines: Vec<&str> = DATA.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    let mut qps: HashMap<String, Qp> = HashMap::new();
    let mut ah: Option<AhAttr> = None;
    let mut dmac: Option<[u8; 6]> = None;
    let (mut lists, mut blocks, mut refused, mut retired, mut rings, mut missed, mut scribbled) = (0, 0, 0, 0, 0, 0, 0);
    // Lists of one posted through the straight path (`SendQueue::post_straight`).
    let mut straight = 0usize;
    let mut i = 0;
    while i < lines.len() {
        let t: Vec<&str> = lines[i].split_whitespace().collect();
        i += 1;
        match t[0] {
            "ah" => {
                // ah sl S sgid_index G hop_limit H traffic_class C flow_label F dgid HEX
                let dgid: [u8; 16] = hex(t[12]).try_into().unwrap();
                let g = GlobalRoute { dgid, flow_label: num(t[10]), sgid_index: num(t[4]), hop_limit: num(t[6]), traffic_class: num(t[8]) };
                ah = Some(AhAttr { grh: Some(g), sl: num(t[2]), port_num: 1, ..Default::default() });
            }
            "qp" => {
                qps.insert(t[1].to_string(), new_qp(&t));
            }
            "list" => {
                let (name, case) = (t[1], t[2]);
                let mut wrs = Vec::new();
                while lines[i].starts_with("wr ") {
                    wrs.push(parse_wr(&lines[i].split_whitespace().collect::<Vec<_>>()));
                    i += 1;
                }
                let end: Vec<&str> = lines[i].split_whitespace().collect();
                i += 1;
                assert_eq!(end[0], "end");
                let (rc, bad): (i32, i32) = (num(end[2]), num(end[4]));
                let dbrec = hex(end[6]);
                let mut bbs = Vec::new();
                while i < lines.len() && lines[i].starts_with("bb ") {
                    let b: Vec<&str> = lines[i].split_whitespace().collect();
                    bbs.push((num::<u32>(b[1]), hex(b[2])));
                    i += 1;
                }
                let qp = qps.get_mut(name).unwrap_or_else(|| panic!("{name}: no qp line"));
                let ud = if qp.ud {
                    // The destination MAC is the kernel's answer to CREATE_AH (the simulated
                    // kernel's), not the provider's: taken from libmlx5's WQE (AV bytes 20..26).
                    // (A refused list wrote nothing: the last one's.)
                    if let Some((_, first)) = bbs.first() {
                        dmac = Some(first[16 + 20..16 + 26].try_into().unwrap());
                    }
                    let dmac = dmac.expect("a UD list that wrote something first");
                    let attr = ah.expect("ah line first");
                    let sport = roce_v2_sport(attr.grh.unwrap().flow_label, 0);
                    Some(UdAv { av: build_av(&attr, Link::Roce { dmac, udp_sport: Some(sport) }).unwrap(), remote_qpn: 0, remote_qkey: 0 })
                } else {
                    None
                };
                let before = qp.sq.indices().0;
                // A list of one goes the straight way first, as `Mlx5Qp::post_send` posts it
                // (what that path declines goes to the general path untouched).
                let one = match wrs.as_slice() {
                    [w] if ud.is_none() => {
                        let r = req(w, None);
                        let wr = SendWr { wr_id: r.wr_id, payload: r.payload, op: r.op, flags: r.flags, ud: None };
                        qp.sq.post_straight(&mut qp.buf, &wr).map(|s| s.ring())
                    }
                    _ => None,
                };
                straight += usize::from(one.is_some());
                let res = match one {
                    Some(ring) => Ok(ring),
                    None => qp.sq.post_with(&mut qp.buf, wrs.len(), |k| req(&wrs[k], ud)),
                };
                let what = format!("{name} {case}");
                if rc != 0 {
                    let e = res.expect_err(&format!("{what}: libmlx5 refused (rc {rc}), we posted"));
                    assert_eq!(e.index as i32, bad, "{what}: refused at another request");
                    assert_eq!(qp.sq.indices().0, before, "{what}: a refused list wrote");
                    // Expected to differ: libmlx5 leaves part of a refused request in the ring
                    // (it copies inline data before it finds the size over the limit), we leave
                    // the ring as it was (sq.rs: all-or-nothing). Neither is read by the device
                    // (the doorbell record did not move), but the bytes stay where a later WQE
                    // leaves its padding alone: our ring takes libmlx5's, so later lists compare
                    // exactly, and the blocks it changed are counted.
                    while i < lines.len() && lines[i].starts_with("left ") {
                        let b: Vec<&str> = lines[i].split_whitespace().collect();
                        let (idx, theirs) = (num::<usize>(b[1]), hex(b[2]));
                        if qp.buf.get::<[u8; 64]>(idx * 64).unwrap().as_slice() != theirs.as_slice() {
                            scribbled += 1;
                        }
                        assert!(qp.buf.put_bytes(idx * 64, &theirs));
                        i += 1;
                    }
                    refused += 1;
                } else {
                    let ring = res.unwrap_or_else(|e| panic!("{what}: libmlx5 posted, we refused: {e}"));
                    let kind = match ring {
                        Ring::BlueFlame { .. } => "BF",
                        Ring::Doorbell(_) => "DB",
                        Ring::Nothing => "nothing",
                    };
                    // The daemon tells a BlueFlame copy from an 8-byte store by the register's
                    // bytes against the WQE, once the copy must have landed
                    // (sim/src/server/blueflame.rs): our choice must be libmlx5's. A doorbell the
                    // daemon did not see ("-": its register half reused before a scan) is counted.
                    match end.get(8) {
                        Some(&"-") | None => missed += 1,
                        Some(want) if *want == kind => rings += 1,
                        Some(want) => panic!("{what}: libmlx5 rang {want}, we ring {kind}"),
                    }
                }
                assert_eq!(qp.buf.get::<[u8; 4]>(qp.db + 4).unwrap().as_slice(), dbrec.as_slice(), "{what}: doorbell record");
                let written = qp.sq.indices().0.wrapping_sub(before);
                assert_eq!(written as usize, bbs.len(), "{what}: basic blocks written");
                for (idx, want) in &bbs {
                    assert!(*idx < qp.wqe_cnt);
                    let ours = qp.buf.get::<[u8; 64]>(*idx as usize * 64).unwrap();
                    assert_eq!(hexs(&ours), hexs(want), "{what}: basic block {idx}");
                    blocks += 1;
                }
                lists += 1;
            }
            "cqe" => {}
            "retire" => {
                // a requester CQE libmlx5 polled for the WQE at this index: ours retires too
                let qp = qps.get_mut(t[1]).unwrap();
                qp.sq.complete(num(t[2]));
                retired += 1;
            }
            x => panic!("unknown record {x}"),
        }
    }
    // the table is all there: a truncated file must not pass
    assert!(lists >= 300 && blocks >= 500 && refused >= 5 && retired >= 5, "{lists} lists, {blocks} blocks, {refused} refused, {retired} retired");
    assert!(straight >= 50, "only {straight} lists went the straight way");
    eprintln!("mlx5diff: {lists} request lists ({straight} through the straight path, {refused} refused, {scribbled} blocks libmlx5 wrote for a refused one, {retired} retirements), {blocks} basic blocks equal libmlx5's; doorbell kind libmlx5 chose as the daemon saw it: {rings} the same as ours, {missed} not seen");
    assert!(rings >= 400, "{rings} doorbell kinds compared");
}

/// The fields of `struct ibv_wc` after `wr_id` (name, offset, size); bytes 46..48 are padding.
const WC_FIELDS: [(&str, usize, usize); 12] = [
    ("status", 8, 4),
    ("opcode", 12, 4),
    ("vendor_err", 16, 4),
    ("byte_len", 20, 4),
    ("imm_data/invalidated_rkey", 24, 4),
    ("qp_num", 28, 4),
    ("src_qp", 32, 4),
    ("wc_flags", 36, 4),
    ("pkey_index", 40, 2),
    ("slid", 42, 2),
    ("sl", 44, 1),
    ("dlid_path_bits", 45, 1),
];

/// Every recorded CQE (a requester completion of each WQE opcode; responder SEND, SEND_IMM,
/// SEND_INV, RDMA_WRITE_IMM with GRH bits, SL, source QP, SLID, path bits and
/// immediate/invalidated key/P_Key varied; requester and responder errors of every syndrome
/// and an undefined one) through our parser (CQE version 1, as the simulated device grants):
/// our work completion must equal libmlx5's `ibv_wc` in every field libmlx5 writes.
///
/// Ignored, each for its reason: `wr_id` (it comes from the QP's table of posted requests,
/// not from the CQE: our parser leaves it to the retirement, which sq/rq tests check); and
/// any field libmlx5 leaves unwritten for that kind of completion (`ibv_poll_cq(3)`: e.g.
/// `src_qp`, `slid`, `byte_len` of a send completion are undefined): the recorder polled each
/// CQE twice, into an `ibv_wc` filled with 0x00 and then 0xff, and a field that differs
/// between the two was not written.
#[test]
fn cqe_parse_equals_libmlx5_poll() {
    use verbs::providers::mlx5::cqe::parse;
    use verbs::providers::mlx5::wqe::Cqe64;
    use zerocopy::{FromBytes, IntoBytes};
    let (mut n, mut compared, mut unwritten) = (0, 0, 0);
    for l in DATA.lines().filter(|l| l.starts_with("cqe ")) {
        let t: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((t[2], t[4]), ("wc0", "wc1"));
        let (raw, wc0, wc1) = (hex(t[1]), hex(t[3]), hex(t[5]));
        assert_eq!((raw.len(), wc0.len(), wc1.len()), (64, 48, 48));
        let c = Cqe64::read_from_bytes(&raw).unwrap();
        let p = parse(&c, 1).unwrap_or_else(|e| panic!("cqe {}: we refused ({e}), libmlx5 polled it", t[1])).expect("a completion");
        let ours = p.wc.as_abi().as_bytes().to_vec();
        for (name, off, len) in WC_FIELDS {
            let r = off..off + len;
            if wc0[r.clone()] != wc1[r.clone()] {
                unwritten += 1;
                continue;
            }
            assert_eq!(hexs(&ours[r.clone()]), hexs(&wc0[r]), "cqe {}: ibv_wc.{name}", t[1]);
            compared += 1;
        }
        n += 1;
    }
    assert!(n >= 50 && compared >= 300, "{n} CQEs, {compared} fields compared");
    eprintln!("mlx5diff: {n} CQEs, {compared} ibv_wc fields equal libmlx5's ({unwritten} left unwritten by it)");
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
