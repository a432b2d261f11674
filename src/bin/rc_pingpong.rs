//! `verbs-rc-pingpong`: rdma-core's `ibv_rc_pingpong` on this crate.

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

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let _ = pingpong::opts::parse(pingpong::opts::Tool::Rc, &argv);
}
