//! Shared support of the integration tests: the fake Lichess server.
//!
//! Each test binary includes this with `mod support;` and uses a part of
//! it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod fake_lichess;
