//! Device tests: everything that needs a kernel RDMA device. One module per
//! area in `tests/device/<area>.rs`.

mod device {
    mod devinfo;
}
