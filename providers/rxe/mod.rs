//! placeholder: filled in by the ABI transcription
//! The rxe provider.

pub mod abi;
pub mod ah;
pub mod cq;
pub mod post;
pub mod qp;
pub mod queue;
pub mod srq;
