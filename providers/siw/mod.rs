//! The siw provider.

pub mod abi;
