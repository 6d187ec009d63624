//! Where the tests find the Syzygy tables: `KAISSA_SYZYGY`, else
//! tests/data/syzygy (`scripts/fetch-syzygy.sh`). When `KAISSA_SYZYGY` is
//! set (CI sets it), missing tables fail the test instead of skipping it.
#![allow(dead_code)]

use std::path::PathBuf;

/// The table directory, or `None` (with a note) when it is not there and
/// nobody asked for it.
pub fn tables_dir() -> Option<PathBuf> {
    let required = std::env::var_os("KAISSA_SYZYGY");
    let dir = match &required {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/syzygy"),
    };
    let present = std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some());
    if !present {
        assert!(
            required.is_none(),
            "KAISSA_SYZYGY={} holds no tables (scripts/fetch-syzygy.sh)",
            dir.display()
        );
        eprintln!(
            "note: no Syzygy tables in {}: run scripts/fetch-syzygy.sh; test skipped",
            dir.display()
        );
        return None;
    }
    Some(dir)
}
