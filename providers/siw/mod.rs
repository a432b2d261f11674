//! placeholder: filled in by the ABI transcription
//! The siw provider.

pub mod abi;
pub mod cq;
pub mod mr;
pub mod qp;
pub mod srq;
