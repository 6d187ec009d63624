//! Perft suites from tests/data: exact leaf counts for standard chess (to
//! depth 5) and Chess960 (to depth 4). Deeper runs are `#[ignore]`d; run
//! them with `cargo test --profile tests --test integration -- --ignored perft::`.

use kaissa::chess::{Position, perft};
use std::path::PathBuf;

fn suite(name: &str) -> Vec<(String, Vec<(u32, u64)>)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut parts = line.split(';');
            let fen = parts.next().unwrap_or_default().trim().to_string();
            let counts = parts
                .filter_map(|p| {
                    let p = p.trim();
                    let (d, n) = p.strip_prefix('D')?.split_once(' ')?;
                    Some((d.parse().ok()?, n.trim().parse().ok()?))
                })
                .collect();
            (fen, counts)
        })
        .collect()
}

fn run(name: &str, max_depth: u32, min_depth: u32) {
    let cases = suite(name);
    assert!(cases.len() > 100, "{name}: suite too small");
    for (fen, counts) in cases {
        let pos = Position::from_fen(&fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
        for &(depth, expected) in counts
            .iter()
            .filter(|(d, _)| (min_depth..=max_depth).contains(d))
        {
            assert_eq!(perft(&pos, depth), expected, "{fen} depth {depth}");
        }
    }
}

#[test]
fn standard_suite_to_depth_5() {
    run("perftsuite.epd", 5, 1);
}

#[test]
fn chess960_suite_to_depth_4() {
    run("frcperftsuite.epd", 4, 1);
}

#[test]
#[ignore = "long: about 12 billion nodes"]
fn standard_suite_depth_6() {
    run("perftsuite.epd", 6, 6);
}

#[test]
#[ignore = "long: about 17 billion nodes"]
fn chess960_suite_depth_5() {
    run("frcperftsuite.epd", 5, 5);
}
