//! The siw provider.

pub mod abi;
pub mod cq;
pub mod mr;
pub mod poll;
pub mod post;
mod provider;
pub mod qp;
pub mod ring;
pub mod srq;
mod sqe_bits;
pub mod straight;

pub use provider::{Siw, SiwContext};

#[cfg(all(test, feature = "std"))]
mod straight_tests;
#[cfg(all(test, feature = "std"))]
mod tests;
