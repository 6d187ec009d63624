//! The Lichess bot: the daemon's event loop, the challenge policy and its
//! queue, online block lists, matchmaking, arena tournaments, the daily bot
//! quota and the challenge budget, one task per game, chat, and the PGN of
//! each finished game.

pub mod blocklists;
pub mod budget;
pub mod challenge;
pub mod chat;
pub mod control;
pub mod daemon;
pub mod engines;
pub mod external;
pub mod game;
pub mod hashstore;
pub mod matchmaking;
pub mod pgn;
pub mod preflight;
pub mod queue;
pub mod quota;
pub mod record;
pub mod scheduler;
pub mod scopes;
pub mod state;
pub mod tournaments;
pub mod variant;
