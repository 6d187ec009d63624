//! Differential test against shakmaty (a dev-dependency only): along random
//! playouts in standard chess and Chess960, both libraries must agree on
//! the legal move set, the FEN, the Zobrist key and the game status; our
//! incremental key must equal the from-scratch key, and playing a move
//! must leave the original position untouched (copy-make).

use kaissa::chess::{CastlingNotation, Position};
use shakmaty::fen::Fen;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position as _};

use fastrand::Rng;

/// The Chess960 start position number `n` (0..960).
fn chess960_fen(n: usize) -> String {
    kaissa::chess::chess960_start_fen(n as u32)
}

fn sorted_uci_ours(pos: &Position) -> Vec<String> {
    let mut v: Vec<String> = pos.legal_moves().iter().map(|m| m.to_uci(true)).collect();
    v.sort();
    v
}

fn sorted_uci_theirs(pos: &Chess) -> Vec<String> {
    let mut v: Vec<String> = pos
        .legal_moves()
        .iter()
        .map(|m| m.to_uci(CastlingMode::Chess960).to_string())
        .collect();
    v.sort();
    v
}

fn compare(ours: &Position, theirs: &Chess, context: &str) {
    assert_eq!(
        sorted_uci_ours(ours),
        sorted_uci_theirs(theirs),
        "moves differ: {context}"
    );
    let their_fen = Fen::from_position(theirs, EnPassantMode::Legal).to_string();
    let our_fen = ours.to_fen(CastlingNotation::XFen);
    assert_eq!(our_fen, their_fen, "FEN differs: {context}");
    assert_eq!(
        Position::from_fen(&their_fen).as_ref(),
        Ok(ours),
        "FEN round trip: {context}"
    );
    let their_key: Zobrist64 = theirs.zobrist_hash(EnPassantMode::Legal);
    assert_eq!(ours.key(), their_key.0, "key differs: {context}");
    assert_eq!(
        ours.key(),
        ours.compute_key(),
        "incremental key drifted: {context}"
    );
    assert_eq!(
        ours.is_checkmate(),
        theirs.is_checkmate(),
        "checkmate: {context}"
    );
    assert_eq!(
        ours.is_stalemate(),
        theirs.is_stalemate(),
        "stalemate: {context}"
    );
    assert_eq!(
        ours.is_insufficient_material(),
        theirs.is_insufficient_material(),
        "insufficient material: {context}"
    );
    assert_eq!(ours.in_check(), theirs.is_check(), "check: {context}");
}

/// Plays random games from `start` until `positions` positions were
/// compared; returns how many were.
fn playouts(mut start: impl FnMut(&mut Rng) -> String, positions: usize, seed: u64) -> usize {
    let mut rng = Rng::with_seed(seed);
    let mut compared = 0;
    while compared < positions {
        let fen = start(&mut rng);
        let mut ours = Position::from_fen(&fen).unwrap();
        let mut theirs: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Chess960)
            .unwrap();
        for ply in 0..300 {
            let context = format!(
                "{} (from {fen}, ply {ply})",
                ours.to_fen(CastlingNotation::XFen)
            );
            compare(&ours, &theirs, &context);
            compared += 1;
            let moves = ours.legal_moves();
            if moves.is_empty() || ours.is_insufficient_material() {
                break;
            }
            let m = moves[rng.usize(..moves.len())];
            let uci = m.to_uci(true);
            let before = ours.clone();
            let next = ours.play(m);
            assert_eq!(ours, before, "play() changed the original position");
            let mut in_place = ours.clone();
            in_place.play_unchecked(m);
            assert_eq!(in_place, next, "play and play_unchecked differ");
            let their_move = uci
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&theirs)
                .unwrap_or_else(|e| panic!("shakmaty rejects {uci}: {e} at {context}"));
            theirs.play_unchecked(their_move);
            ours = next;
        }
    }
    compared
}

#[test]
fn agrees_with_shakmaty_in_standard_chess() {
    let n = playouts(|_| kaissa::chess::STARTPOS.to_string(), 20_000, 0x1234_5678);
    assert!(n >= 20_000);
}

#[test]
fn agrees_with_shakmaty_in_chess960() {
    let n = playouts(|rng| chess960_fen(rng.usize(..960)), 20_000, 0x8765_4321);
    assert!(n >= 20_000);
}

#[test]
fn agrees_with_shakmaty_from_tricky_positions() {
    let tricky = [
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
        "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    ];
    let mut i = 0;
    let n = playouts(
        |_| {
            i += 1;
            tricky[i % tricky.len()].to_string()
        },
        5_000,
        42,
    );
    assert!(n >= 5_000);
}

#[test]
fn standard_games_accept_both_castling_forms() {
    let fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
    let pos = Position::from_fen(fen).unwrap();
    for (a, b) in [("e1g1", "e1h1"), ("e1c1", "e1a1")] {
        assert_eq!(
            pos.parse_uci(a, false).unwrap(),
            pos.parse_uci(b, false).unwrap()
        );
    }
    // Every Chess960 start position.
    for n in 0..960 {
        let fen = chess960_fen(n);
        let ours = Position::from_fen(&fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
        let theirs: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Chess960)
            .unwrap();
        compare(&ours, &theirs, &fen);
    }
    assert_eq!(chess960_fen(518), kaissa::chess::STARTPOS);
}
