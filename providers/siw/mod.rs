//! The siw provider.

pub mod abi;
pub mod cq;
pub mod mr;
pub mod poll;
pub mod post;
pub mod qp;
pub mod ring;
pub mod srq;

#[cfg(all(test, feature = "std"))]
mod tests;
