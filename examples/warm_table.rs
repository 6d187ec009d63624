//! Benchmark (not a test) of the persistent table: for each bench
//! position, search it to a depth, then search the position after the
//! expected reply (our best move and its ponder move) to the same depth
//! with (a) a cold table, (b) the warm table kept from the first search,
//! (c) the warm table saved to a hash file and loaded into a new table.
//! History tables start fresh in every case, so only the table differs.
//! Prints the node counts; fewer nodes to the same depth = work kept.
//!
//! cargo run --release --example warm_table -- [depth] [positions]

use kaissa::chess::Position;
use kaissa::engine::Limits;
use kaissa::engine::bench::POSITIONS;
use kaissa::engine::hashfile;
use kaissa::engine::search::{Searcher, search_blocking};
use kaissa::engine::tt::TranspositionTable;

fn main() {
    let mut args = std::env::args().skip(1);
    let depth: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(12);
    let count: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(POSITIONS.len());
    let dir = std::env::temp_dir().join(format!("kaissa-warm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("table.hash");
    let (mut cold_total, mut warm_total, mut file_total) = (0u64, 0u64, 0u64);
    let mut n = 0;
    println!(
        "{:>3} {:>12} {:>12} {:>12}",
        "#", "cold", "warm", "from file"
    );
    for (i, fen) in POSITIONS.iter().take(count).enumerate() {
        let pos = Position::from_fen(fen).expect("bench FEN");
        let limits = Limits::depth(depth);
        let mut tt = TranspositionTable::new(64);
        tt.new_search();
        let r = search_blocking(&mut Searcher::new(), &tt, &pos, &[], &limits);
        let (Some(ours), Some(reply)) = (r.best, r.ponder) else {
            continue;
        };
        let mid = pos.play(ours);
        let next = mid.play(reply);
        if next.legal_moves().is_empty() {
            continue;
        }
        let history = [pos.key(), mid.key()];
        hashfile::save(&tt, &file).expect("save");

        let cold_tt = TranspositionTable::new(64);
        let cold = search_blocking(&mut Searcher::new(), &cold_tt, &next, &history, &limits).nodes;
        tt.new_search();
        let warm = search_blocking(&mut Searcher::new(), &tt, &next, &history, &limits).nodes;
        let mut loaded = TranspositionTable::new(1);
        hashfile::load(&mut loaded, &file).expect("load");
        loaded.new_search();
        let from_file =
            search_blocking(&mut Searcher::new(), &loaded, &next, &history, &limits).nodes;
        println!("{i:>3} {cold:>12} {warm:>12} {from_file:>12}");
        cold_total += cold;
        warm_total += warm;
        file_total += from_file;
        n += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "depth {depth}, {n} positions: cold {cold_total} nodes, warm {warm_total} ({:.1}% of cold), from file {file_total} ({:.1}% of cold)",
        100.0 * warm_total as f64 / cold_total.max(1) as f64,
        100.0 * file_total as f64 / cold_total.max(1) as f64
    );
}
