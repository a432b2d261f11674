//! The rxe provider.

pub mod abi;
pub mod cq;
pub mod qp;
pub mod queue;
pub mod srq;
