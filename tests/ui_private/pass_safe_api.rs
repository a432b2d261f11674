// What callers need of the private layers is reachable from the root.
use verbs::discovery::Device;
use verbs::{Context, ProviderKind, RdmaDriverId};

fn open(d: &Device) -> verbs::Result<(ProviderKind, Option<RdmaDriverId>)> {
    let ctx = Context::open(d)?;
    let _: verbs::DeviceAttr = ctx.query_device()?;
    let _: verbs::PortAttr = ctx.query_port(1)?;
    Ok((ctx.provider(), d.driver_id()))
}

fn main() {
    let _ = open;
    assert_eq!(RdmaDriverId::RXE, RdmaDriverId::RXE);
}
