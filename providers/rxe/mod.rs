//! The rxe provider.

pub mod abi;
