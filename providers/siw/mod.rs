//! placeholder: filled in by the ABI transcription
//! The siw provider.

pub mod abi;
pub mod mr;
