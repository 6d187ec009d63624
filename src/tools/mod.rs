//! Offline tools apart from the engine: they drive it, they are not part
//! of it. `packed` is the 32-byte training record, `datagen` makes
//! training data by self-play, `tune` fits the evaluation weights to it
//! (the Texel tuner, which writes `engine/params.rs`), `train` fits the
//! NNUE to it, and `clocktest` plays engine-against-engine games on
//! clocks kept by the harness.

pub mod clocktest;
pub mod datagen;
pub mod packed;
pub mod train;
pub mod tune;
