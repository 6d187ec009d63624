//! The integration tests, one binary (`cargo test --profile tests --test
//! integration`; a module's tests with a filter, `-- queue::`). Each
//! module says what it covers in its first lines; [`support`] holds the
//! fake Lichess server, the `kaissa run` harness and the other helpers.
//!
//! One binary rather than one per file: the fake Lichess and the helpers
//! are compiled and linked once, which was most of the test build.

mod support;

mod book;
mod bot_e2e;
mod check;
mod clocktest;
mod ctl;
mod daemon;
mod differential;
mod engine;
mod external_engine;
mod fake_variants;
mod lichess_client;
mod lichess_spec;
mod nnue;
mod parsers;
mod perft;
mod ponder;
mod queue;
mod resilience;
mod search;
mod sources;
mod systemd;
mod tablebase;
mod tournaments;
mod uci;
mod variants;
mod web;
