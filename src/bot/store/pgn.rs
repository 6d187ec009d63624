//! PGN export of a finished game: the seven-tag roster plus the Lichess
//! extras (Elo, TimeControl, Variant, FEN), moves in SAN with the engine's
//! evaluation of each of our moves as a `[%eval ...]` comment.

use crate::bot::board::standard::GameRecord;
use crate::bot::board::variant::{VariantRecord, pgn_name};
use crate::chess::Color;
use std::fmt::Write as _;

/// The engine's evaluation after one of our moves, from White's side.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Eval {
    Cp(i32),
    /// Mate in n moves (negative: White is mated).
    Mate(i32),
}

/// What a PGN needs besides the moves.
#[derive(Clone, Debug, Default)]
pub struct PgnHeaders {
    pub event: String,
    pub site: String,
    /// `YYYY.MM.DD`.
    pub date: String,
    pub white: String,
    pub black: String,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    /// Seconds + increment (`180+2`), or `-` for correspondence.
    pub time_control: String,
    pub termination: Option<String>,
}

/// The moves of a game as a PGN writes them, in any variant.
#[derive(Clone, Debug)]
pub struct PgnMoves {
    /// The `Variant` tag, none for standard chess.
    pub variant: Option<&'static str>,
    /// The initial FEN, none for the (variant's) start position.
    pub initial_fen: Option<String>,
    pub first_number: u32,
    pub first_turn: Color,
    pub sans: Vec<String>,
}

impl PgnMoves {
    /// A game of standard chess, Chess960 or from a position.
    pub fn of_chess(record: &GameRecord) -> PgnMoves {
        PgnMoves {
            variant: record.chess960().then_some("Chess960"),
            initial_fen: record.initial_fen(),
            first_number: record.initial().fullmove_number(),
            first_turn: record.initial().turn(),
            sans: record.san_moves(),
        }
    }

    /// A game in one of the other variants.
    pub fn of_variant(record: &VariantRecord) -> PgnMoves {
        PgnMoves {
            variant: pgn_name(record.variant()),
            initial_fen: record.initial_fen().map(str::to_owned),
            first_number: record.initial_move_number(),
            first_turn: record.initial_turn(),
            sans: record.san_moves(),
        }
    }
}

/// The PGN of a game; `evals[i]` is the evaluation after move `i`, if
/// the engine gave one.
pub fn write_pgn(headers: &PgnHeaders, moves: &PgnMoves, evals: &[Option<Eval>]) -> String {
    let mut out = String::new();
    let tag = |out: &mut String, name: &str, value: &str| {
        let value = value.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(out, "[{name} \"{value}\"]");
    };
    tag(&mut out, "Event", &headers.event);
    tag(&mut out, "Site", &headers.site);
    tag(&mut out, "Date", &headers.date);
    tag(&mut out, "Round", "-");
    tag(&mut out, "White", &headers.white);
    tag(&mut out, "Black", &headers.black);
    tag(&mut out, "Result", &headers.result);
    if let Some(elo) = headers.white_elo {
        tag(&mut out, "WhiteElo", &elo.to_string());
    }
    if let Some(elo) = headers.black_elo {
        tag(&mut out, "BlackElo", &elo.to_string());
    }
    tag(&mut out, "TimeControl", &headers.time_control);
    if let Some(variant) = moves.variant {
        tag(&mut out, "Variant", variant);
    }
    if let Some(fen) = &moves.initial_fen {
        tag(&mut out, "SetUp", "1");
        tag(&mut out, "FEN", fen);
    }
    if let Some(t) = &headers.termination {
        tag(&mut out, "Termination", t);
    }
    out.push('\n');

    let mut tokens = Vec::new();
    let mut number = moves.first_number;
    let mut turn = moves.first_turn;
    for (i, san) in moves.sans.iter().cloned().enumerate() {
        match turn {
            Color::White => tokens.push(format!("{number}.")),
            Color::Black if i == 0 => tokens.push(format!("{number}...")),
            Color::Black => {}
        }
        tokens.push(san);
        if let Some(Some(eval)) = evals.get(i) {
            tokens.push(match eval {
                Eval::Cp(cp) => format!("{{ [%eval {:.2}] }}", *cp as f64 / 100.0),
                Eval::Mate(n) => format!("{{ [%eval #{n}] }}"),
            });
        }
        if turn == Color::Black {
            number += 1;
        }
        turn = !turn;
    }
    tokens.push(headers.result.clone());

    // Wrap at 80 columns.
    let mut line_len = 0;
    for t in tokens {
        if line_len > 0 && line_len + 1 + t.len() > 80 {
            out.push('\n');
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(&t);
        line_len += t.len();
    }
    out.push_str("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> PgnHeaders {
        PgnHeaders {
            event: "Rated blitz game".into(),
            site: "https://lichess.org/abcd1234".into(),
            date: "2026.11.21".into(),
            white: "kaissa".into(),
            black: "Opp \"quoted\"".into(),
            white_elo: Some(2000),
            black_elo: None,
            result: "1-0".into(),
            time_control: "180+2".into(),
            termination: Some("Normal".into()),
        }
    }

    #[test]
    fn standard_game_with_evals() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync("f2f3 e7e5 g2g4 d8h4").unwrap();
        let evals = [Some(Eval::Cp(-35)), None, Some(Eval::Mate(-1)), None];
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &evals);
        assert!(pgn.contains("[Black \"Opp \\\"quoted\\\"\"]"), "{pgn}");
        assert!(pgn.contains("[WhiteElo \"2000\"]"));
        assert!(!pgn.contains("BlackElo"));
        assert!(!pgn.contains("[FEN"));
        assert!(
            pgn.contains("1. f3 { [%eval -0.35] } e5 2. g4 { [%eval #-1] } Qh4# 1-0"),
            "{pgn}"
        );
    }

    #[test]
    fn black_to_move_from_a_fen_and_chess960_tags() {
        let mut r = GameRecord::new("4k3/8/8/8/8/8/4P3/4K3 b - - 0 30", false).unwrap();
        r.sync("e8d7 e2e4").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &[]);
        assert!(pgn.contains("[SetUp \"1\"]"));
        assert!(pgn.contains("[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 30\"]"));
        assert!(pgn.contains("30... Kd7 31. e4 1-0"), "{pgn}");

        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let r = GameRecord::new(fen, true).unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &[]);
        assert!(pgn.contains("[Variant \"Chess960\"]"));
    }

    #[test]
    fn variant_games_carry_their_tag_and_drops() {
        use crate::lichess::model::VariantKey;
        let mut r = VariantRecord::new(VariantKey::Crazyhouse, "startpos").unwrap();
        r.sync("e2e4 d7d5 e4d5 d8d5 P@e6").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_variant(&r), &[]);
        assert!(pgn.contains("[Variant \"Crazyhouse\"]"), "{pgn}");
        assert!(!pgn.contains("[FEN"), "{pgn}");
        assert!(pgn.contains("1. e4 d5 2. exd5 Qxd5 3. P@e6 1-0"), "{pgn}");
        let r =
            VariantRecord::new(VariantKey::KingOfTheHill, "4k3/8/8/8/8/4K3/8/8 w - - 0 1").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_variant(&r), &[]);
        assert!(pgn.contains("[Variant \"King of the Hill\"]"), "{pgn}");
        assert!(
            pgn.contains("[FEN \"4k3/8/8/8/8/4K3/8/8 w - - 0 1\"]"),
            "{pgn}"
        );
    }

    #[test]
    fn long_games_wrap_at_80_columns() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        let moves = "g1f3 g8f6 f3g1 f6g8 ".repeat(10);
        r.sync(&moves).unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &[]);
        assert!(pgn.lines().all(|l| l.len() <= 80));
        assert!(pgn.lines().filter(|l| !l.starts_with('[')).count() > 2);
    }
}
