//! The cost of a Syzygy probe from the search, split into the position
//! conversion (kaissa -> shakmaty) and the WDL probe itself, over the
//! 320 positions of tests/data/syzygy-probes.txt, repeated.
//!
//!     cargo run --release --example tb_probe_cost -- tests/data/syzygy [ROUNDS]

use kaissa::chess::Position;
use kaissa::engine::tablebase::{Tablebases, to_shakmaty};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "tests/data/syzygy".to_owned());
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(200);
    let tables = Tablebases::open(&dir).expect("tables");
    let text = include_str!("../tests/data/syzygy-probes.txt");
    let positions: Vec<Position> = text
        .lines()
        .filter_map(|l| l.split(';').next())
        .filter_map(|fen| Position::from_fen(fen).ok())
        .collect();
    // Warm the tables (files opened, pages cached).
    for p in &positions {
        tables.probe_wdl(p);
    }
    let n = (positions.len() * rounds) as f64;
    let start = Instant::now();
    let mut converted = 0;
    for _ in 0..rounds {
        for p in &positions {
            converted += to_shakmaty(p).is_some() as usize;
        }
    }
    let convert = start.elapsed().as_nanos() as f64 / n;
    let start = Instant::now();
    let mut hits = 0;
    for _ in 0..rounds {
        for p in &positions {
            hits += tables.probe_wdl(p).is_some() as usize;
        }
    }
    let wdl = start.elapsed().as_nanos() as f64 / n;
    let start = Instant::now();
    for _ in 0..rounds / 10 {
        for p in &positions {
            hits += tables.probe_dtz(p).is_some() as usize;
        }
    }
    let dtz = start.elapsed().as_nanos() as f64 / (n / 10.0);
    println!(
        "{} positions x {rounds}: conversion {convert:.0} ns, conversion + WDL probe {wdl:.0} ns, \
         conversion + DTZ probe {dtz:.0} ns ({converted} converted, {hits} hits)",
        positions.len()
    );
}
