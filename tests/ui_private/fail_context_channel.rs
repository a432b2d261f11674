// `Context::channel()` is crate-private without the `internals` feature.
fn chan(ctx: &verbs::Context) {
    let _ = ctx.channel();
}

fn main() {
    let _ = chan;
}
