//! Test support shared by the native simulation (`tests/sim`) and the fuzzer
//! (`fuzz/`), behind the `testing` feature (never in the worker build): an
//! in-memory store with the SQLite store's semantics, counting ids that
//! survive a rebuilt core, and a small seeded random generator.

pub mod ids;
pub mod rng;
pub mod store;

pub use ids::SharedIds;
pub use rng::{seed_bytes, Rng};
pub use store::{MemStore, QuarantinedRow};
