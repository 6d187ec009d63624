//! Offline tools apart from the engine: they drive it, they are not part
//! of it. `packed` is the 32-byte training record, `datagen` makes
//! training data by self-play, `train` fits the NNUE to it.

pub mod datagen;
pub mod packed;
pub mod train;
