//! kaissa: a Lichess bot daemon with its own chess engine.
//!
//! `chess` holds the rules (no I/O), `engine` searches with them, `uci`
//! and `bot` are the two front ends, `lichess` talks to the server,
//! `config` loads and validates the daemon's settings, `systemd` speaks
//! the service manager's notification protocol.

pub mod bot;
pub mod chess;
pub mod config;
pub mod engine;
pub mod lichess;
pub mod systemd;
pub mod tools;
pub mod uci;
