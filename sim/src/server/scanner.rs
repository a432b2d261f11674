//! The doorbell scanner: watches every context's UAR pages, hands send
//! doorbells and CQ arms to the engine, and calls `Engine::progress`.
//!
//! CQ arms: libmlx5 writes every CQ's arm to the same UAR word (+0x20 of
//! the context's first UAR page), after storing the arm word in the CQ's
//! doorbell record. Two CQs armed back to back (perftest arms its send and
//! receive CQs in a row) leave only the second in the UAR word if no scan
//! ran in between, where a NIC sees two MMIO writes. So an arm seen in the
//! UAR also makes the scanner read the doorbell records of the context's
//! other CQs that have a completion channel, and a changed arm word there is
//! taken as the arm the UAR word lost.
//! The engine does the same for a CQ when it writes a CQE to it unarmed
//! (`Engine::push_cqe`): work runs from the QP's doorbell record, possibly
//! before the scan that reads an arm the application stored earlier.
//!
//! Between scans that found nothing it sleeps: briefly while there was
//! recent traffic, longer when idle, so an idle daemon does not hold a
//! core. It never spins: with the applications busy-polling their CQs on
//! a 2-core machine, a spinning (or yielding) scanner waits for whole
//! scheduler time slices, while a sleeper is woken promptly by its timer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::uar::{Doorbell, Uar};
use super::Daemon;

/// Sleep this long between scans ...
const NAP: Duration = Duration::from_micros(10);
/// ... until idle this long, then sleep [`SLEEP`].
const DOZE_AFTER: Duration = Duration::from_millis(500);
const SLEEP: Duration = Duration::from_millis(2);

/// Runs forever.
pub fn run(d: &Daemon) {
    super::sock::precise_sleeps();
    let mut last = Instant::now();
    let mut found = Vec::new();
    let mut uars: Vec<(u32, Arc<Uar>)> = Vec::new();
    loop {
        uars.clear();
        {
            let st = d.lock();
            uars.extend(st.uars.iter().map(|(k, v)| (*k, v.clone())));
        }
        found.clear();
        let mut origin = Vec::new();
        for (ctx, u) in &uars {
            let before = found.len();
            u.scan(&mut found);
            origin.extend(std::iter::repeat_n(*ctx, found.len() - before));
        }
        // An engine panic must not stop the NIC for every process: the
        // step is abandoned (and traced), the scanner goes on.
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(d, &found, &origin)));
        let busy = step.unwrap_or_else(|_| {
            d.trace.line(format_args!("scanner: the engine panicked; step abandoned"));
            false
        });
        let now = Instant::now();
        if busy {
            last = now;
        }
        let idle = now - last;
        if busy {
            continue;
        } else if idle < DOZE_AFTER {
            std::thread::sleep(NAP);
        } else {
            std::thread::sleep(SLEEP);
        }
    }
}

/// Hands one scan's doorbells to the engine and runs its progress; returns
/// whether anything happened.
fn handle(d: &Daemon, found: &[Doorbell], origin: &[u32]) -> bool {
    let mut busy = !found.is_empty();
    {
        let mut st = d.lock();
        for (db, ctx) in found.iter().zip(origin) {
            match *db {
                Doorbell::Send { qpn, wqe_index, ds, page, offset } => {
                    let mine = st.dev.qps.get(&qpn).is_some_and(|q| q.ctx == *ctx);
                    let uar = st.uars.get(ctx).cloned();
                    match uar {
                        Some(uar) if mine => {
                            // the kind (BF/DB) is traced once known
                            super::blueflame::seen(d, &mut st, *ctx, &uar, qpn, wqe_index, ds, page, offset);
                            d.with_engine(&mut st, |e| e.sq_doorbell(qpn));
                        }
                        _ => d.trace.line(format_args!(
                            "ctx={ctx} DOORBELL qpn={qpn:#x} wqe={wqe_index} uar={page}+{offset:#x} (not this context's QP: ignored)"
                        )),
                    }
                }
                Doorbell::Arm { cqn, word } => {
                    recover_arms(d, &mut st, *ctx, cqn);
                    // Already taken from the doorbell record by an earlier
                    // recovery or CQE (its UAR write landed after that).
                    let taken = st.dev.cqs.get(&cqn).is_some_and(|c| c.arm_taken == word);
                    let mine = !taken && st.dev.cqs.get(&cqn).is_some_and(|c| c.ctx == *ctx);
                    d.trace.line(format_args!(
                        "ctx={ctx} ARM cqn={cqn} sn={} {} ci={}{}",
                        word >> 28 & 3,
                        if word >> 24 & 1 != 0 { "solicited" } else { "next" },
                        word & 0xff_ffff,
                        if taken {
                            " (taken already)"
                        } else if mine {
                            ""
                        } else {
                            " (not this context's CQ: ignored)"
                        }
                    ));
                    if mine {
                        d.with_engine(&mut st, |e| e.cq_arm(cqn, word));
                    }
                }
            }
        }
        super::blueflame::poll(d, &mut st);
        if !st.dev.qps.is_empty() {
            busy |= d.with_engine(&mut st, |e| e.progress());
        }
    }
    busy
}

/// Arms of context `ctx` overwritten in the UAR word before a scan: any CQ
/// (other than `seen`, whose arm the UAR showed) whose doorbell record holds
/// an arm word not taken yet.
fn recover_arms(d: &Daemon, st: &mut super::State, ctx: u32, seen: u32) {
    let others: Vec<(u32, i32, u64, u32)> = st
        .dev
        .cqs
        .values()
        .filter(|c| c.ctx == ctx && c.cqn != seen && c.channel.is_some())
        .map(|c| (c.cqn, c.pid, c.dbrec, c.arm_taken))
        .collect();
    for (cqn, pid, dbrec, taken) in others {
        let Ok(word) = crate::mem::HostMem::read_be32(&d.mem, pid, dbrec + 4) else {
            continue;
        };
        if word != taken && word != super::ARM_UNSET {
            d.trace.line(format_args!(
                "ctx={ctx} ARM cqn={cqn} sn={} {} ci={} (from the doorbell record: its UAR write was overwritten)",
                word >> 28 & 3,
                if word >> 24 & 1 != 0 { "solicited" } else { "next" },
                word & 0xff_ffff
            ));
            d.with_engine(st, |e| e.cq_arm(cqn, word));
        }
    }
}
