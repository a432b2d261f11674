//! The siw provider.

pub mod abi;
pub mod cq;
pub mod qp;
pub mod srq;
