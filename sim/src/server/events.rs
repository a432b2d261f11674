//! Event delivery: completion channels and async event descriptors are
//! socketpairs whose other end the process reads the kernel's records from
//! (`ib_uverbs_comp_event_desc`, 8 bytes; `ib_uverbs_async_event_desc`, 16
//! bytes), and the counts DESTROY_* report back.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use super::sock;
use super::trace::Trace;
use crate::engine::EventSink;

/// A completion channel: the daemon's end of the socketpair whose other
/// end the process reads `ib_uverbs_comp_event_desc` records from.
pub struct Chan {
    /// Owning context.
    pub ctx: u32,
    /// Daemon's end.
    pub fd: OwnedFd,
    /// A duplicate of the process's end (to take back unread events).
    pub app: OwnedFd,
    /// Inode of the process's end (to recognise the fd number CREATE_CQ names).
    pub app_ino: u64,
}

/// Event delivery, and the counts DESTROY_* report back (libibverbs waits
/// until it has acknowledged that many events).
#[derive(Default)]
pub struct Sink {
    /// Completion channels by id.
    pub chans: HashMap<u32, Chan>,
    /// Async event descriptors by context: (daemon's end, duplicate of the
    /// process's end).
    pub async_fds: HashMap<u32, (OwnedFd, OwnedFd)>,
    /// Completion events delivered per (channel, cq user handle).
    pub comp_counts: HashMap<(u32, u64), u32>,
    /// Async events delivered per (context, element).
    pub async_counts: HashMap<(u32, u64), u32>,
    pub(super) trace: Option<Trace>,
}

/// One event record to a process's event descriptor; never blocks (a
/// process that stopped reading loses events rather than stalling the NIC).
fn send_record(fd: &OwnedFd, rec: &[u8]) -> bool {
    sock::send_nowait(fd, rec)
}

impl EventSink for Sink {
    fn completion(&mut self, channel: u32, cq_user_handle: u64) {
        let ok = self.chans.get(&channel).is_some_and(|c| send_record(&c.fd, &cq_user_handle.to_le_bytes()));
        if ok {
            *self.comp_counts.entry((channel, cq_user_handle)).or_default() += 1;
        }
        if let Some(t) = &self.trace {
            t.line(format_args!("EVENT comp channel={channel} cq_handle={cq_user_handle:#x} delivered={ok}"));
        }
    }

    fn async_event(&mut self, ctx: u32, element: u64, event_type: u32) {
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&element.to_le_bytes());
        rec[8..12].copy_from_slice(&event_type.to_le_bytes());
        let ok = self.async_fds.get(&ctx).is_some_and(|(fd, _)| send_record(fd, &rec));
        if ok {
            *self.async_counts.entry((ctx, element)).or_default() += 1;
        }
        if let Some(t) = &self.trace {
            t.line(format_args!("EVENT async ctx={ctx} element={element:#x} type={event_type} delivered={ok}"));
        }
    }
}

impl Sink {
    /// Completion events reported for a destroyed CQ: those delivered minus
    /// those still unread (taken back from the channel).
    pub fn comp_reported(&mut self, channel: Option<u32>, handle: u64) -> u32 {
        let Some(ch) = channel else { return 0 };
        let sent = self.comp_counts.remove(&(ch, handle)).unwrap_or(0);
        let unread = self.chans.get(&ch).map_or(0, |c| {
            sock::take_back(&c.app, &c.fd, 8, |r| r == handle.to_le_bytes())
        });
        sent.saturating_sub(unread)
    }

    /// Async events reported for a destroyed object (delivered minus unread).
    pub fn async_reported(&mut self, ctx: u32, element: u64) -> u32 {
        let sent = self.async_counts.remove(&(ctx, element)).unwrap_or(0);
        let unread = self.async_fds.get(&ctx).map_or(0, |(mine, app)| {
            sock::take_back(app, mine, 16, |r| r[..8] == element.to_le_bytes())
        });
        sent.saturating_sub(unread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn app_end(fd: OwnedFd) -> std::fs::File {
        std::fs::File::from(fd)
    }

    #[test]
    fn records_are_the_kernels_and_unread_ones_are_taken_back() {
        let mut sink = Sink::default();
        let (mine, theirs) = sock::event_pair().unwrap();
        let dup = theirs.try_clone().unwrap();
        sink.chans.insert(7, Chan { ctx: 1, fd: mine, app: dup, app_ino: sock::ino(&theirs) });
        let (amine, atheirs) = sock::event_pair().unwrap();
        sink.async_fds.insert(1, (amine, atheirs.try_clone().unwrap()));
        // ib_uverbs_comp_event_desc: the CQ's user handle, one record per read
        sink.completion(7, 0x1122_3344_5566_7788);
        sink.completion(7, 0xaaaa);
        sink.completion(7, 0x1122_3344_5566_7788);
        let mut app = app_end(theirs);
        let mut b = [0u8; 64];
        assert_eq!(app.read(&mut b).unwrap(), 8);
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), 0x1122_3344_5566_7788);
        // destroying that CQ: one delivered and read, one still queued
        assert_eq!(sink.comp_reported(Some(7), 0x1122_3344_5566_7788), 1);
        // the other CQ's event is still there, in order
        assert_eq!(app.read(&mut b).unwrap(), 8);
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), 0xaaaa);
        // ib_uverbs_async_event_desc: element, event_type, reserved
        sink.async_event(1, 0x5151, 1);
        let mut aapp = app_end(atheirs);
        assert_eq!(aapp.read(&mut b).unwrap(), 16);
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), 0x5151);
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        assert_eq!(sink.async_reported(1, 0x5151), 1);
        // no channel: nothing delivered, nothing counted
        sink.completion(9, 1);
        assert!(!sink.comp_counts.contains_key(&(9, 1)));
    }
}
