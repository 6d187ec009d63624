//! What the bot keeps on disk in `engine.state_dir` between runs: the small
//! JSON state files ([`state`]), each game's transposition table
//! ([`hashstore`]), and the PGN of each finished game ([`pgn`]).

pub mod hashstore;
pub mod pgn;
pub mod results;
pub mod state;
