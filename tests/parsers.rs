//! Property test of the text parsers: random strings and mutations of valid
//! FENs fed to `Position::from_fen`, random strings to `parse_uci` and
//! `parse_san`. Every call must return (Ok or Err), never panic; whatever
//! parses must be a consistent position.

use kaissa::chess::{CastlingNotation, Position};

use fastrand::Rng;

const SEEDS: [&str; 6] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
];

/// Characters that FENs and moves are made of, plus some that are not.
const ALPHABET: &[char] = &[
    'p', 'n', 'b', 'r', 'q', 'k', 'P', 'N', 'B', 'R', 'Q', 'K', '1', '2', '3', '4', '5', '6', '7',
    '8', '9', '0', '/', ' ', '-', 'w', 'a', 'c', 'd', 'e', 'f', 'g', 'h', 'A', 'H', 'x', '+', '#',
    '=', 'O', '\t', '\n', 'é', '♞', '\0',
];

fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..1 + rng.usize(..4) {
        let c = ALPHABET[rng.usize(..ALPHABET.len())];
        let at = rng.usize(..chars.len() + 1);
        match rng.usize(..4) {
            0 => chars.insert(at, c),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            2 if at < chars.len() => chars[at] = c,
            _ => {
                // Swap two characters.
                let other = rng.usize(..chars.len().max(1));
                if at < chars.len() && other < chars.len() {
                    chars.swap(at, other);
                }
            }
        }
    }
    chars.into_iter().collect()
}

fn random_string(rng: &mut Rng) -> String {
    let len = rng.usize(..80);
    (0..len)
        .map(|_| ALPHABET[rng.usize(..ALPHABET.len())])
        .collect()
}

/// A parsed position must be self-consistent.
fn check_consistent(pos: &Position, input: &str) {
    let fen = pos.to_fen(CastlingNotation::XFen);
    let again = Position::from_fen(&fen).unwrap_or_else(|e| panic!("{input:?} -> {fen}: {e}"));
    assert_eq!(&again, pos, "round trip of {input:?}");
    assert_eq!(pos.key(), pos.compute_key(), "key of {input:?}");
    for m in pos.legal_moves().iter() {
        let after = pos.play(*m);
        assert_eq!(
            after.key(),
            after.compute_key(),
            "key after {m:?} in {input:?}"
        );
        assert!(
            !after.is_attacked(after.king(pos.turn()), after.turn(), after.occupied()),
            "{m:?} leaves the king in check in {input:?}"
        );
    }
}

#[test]
fn fen_parser_never_panics() {
    let mut rng = Rng::with_seed(7);
    let mut parsed = 0;
    for i in 0..200_000 {
        let input = if i % 4 == 0 {
            random_string(&mut rng)
        } else {
            let seed = SEEDS[rng.usize(..SEEDS.len())];
            mutate(&mut rng, seed)
        };
        if let Ok(pos) = Position::from_fen(&input) {
            check_consistent(&pos, &input);
            parsed += 1;
        }
    }
    // Mutations keep some inputs valid, so both paths are exercised.
    assert!(parsed > 1_000, "only {parsed} inputs parsed");
}

#[test]
fn move_parsers_never_panic_and_never_change_the_position() {
    let mut rng = Rng::with_seed(11);
    let positions: Vec<Position> = SEEDS
        .iter()
        .map(|f| Position::from_fen(f).unwrap())
        .collect();
    for _ in 0..100_000 {
        let pos = &positions[rng.usize(..positions.len())];
        let before = pos.clone();
        let input = if rng.usize(..2) == 0 {
            random_string(&mut rng).chars().take(6).collect()
        } else {
            let legal = pos.legal_moves();
            let m = legal[rng.usize(..legal.len())];
            let uci = m.to_uci(rng.usize(..2) == 0);
            mutate(&mut rng, &uci)
        };
        for chess960 in [false, true] {
            if let Ok(m) = pos.parse_uci(&input, chess960) {
                assert!(
                    pos.legal_moves().contains(m),
                    "{input:?} parsed to an illegal move"
                );
            }
        }
        if let Ok(m) = pos.parse_san(&input) {
            assert!(pos.legal_moves().contains(m));
        }
        assert_eq!(pos, &before);
    }
}

#[test]
fn every_legal_move_round_trips_through_uci_and_san() {
    for fen in SEEDS {
        let pos = Position::from_fen(fen).unwrap();
        let chess960 = fen.contains("HFhf");
        for &m in pos.legal_moves().iter() {
            assert_eq!(pos.parse_uci(&m.to_uci(chess960), chess960), Ok(m), "{fen}");
            assert_eq!(pos.parse_san(&pos.san(m)), Ok(m), "{fen} {}", pos.san(m));
        }
    }
}
