//! The Lichess bot, grouped so its design shows:
//!
//! - [`daemon`]: the event loop, the one place that talks to Lichess for
//!   the account (challenges, arenas, reconciling, shutdown);
//! - [`game`]: one task per game, from its stream to its PGN, and the
//!   moves it plays;
//! - [`policy`]: the pure decisions the daemon applies (which challenges,
//!   the queue, the quotas and budgets, block lists, matchmaking, arenas);
//! - [`board`]: a game's record in its rules (kaissa's board, or
//!   shakmaty's for the variants);
//! - [`external`]: external UCI engines (the process, its protocol, which
//!   engine plays a game);
//! - [`store`]: what is kept on disk between runs (state files, hash
//!   tables, PGNs);
//! - beside them: the search threads shared by the games ([`scheduler`]),
//!   chat ([`chat`]), the control socket ([`control`]), the token's scopes
//!   ([`scopes`]), the checks before play ([`preflight`]), and the HTTP
//!   server an operator watches the bot with ([`web`]).

pub mod board;
pub mod chat;
pub mod control;
pub mod daemon;
pub mod external;
pub mod game;
pub mod policy;
pub mod preflight;
pub mod scheduler;
pub mod scopes;
pub mod store;
pub mod web;
