//! Shared support of the integration tests: the fake Lichess server
//! ([`fake_lichess`]), the `kaissa run` process harness ([`bot`]), a TCP
//! [`proxy`] that can go silent, a deterministic RNG ([`rng`]) and the
//! Syzygy tables' and Fairy-Stockfish's whereabouts ([`syzygy`],
//! [`engines`]), a UCI process driver ([`uci`]) and a reader of the PGNs
//! the bot writes ([`pgn`]). examples/fake_lichess.rs
//! includes a part of it too, hence the `dead_code` allowance.

pub mod bot;
pub mod engines;
pub mod fake_lichess;
pub mod pgn;
pub mod proxy;
pub mod syzygy;
pub mod uci;
