//! kaissa: a Lichess bot daemon with its own chess engine.
//!
//! `chess` holds the rules (no I/O), `engine` searches with them, `uci`
//! and `bot` are the two front ends, `lichess` talks to the server.

pub mod bot;
pub mod chess;
pub mod engine;
pub mod systemd;
pub mod uci;
