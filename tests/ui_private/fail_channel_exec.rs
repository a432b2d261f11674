// Issue #12 item 3: safe code registering any address through the raw
// command channel (`Context::channel()` + a hand-made `REG_MR`). Without
// the `internals` feature neither the channel nor the command struct is
// reachable.
use verbs::Context;

fn register_anything(ctx: &Context) {
    let cmd = verbs::abi::uverbs::RegMr::default();
    let _ = ctx.channel().exec("ibv_reg_mr", &cmd, &[], &mut []);
}

fn main() {
    let _ = register_anything;
}
