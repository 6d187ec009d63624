//! Polyglot books: lookups in a real book (tests/data/gnuchess-2ply.bin,
//! every entry of Debian's gnuchess-book for the positions two plies
//! deep, cut out by scripts/make-test-book.py) give the book's moves and
//! weights, the choice follows the weights, the book keys follow
//! Polyglot's en-passant rule, and `kaissa uci` plays from a book.

use crate::support::uci as uci_driver;

use kaissa::chess::{Move, Position};
use kaissa::engine::book::{self, Book, PlayedBook, Selection};
use kaissa::engine::sources::{Source, Sources};
use std::collections::BTreeMap;
use std::path::Path;
use uci_driver::Uci;

const BOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gnuchess-2ply.bin");

fn open() -> Book {
    Book::open(Path::new(BOOK)).expect("test book")
}

/// A book played by `selection` for the first `max_plies` plies.
fn played(book: Book, selection: Selection, max_plies: u32) -> PlayedBook {
    PlayedBook {
        book,
        selection,
        max_plies,
        min_weight: 0,
    }
}

fn after(moves: &[&str]) -> (Position, Option<Move>) {
    let mut pos = Position::startpos();
    let mut last = None;
    for m in moves {
        let mv = pos.parse_uci(m, false).expect(m);
        pos = pos.play(mv);
        last = Some(mv);
    }
    (pos, last)
}

fn book_moves(book: &Book, moves: &[&str]) -> BTreeMap<String, u16> {
    let (pos, last) = after(moves);
    book.moves(&pos, last)
        .into_iter()
        .map(|m| (m.mv.to_uci(false), m.weight))
        .collect()
}

fn expected(list: &[(&str, u16)]) -> BTreeMap<String, u16> {
    list.iter().map(|&(m, w)| (m.to_owned(), w)).collect()
}

#[test]
fn known_positions_give_the_books_moves_and_weights() {
    let book = open();
    assert_eq!(book.len(), 407);
    // Published Polyglot keys.
    assert_eq!(Position::startpos().key(), 0x463b_9618_1691_fc9c);
    let (e4, last) = after(&["e2e4"]);
    assert_eq!(book::polyglot_key(&e4, last), 0x823c_9b50_fd11_4196);
    // The moves and weights python-chess reads from the same file.
    assert_eq!(
        book_moves(&book, &[]),
        expected(&[
            ("b1c3", 16),
            ("g1f3", 3745),
            ("a2a3", 2),
            ("b2b3", 38),
            ("b2b4", 16),
            ("c2c4", 3294),
            ("d2d3", 5),
            ("d2d4", 11257),
            ("e2e3", 7),
            ("e2e4", 12135),
            ("f2f4", 35),
            ("g2g3", 243),
            ("g2g4", 4),
        ])
    );
    assert_eq!(
        book_moves(&book, &["e2e4"]),
        expected(&[
            ("a7a6", 8),
            ("b7b6", 48),
            ("c7c5", 14550),
            ("c7c6", 2340),
            ("d7d5", 303),
            ("d7d6", 1135),
            ("e7e5", 10621),
            ("e7e6", 3913),
            ("g7g5", 12),
            ("g7g6", 922),
            ("h7h6", 5),
            ("b8c6", 167),
            ("g8f6", 860),
        ])
    );
    assert_eq!(
        book_moves(&book, &["d2d4", "g8f6"]),
        expected(&[
            ("b1d2", 2),
            ("b1c3", 81),
            ("c1f4", 5),
            ("c1g5", 235),
            ("g1f3", 3188),
            ("c2c3", 20),
            ("c2c4", 13682),
            ("e2e3", 14),
            ("g2g3", 29),
        ])
    );
    // Deeper than the cut: nothing.
    assert!(book_moves(&book, &["e2e4", "e7e5", "g1f3"]).is_empty());
}

#[test]
fn weighted_choice_follows_the_weights_and_best_takes_the_heaviest() {
    let books = |selection| played(open(), selection, 40);
    let pos = Position::startpos();
    let weighted = books(Selection::Weighted);
    let mut rng = fastrand::Rng::with_seed(14);
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let draws = 20_000;
    for _ in 0..draws {
        let c = weighted.choose(&pos, None, rng.f64()).expect("a book move");
        assert_eq!(c.total, 30_797);
        *counts.entry(c.mv.to_uci(false)).or_default() += 1;
    }
    // Expected shares: e4 39.4%, d4 36.6%, Nf3 12.2%, c4 10.7%, g3 0.8%.
    for (m, weight) in [
        ("e2e4", 12135),
        ("d2d4", 11257),
        ("g1f3", 3745),
        ("c2c4", 3294),
    ] {
        let share = counts[m] as f64 / draws as f64;
        let want = weight as f64 / 30_797.0;
        assert!((share - want).abs() < 0.015, "{m}: {share} vs {want}");
    }
    assert!(counts.get("a2a3").copied().unwrap_or(0) < 20);
    let best = books(Selection::Best).choose(&pos, None, 0.99).unwrap();
    assert_eq!(
        (best.mv.to_uci(false).as_str(), best.weight),
        ("e2e4", 12135)
    );
}

#[test]
fn book_depth_and_chess960_end_the_book() {
    let sources = |max_plies| Sources {
        books: vec![played(open(), Selection::Best, max_plies)],
        tablebases: None,
    };
    let (e4, last) = after(&["e2e4"]);
    let two = sources(2);
    let c = two.choose(&e4, last, false, 0.5).expect("ply 1 < 2");
    assert_eq!(c.mv.to_uci(false), "c7c5");
    assert!(matches!(
        c.source,
        Source::Book {
            weight: 14550,
            total: 34884
        }
    ));
    assert_eq!(sources(1).choose(&e4, last, false, 0.5), None);
    // A Chess960 game never asks the book, even from the standard start.
    assert_eq!(two.choose(&Position::startpos(), None, true, 0.5), None);
}

#[test]
fn book_keys_use_polyglots_en_passant_rule() {
    // Black's d7d5 lands beside White's e5 pawn, which is pinned along the
    // fifth rank: no legal capture, so kaissa's key leaves the e.p. file
    // out while Polyglot's (python-chess: 0x86b956eabb0c69db) counts it.
    let start = Position::from_fen("7k/3p4/8/r3P2K/8/8/8/8 b - - 0 1").unwrap();
    let d5 = start.parse_uci("d7d5", false).unwrap();
    let pos = start.play(d5);
    let polyglot = 0x86b9_56ea_bb0c_69db;
    assert_ne!(pos.key(), polyglot);
    assert_eq!(book::polyglot_key(&pos, Some(d5)), polyglot);
    // A book holding this position under its Polyglot key is found.
    let kh4 = pos.parse_uci("h5h4", false).unwrap();
    let data = book::encode_entry(polyglot, kh4, 7).to_vec();
    let books = played(
        Book::from_bytes(Path::new("ep.bin"), data).unwrap(),
        Selection::Best,
        100,
    );
    let c = books
        .choose(&pos, Some(d5), 0.0)
        .expect("found by the Polyglot key");
    assert_eq!((c.mv, c.weight), (kh4, 7));
}

#[test]
fn a_chess960_book_is_read_the_same_way_castling_as_king_takes_rook() {
    // A Chess960 start (BQNBRKRN): python-chess 1.11.2, chess.polyglot.zobrist_hash(chess.Board(fen, chess960=True)),
    // gives 0x71a85deb841ac42f; the castling rights are hashed.
    let pos =
        Position::from_fen("bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1").unwrap();
    let key = 0x71a8_5deb_841a_c42f;
    assert_eq!(book::polyglot_key(&pos, None), key);
    // The king beside its rook may castle at once: the book writes f1g1.
    let castle = pos.parse_uci("f1g1", true).unwrap();
    assert!(castle.is_castle());
    let data = book::encode_entry(key, castle, 3).to_vec();
    let chess960 = played(
        Book::from_bytes(Path::new("960.bin"), data).unwrap(),
        Selection::Best,
        20,
    );
    let c = chess960.choose(&pos, None, 0.5).expect("a book move");
    assert_eq!((c.mv.to_uci(true), c.weight), ("f1g1".to_owned(), 3));
    // `kaissa uci` (and any source list) never asks a book in Chess960.
    let sources = Sources {
        books: vec![chess960],
        tablebases: None,
    };
    assert_eq!(sources.choose(&pos, None, true, 0.5), None);
}

#[test]
fn uci_own_book_answers_from_the_book_without_a_search() {
    let mut e = Uci::start();
    e.send("uci");
    let lines = e.until("uciok");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name OwnBook type check"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name BookFile type string"))
    );
    e.send(&format!("setoption name BookFile value {BOOK}"));
    e.send("setoption name OwnBook value true");
    e.send("setoption name BookSelection value best");
    e.send("isready");
    let lines = e.until("readyok");
    assert!(
        lines.iter().any(|l| l == "info string book: 407 entries"),
        "{lines:?}"
    );
    e.send("position startpos moves d2d4 g8f6");
    e.send("go wtime 60000 btime 60000");
    let lines = e.until("bestmove");
    assert_eq!(lines.last().unwrap(), "bestmove c2c4", "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string book (weight 13682 of 17256)"))
    );
    assert!(
        !lines.iter().any(|l| l.contains(" nodes ")),
        "no search: {lines:?}"
    );
    // Out of the book: a search.
    e.send("position startpos moves e2e4 e7e5 g1f3");
    e.send("go depth 3");
    let lines = e.until("bestmove");
    assert!(
        lines.iter().any(|l| l.starts_with("info depth")),
        "{lines:?}"
    );
    // A missing file is reported and leaves no book.
    e.send("setoption name BookFile value /nonexistent/book.bin");
    e.send("isready");
    let lines = e.until("readyok");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("cannot read /nonexistent/book.bin"))
    );
    e.send("position startpos");
    e.send("go depth 2");
    let lines = e.until("bestmove");
    assert!(
        lines.iter().any(|l| l.starts_with("info depth")),
        "{lines:?}"
    );
    e.close();
}
