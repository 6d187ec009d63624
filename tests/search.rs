//! Whole-search behaviour: mates found with the right distance, draws by
//! repetition and the 50-move rule scored as draws, limits respected, and
//! the bench signature deterministic.

use kaissa::chess::Position;
use kaissa::engine::Score;
use kaissa::engine::bench;
use kaissa::engine::limits::Limits;
use kaissa::engine::search::{SearchResult, Searcher, search_blocking};
use kaissa::engine::tt::TranspositionTable;

fn search(fen: &str, history: &[u64], limits: Limits) -> (Position, SearchResult) {
    let pos = Position::from_fen(fen).expect("valid FEN");
    let tt = TranspositionTable::new(16);
    let mut s = Searcher::new();
    let r = search_blocking(&mut s, &tt, &pos, history, &limits);
    (pos, r)
}

fn best_uci(pos: &Position, r: &SearchResult) -> String {
    let m = r.best.expect("a best move");
    assert!(pos.legal_moves().contains(m));
    m.to_uci(false)
}

#[test]
fn finds_mates_with_the_right_distance() {
    for (fen, depth, mate, first) in [
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 4, 1, "a1a8"),
        (
            "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1",
            6,
            2,
            "d5f6",
        ),
        (
            "1rb4r/pkPp3p/1b1P3n/1Q6/N3Pp2/8/P1P3PP/7K w - - 1 1",
            6,
            2,
            "b5d5",
        ),
        ("r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1", 8, 3, "f6a6"),
        (
            "r1b1kb1r/pppp1ppp/5q2/4n3/3KP3/2N3PN/PPP4P/R1BQ1B1R b kq - 0 1",
            8,
            3,
            "f8c5",
        ),
    ] {
        let (pos, r) = search(fen, &[], Limits::depth(depth));
        assert_eq!(
            Score::from_value(r.value),
            Score::Mate(mate),
            "{fen}: value {}",
            r.value
        );
        assert_eq!(best_uci(&pos, &r), first, "{fen}");
    }
}

#[test]
fn sees_being_mated() {
    // Black's only move is Kb8, then Rh8 mates.
    let (_, r) = search("k7/8/1K6/8/8/8/8/7R b - - 0 1", &[], Limits::depth(6));
    assert!(matches!(Score::from_value(r.value), Score::Mate(-1)));
}

#[test]
fn perpetual_check_is_a_draw() {
    // Down a rook and a queen's worth of safety: only the perpetual
    // Qe8+ Kh7 Qh5+ saves White.
    let (pos, r) = search("6k1/6p1/8/6KQ/8/8/r7/1q6 w - - 0 1", &[], Limits::depth(10));
    assert_eq!(r.value, 0);
    assert_eq!(best_uci(&pos, &r), "h5e8");
}

#[test]
fn threefold_against_game_history() {
    // White is a queen up. The knights have danced twice; Black to move
    // can repeat the start position a third time and claim the draw.
    let mut pos = Position::from_fen("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
        .expect("valid");
    let mut history = Vec::new();
    for m in "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1".split(' ') {
        history.push(pos.key());
        let mv = pos.parse_uci(m, false).expect("legal");
        pos = pos.play(mv);
    }
    let tt = TranspositionTable::new(16);
    let mut s = Searcher::new();
    let r = search_blocking(&mut s, &tt, &pos, &history, &Limits::depth(6));
    assert_eq!(r.value, 0);
    assert_eq!(r.best.map(|m| m.to_uci(false)).as_deref(), Some("f6g8"));
    // Without the history, Black is simply lost.
    let r = search_blocking(&mut s, &tt, &pos, &[], &Limits::depth(6));
    assert!(r.value < -500, "{}", r.value);
}

#[test]
fn fifty_move_rule() {
    // A rook up, but every move reaches the 100th half-move.
    let (_, r) = search("8/8/8/4k3/8/8/8/R3K3 w - - 99 120", &[], Limits::depth(8));
    assert_eq!(r.value, 0);
    let (_, r) = search("8/8/8/4k3/8/8/8/R3K3 w - - 0 120", &[], Limits::depth(8));
    assert!(r.value > 300);
    // Mate on the 100th half-move still counts.
    let (pos, r) = search("6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80", &[], Limits::depth(4));
    assert_eq!(Score::from_value(r.value), Score::Mate(1));
    assert_eq!(best_uci(&pos, &r), "a1a8");
}

#[test]
fn no_legal_moves_gives_no_move() {
    let (_, r) = search("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", &[], Limits::depth(3));
    assert_eq!(r.best, None);
    let (_, r) = search("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1", &[], Limits::depth(3));
    assert_eq!(r.best, None);
}

#[test]
fn node_limit_still_gives_a_legal_move() {
    for fen in [
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    ] {
        for nodes in [1, 2, 50, 1000] {
            let (pos, r) = search(fen, &[], Limits::nodes(nodes));
            best_uci(&pos, &r);
            assert!(r.nodes <= nodes + 1, "{} > {}", r.nodes, nodes);
        }
    }
}

#[test]
fn bench_signature_is_deterministic() {
    let options = || bench::BenchOptions {
        net: Some(kaissa::engine::nnue::embedded()),
        ..bench::BenchOptions::default()
    };
    let a = bench::run(7, options(), &mut |_, _, _| {});
    let b = bench::run(7, options(), &mut |_, _, _| {});
    assert_eq!(a.nodes, b.nodes);
    assert!(a.nodes > 10_000);
}
