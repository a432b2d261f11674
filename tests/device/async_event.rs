//! ibv_get_async_event / ibv_ack_async_event: the async fd with poll, in
//! non-blocking mode, and real port events from taking the device's netdev
//! down and up (both soft drivers report IB_EVENT_PORT_ERR/PORT_ACTIVE).

use std::os::fd::AsRawFd;
use core::time::Duration;
use std::time::Instant;

use super::comp_channel::poll_in;
use super::common::{rxe_name, siw_name};
use verbs::{discovery::devices, AsyncElement, Context, ErrorKind, EventType};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

/// The netdev under `dev` port 1, from `rdma link show` (iproute2).
pub(super) fn netdev_of(dev: &str) -> String {
    let out = std::process::Command::new("rdma").args(["link", "show", &format!("{dev}/1")]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace();
    it.find(|w| *w == "netdev").and_then(|_| it.next()).unwrap_or_else(|| panic!("no netdev in {text:?}")).to_owned()
}

pub(super) fn ip_link(netdev: &str, state: &str) {
    let st = std::process::Command::new("ip").args(["link", "set", "dev", netdev, state]).status().unwrap();
    assert!(st.success(), "ip link set dev {netdev} {state}");
}

/// Reads async events until one of type `want` arrives (or 10 s pass);
/// returns it and the events seen before it.
fn wait_for(ctx: &Context, want: EventType) -> (verbs::AsyncEvent, Vec<verbs::AsyncEvent>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no {want:?} within 10 s; got {seen:?}");
        if poll_in(ctx.async_fd(), left.as_millis() as i32) & libc::POLLIN == 0 {
            continue;
        }
        let ev = ctx.get_async_event().expect("ibv_get_async_event");
        ctx.ack_async_event(ev);
        if ev.event_type == want {
            return (ev, seen);
        }
        seen.push(ev);
    }
}

fn port_events(name: &str) {
    let ctx = open(name);
    let port_before = ctx.query_port(1).unwrap();
    assert_eq!(port_before.state, 4, "{name} port 1 must start ACTIVE");
    ctx.set_async_nonblocking(true).unwrap();
    // Nothing pending: poll says not readable, a read says WouldBlock.
    assert_eq!(poll_in(ctx.async_fd(), 0), 0);
    let e = ctx.get_async_event().unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_get_async_event", ErrorKind::WouldBlock));

    let netdev = netdev_of(name);
    ip_link(&netdev, "down");
    let (down, _) = wait_for(&ctx, EventType::PortErr);
    ip_link(&netdev, "up");
    let (up, _) = wait_for(&ctx, EventType::PortActive);
    assert_eq!(down.element(), AsyncElement::Port(1));
    assert_eq!(up.element(), AsyncElement::Port(1));

    // Leave the device as we found it for the tests that follow.
    let deadline = Instant::now() + Duration::from_secs(10);
    while ctx.query_port(1).unwrap().state != 4 {
        assert!(Instant::now() < deadline, "{name} port 1 did not come back ACTIVE");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ctx.async_fd().as_raw_fd() >= 0);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_async_port_events() {
    let name = rxe_name();
    let gid_index = super::common::gid_index();
    let ctx = open(&name);
    let gid = ctx.query_gid(1, gid_index).unwrap();
    port_events(&name);
    // The RoCE v2 GID the other tests use must be back at its index.
    let deadline = Instant::now() + Duration::from_secs(10);
    while ctx.query_gid(1, gid_index).unwrap() != gid {
        assert!(Instant::now() < deadline, "GID {gid_index} of {name} not restored");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_async_port_events() {
    port_events(&siw_name());
}
