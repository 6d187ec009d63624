//! Shared support of the integration tests: the fake Lichess server
//! ([`fake_lichess`]), the `kaissa run` process harness ([`bot`]) and a
//! deterministic RNG ([`rng`]).
//!
//! Each test binary includes this with `mod support;` and uses a part of
//! it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod bot;
pub mod fake_lichess;
pub mod rng;
