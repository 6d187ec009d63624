//! The chess engine: search, evaluation, transposition table, time
//! management and the engine thread. Nothing here is async.

pub mod timeman;
