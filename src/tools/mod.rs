//! Offline tools apart from the engine: they drive it, they are not part
//! of it. `chunk` is the training data's file (whole games), `manifest`
//! the list of a data directory's chunks, `packed` the 32-byte training
//! record the trainers read (and old data files), `convert` turns such
//! files into chunks, `datagen` makes training data by self-play, `tune` fits the evaluation weights to it
//! (the Texel tuner, which writes `engine/params.rs`), `train` fits the
//! NNUE to it, and `clocktest` plays engine-against-engine games on
//! clocks kept by the harness. `commands` is the glue of the offline
//! commands that have no module of their own to hold it.

pub mod chunk;
pub mod clocktest;
pub mod commands;
pub mod convert;
pub mod datagen;
pub mod manifest;
pub mod packed;
pub mod train;
pub mod tune;
