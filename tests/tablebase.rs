//! Syzygy tablebases: kaissa's WDL and DTZ probes agree with
//! python-chess's on random 3- and 4-man positions (tests/data/
//! syzygy-probes.txt, written by scripts/syzygy-expectations.py), and
//! `kaissa uci` with `SyzygyPath` converts won KBNvK and KQvKR endings
//! against Stockfish within the 50-move rule.
//!
//! The tables (3- and 4-man, from python-chess's source distribution) are
//! not in the repository: `scripts/fetch-syzygy.sh` puts them in
//! tests/data/syzygy. `KAISSA_SYZYGY` names another directory; when it is
//! set (CI sets it) a missing table directory fails the tests instead of
//! skipping them.

use crate::support::syzygy;
use crate::support::uci as uci_driver;

use kaissa::chess::{Outcome, Position};
use kaissa::engine::sources::{Source, Sources};
use kaissa::engine::tablebase::{Outcome as TbOutcome, Tablebases};
use syzygy::tables_dir;
use uci_driver::Uci;

fn open() -> Option<Tablebases> {
    let dir = tables_dir()?;
    Some(Tablebases::open(dir.to_str().expect("utf-8 path")).expect("tables open"))
}

#[test]
fn wdl_and_dtz_agree_with_python_chess() {
    let Some(tb) = open() else { return };
    assert_eq!(tb.max_pieces(), 4);
    let data = include_str!("data/syzygy-probes.txt");
    let mut checked = 0;
    let mut en_passant = 0;
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(';').collect();
        let [fen, wdl, dtz] = fields[..] else {
            panic!("bad line {line:?}");
        };
        let pos = Position::from_fen(fen).expect(fen);
        en_passant += pos.ep_square().is_some() as u32;
        let wdl: i32 = wdl.parse().expect("wdl");
        let dtz: i32 = dtz.parse().expect("dtz");
        let got = tb
            .probe_wdl(&pos)
            .unwrap_or_else(|| panic!("no WDL for {fen}"));
        assert_eq!(got.signum2(), wdl, "WDL of {fen}");
        assert_eq!(tb.probe_dtz(&pos), Some(dtz), "DTZ of {fen}");
        // The tables' move keeps the outcome.
        if let Some(best) = tb.best_move(&pos) {
            let after = pos.play(best.mv);
            let theirs = tb.probe_wdl(&after).expect("child WDL");
            if after.halfmove_clock() == 0 {
                assert_eq!(theirs.signum2(), -wdl, "best move {:?} in {fen}", best.mv);
            } else {
                assert_eq!(theirs.signum2().signum(), -wdl.signum(), "{fen}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 300, "{checked} positions");
    assert!(en_passant >= 10, "{en_passant} with en passant");
}

#[test]
fn no_probe_with_castling_rights_or_too_many_pieces() {
    let Some(tb) = open() else { return };
    let castling = Position::from_fen("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1").unwrap();
    assert!(!tb.covers(&castling));
    assert_eq!(tb.probe_wdl(&castling), None);
    let same_without = Position::from_fen("4k3/8/8/8/8/8/8/R3K3 w - - 0 1").unwrap();
    assert_eq!(tb.probe_wdl(&same_without), Some(TbOutcome::Win));
    let five = Position::from_fen("4k3/8/8/8/8/8/3PP3/R3K3 w - - 0 1").unwrap();
    assert_eq!(tb.probe_wdl(&five), None);
    assert_eq!(tb.best_move(&five), None);
}

#[test]
fn sources_give_the_table_move_in_chess960_too_but_never_with_castling_rights() {
    let Some(tb) = open() else { return };
    let sources = Sources {
        books: Vec::new(),
        tablebases: Some(std::sync::Arc::new(tb)),
    };
    // No castling rights left: a Chess960 game's ending is a table ending.
    let pos = Position::from_fen("8/8/8/4k3/8/8/8/R3K3 w - - 0 1").unwrap();
    let c = sources.choose(&pos, None, true, 0.5).expect("a table move");
    assert!(matches!(
        c.source,
        Source::Tablebase {
            outcome: TbOutcome::Win,
            ..
        }
    ));
    let castling = Position::from_fen("8/8/8/4k3/8/8/8/R3K3 w Q - 0 1").unwrap();
    assert_eq!(sources.choose(&castling, None, true, 0.5), None);
}

/// Plays `fen` with kaissa (tables on) against Stockfish (no tables) and
/// returns the game's end and the longest run of plies without a capture
/// or pawn move.
fn play_out(fen: &str, stockfish: &str, tables: &str) -> (Option<Outcome>, u32, Vec<String>) {
    let mut kaissa = Uci::start();
    kaissa.send("uci");
    kaissa.until("uciok");
    kaissa.send(&format!("setoption name SyzygyPath value {tables}"));
    kaissa.send("isready");
    let lines = kaissa.until("readyok");
    assert!(
        lines.iter().any(|l| l.contains("tablebases: 70 files")),
        "{lines:?}"
    );
    let mut fish = Uci::command(stockfish, &[]);
    fish.send("uci");
    fish.until("uciok");
    fish.send("isready");
    fish.until("readyok");

    let start = Position::from_fen(fen).expect(fen);
    let mut pos = start.clone();
    let mut moves: Vec<String> = Vec::new();
    let mut keys = vec![pos.key()];
    let mut longest = 0;
    let us = pos.turn();
    for _ in 0..300 {
        if let Some(end) = pos.outcome(&keys[..keys.len() - 1]) {
            return (Some(end), longest, moves);
        }
        let engine = if pos.turn() == us {
            &mut kaissa
        } else {
            &mut fish
        };
        let line = if moves.is_empty() {
            format!("position fen {fen}")
        } else {
            format!("position fen {fen} moves {}", moves.join(" "))
        };
        engine.send(&line);
        engine.send("go movetime 50");
        let out = engine.until("bestmove");
        let best = out
            .last()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned();
        let m = pos
            .parse_uci(&best, false)
            .unwrap_or_else(|e| panic!("illegal {best} after {moves:?}: {e}"));
        pos = pos.play(m);
        keys.push(pos.key());
        longest = longest.max(pos.halfmove_clock());
        moves.push(best);
    }
    (None, longest, moves)
}

#[test]
fn uci_with_syzygy_path_converts_won_endings_against_stockfish() {
    let Some(dir) = tables_dir() else { return };
    let stockfish = std::env::var("KAISSA_STOCKFISH").unwrap_or("/usr/games/stockfish".into());
    if !std::path::Path::new(&stockfish).exists() {
        assert!(
            std::env::var_os("KAISSA_SYZYGY").is_none(),
            "{stockfish} missing (apt-get install stockfish)"
        );
        eprintln!("note: no {stockfish}; test skipped");
        return;
    }
    let tables = dir.to_str().unwrap();
    for fen in [
        // KBNvK, 58 and 56 plies to zeroing.
        "8/2k5/8/8/4N3/8/8/6BK w - - 0 1",
        "7N/8/8/6B1/7K/8/2k5/8 w - - 0 1",
        // KQvKR, 51 and 41 plies to zeroing.
        "8/Q7/8/8/2k5/3r4/1K6/8 w - - 0 1",
        "5r2/8/3k4/1Q6/8/8/5K2/8 w - - 0 1",
    ] {
        let (end, longest, moves) = play_out(fen, &stockfish, tables);
        assert_eq!(
            end,
            Some(Outcome::Checkmate {
                winner: kaissa::chess::Color::White
            }),
            "{fen}: {moves:?}"
        );
        assert!(longest < 100, "{fen}: {longest} plies without zeroing");
    }
}
