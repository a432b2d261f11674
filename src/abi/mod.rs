//! Kernel uAPI structures, transcribed 1:1 from `<rdma/*.h>`.
//!
//! Every struct is `#[repr(C)]` with zerocopy derives (so padding is
//! rejected at compile time) and compile-time size/offset assertions next
//! to it. `tests/abi_crosscheck.rs` compiles a C program against the
//! system's `/usr/include/rdma/*.h` and compares every size and offset.
//! Kernel unions become plain byte/integer fields with typed accessors.
//!
//! The transcription follows the uAPI headers of Linux 6.1 (Debian 12's
//! `linux-libc-dev`), which the cross-check compiles against; the few
//! later additions that user space needs (e.g.
//! `ib_uverbs_query_port_resp_ex::active_speed_ex`, `RDMA_DRIVER_MANA`)
//! occupy bytes that 6.1 calls reserved and are documented where they
//! appear.
//!
//! Flexible array members (`driver_data[]`, `attrs[]`, `wc[]`, …) are not
//! part of the Rust structs: the provider-specific data follows the struct
//! in the command buffer. Where such a member raises the C struct's
//! alignment (an `__aligned_u64 driver_data[]` behind 32-bit fields), the
//! Rust struct carries the same alignment and an explicit padding field,
//! so `size_of` equals C's `sizeof`.

/// Defines a list of integer constants named after C macros/enumerators,
/// plus a table of `(C name, value)` pairs for cross-checking and debug
/// output. The C name is `prefix` followed by the Rust name.
macro_rules! c_consts {
    (
        $(#[$lm:meta])* $list:ident: $ty:ty, prefix $prefix:literal;
        $( $(#[$cm:meta])* $name:ident = $val:expr; )*
    ) => {
        $(
            #[doc = concat!("`", $prefix, stringify!($name), "`")]
            $(#[$cm])*
            pub const $name: $ty = $val;
        )*
        $(#[$lm])*
        pub const $list: &[(&str, u64)] = &[
            $( (concat!($prefix, stringify!($name)), $name as u64), )*
        ];
    };
}

#[allow(unused_imports)]
pub(crate) use c_consts;

/// Declares an ABI struct with the derive list every transcription uses:
/// the usual value traits plus zerocopy's `FromBytes` (which brings
/// `FromZeros`), `IntoBytes`, `Immutable` and `KnownLayout` (`IntoBytes`
/// fails to compile if the layout has implicit padding). `Default` is the
/// all-zero value (also for arrays longer than 32, where it cannot be
/// derived).
macro_rules! abi_struct {
    ($(#[$m:meta])* pub struct $name:ident $body:tt) => {
        $(#[$m])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash,
            zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::Immutable, zerocopy::KnownLayout,
        )]
        pub struct $name $body

        impl Default for $name {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use abi_struct;

pub mod ioctl;
pub mod ioctl_cmds;
pub mod ioctl_verbs;
pub mod netlink;
pub mod ucma;
pub mod uverbs;

pub use ioctl_verbs::RdmaDriverId;
