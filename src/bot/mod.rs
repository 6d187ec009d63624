//! The Lichess bot: the daemon's event loop, the challenge policy, one task
//! per game, chat, and the PGN of each finished game.

pub mod challenge;
pub mod chat;
pub mod daemon;
pub mod game;
pub mod hashstore;
pub mod pgn;
pub mod record;
