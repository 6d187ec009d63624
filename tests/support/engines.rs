//! Where the tests find Fairy-Stockfish for the variant games:
//! `KAISSA_FAIRY_STOCKFISH`, else tests/data/engines/fairy-stockfish
//! (`scripts/build-fairy-stockfish.sh`: a build that plays all eight
//! Lichess variants, atomic included). When `KAISSA_FAIRY_STOCKFISH` is
//! set (CI sets it), a missing engine fails the test instead of skipping
//! it.
#![allow(dead_code)]

use std::path::PathBuf;

/// The engine's path, or `None` (with a note) when it is not there and
/// nobody asked for it.
pub fn fairy_stockfish() -> Option<PathBuf> {
    let required = std::env::var_os("KAISSA_FAIRY_STOCKFISH");
    let path = match &required {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/engines/fairy-stockfish")
        }
    };
    if !path.is_file() {
        assert!(
            required.is_none(),
            "KAISSA_FAIRY_STOCKFISH={} is not there (scripts/build-fairy-stockfish.sh)",
            path.display()
        );
        eprintln!(
            "note: no Fairy-Stockfish at {}: run scripts/build-fairy-stockfish.sh; test skipped",
            path.display()
        );
        return None;
    }
    Some(path)
}
