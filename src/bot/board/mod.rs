//! The game's record in its rules: kaissa's own board for standard chess,
//! Chess960 and games from a position (what the built-in engine, the books
//! and the tables read), shakmaty's for Lichess's other variants. The game
//! task asks it what the rules say (whose turn, the position's key, the
//! material to win, legality) without caring which it is.

use crate::bot::board::standard::{GameRecord, RecordError};
use crate::bot::board::variant::VariantRecord;
use crate::bot::store::pgn::PgnMoves;
pub mod line;
pub mod opening;
pub mod standard;
pub mod variant;

use crate::chess::Color;
use crate::engine::book::{BookChoice, PlayedBook};
use crate::lichess::model::VariantKey;

pub(super) enum Record {
    Native(Box<GameRecord>),
    Variant(Box<VariantRecord>),
}

impl Record {
    /// The record of a `variant` game from `initial_fen`.
    pub(super) fn new(variant: VariantKey, initial_fen: &str) -> Result<Record, RecordError> {
        match variant {
            VariantKey::Standard | VariantKey::FromPosition | VariantKey::Chess960 => {
                GameRecord::new(initial_fen, variant == VariantKey::Chess960)
                    .map(|r| Record::Native(Box::new(r)))
            }
            other => VariantRecord::new(other, initial_fen).map(|r| Record::Variant(Box::new(r))),
        }
    }

    /// Kaissa's own board, for standard chess and its set-ups.
    pub(super) fn native(&self) -> Option<&GameRecord> {
        match self {
            Record::Native(r) => Some(r.as_ref()),
            Record::Variant(_) => None,
        }
    }

    pub(super) fn sync(&mut self, moves: &str) -> Result<usize, RecordError> {
        match self {
            Record::Native(r) => r.sync(moves),
            Record::Variant(r) => r.sync(moves),
        }
    }

    pub(super) fn ply(&self) -> usize {
        match self {
            Record::Native(r) => r.ply(),
            Record::Variant(r) => r.ply(),
        }
    }

    /// The side to move.
    pub(super) fn turn(&self) -> Color {
        match self {
            Record::Native(r) => r.position().turn(),
            Record::Variant(r) => r.turn(),
        }
    }

    /// The side to move at the start.
    pub(super) fn initial_turn(&self) -> Color {
        match self {
            Record::Native(r) => r.initial().turn(),
            Record::Variant(r) => r.initial_turn(),
        }
    }

    /// The current position's key.
    pub(super) fn key(&self) -> u64 {
        match self {
            Record::Native(r) => r.position().key(),
            Record::Variant(r) => r.key(),
        }
    }

    /// Whether `side` has the material to win.
    pub(super) fn can_win(&self, side: Color) -> bool {
        match self {
            Record::Native(r) => !r.position().has_insufficient_material(side),
            Record::Variant(r) => r.can_win(side),
        }
    }

    /// Whether castling moves are written the Chess960 way (king takes
    /// rook): a Chess960 game, or one set up from a position the Chess960
    /// way.
    pub(crate) fn chess960(&self) -> bool {
        match self {
            Record::Native(r) => r.chess960(),
            Record::Variant(_) => false,
        }
    }

    /// The moves so far in UCI as an engine reads them: castling king
    /// takes rook in a Chess960 setup, the king's move to its square
    /// otherwise.
    pub(super) fn uci_moves(&self) -> Vec<String> {
        match self {
            Record::Native(r) => r.moves().iter().map(|m| m.to_uci(r.chess960())).collect(),
            Record::Variant(r) => r.uci_moves(),
        }
    }

    /// The position now, as a FEN.
    pub(crate) fn fen(&self) -> String {
        match self {
            Record::Native(r) => r.position().to_fen(crate::chess::CastlingNotation::XFen),
            Record::Variant(r) => r.fen(),
        }
    }

    /// The initial FEN for a UCI engine's `position fen`; None for the
    /// start position (of the variant).
    pub(super) fn engine_fen(&self) -> Option<String> {
        match self {
            Record::Native(r) => r.initial_fen(),
            Record::Variant(r) => r.initial_fen().map(str::to_owned),
        }
    }

    /// The key of the position after the move list `moves` (UCI), if the
    /// moves are legal.
    pub(super) fn after(&self, moves: &[String]) -> Option<u64> {
        let text = moves.join(" ");
        match self {
            Record::Native(r) => {
                let mut r = r.clone();
                r.sync(&text).ok()?;
                Some(r.position().key())
            }
            Record::Variant(r) => {
                let mut r = r.clone();
                r.sync(&text).ok()?;
                Some(r.key())
            }
        }
    }

    /// An engine's move `text` if it is legal here: the UCI form to post
    /// and its SAN.
    pub(super) fn legal(&self, text: &str) -> Option<(String, String)> {
        match self {
            Record::Native(r) => {
                let pos = r.position();
                let m = pos.parse_uci(text, r.chess960()).ok()?;
                Some((m.to_uci(r.chess960()), pos.san(m)))
            }
            Record::Variant(r) => Some((r.legal_uci(text)?, r.san(text)?)),
        }
    }

    /// The move `book` plays in the position now (UCI, as posted), if the
    /// game is within the book's depth and the book holds a legal move
    /// here. `random` in `0..1`.
    pub(super) fn book_move(&self, book: &PlayedBook, random: f64) -> Option<BookChoice<String>> {
        match self {
            Record::Native(r) => {
                let c = book.choose(r.position(), r.moves().last().copied(), random)?;
                Some(BookChoice {
                    mv: c.mv.to_uci(r.chess960()),
                    weight: c.weight,
                    total: c.total,
                })
            }
            Record::Variant(r) => r.book_move(book, random),
        }
    }

    /// A principal variation (UCI) in SAN, `max` moves at most.
    pub(super) fn pv_san(&self, pv: &[String], max: usize) -> String {
        match self {
            Record::Native(r) => {
                let mut pos = r.position().clone();
                let mut out = Vec::new();
                for text in pv.iter().take(max) {
                    let Ok(m) = pos.parse_uci(text, r.chess960()) else {
                        break;
                    };
                    out.push(pos.san(m));
                    pos = pos.play(m);
                }
                out.join(" ")
            }
            Record::Variant(r) => r.pv_san(pv, max),
        }
    }

    /// The moves for the PGN.
    pub(super) fn pgn_moves(&self) -> PgnMoves {
        match self {
            Record::Native(r) => PgnMoves::of_chess(r),
            Record::Variant(r) => PgnMoves::of_variant(r),
        }
    }

    /// Every legal move, in UCI as posted.
    pub(super) fn legal_ucis(&self) -> Vec<String> {
        match self {
            Record::Native(r) => r
                .position()
                .legal_moves()
                .iter()
                .map(|m| m.to_uci(r.chess960()))
                .collect(),
            Record::Variant(r) => r.legal_ucis(),
        }
    }

    /// Some legal move, for when no engine answers.
    pub(super) fn any_legal(&self) -> Option<String> {
        match self {
            Record::Native(r) => {
                let pos = r.position();
                pos.legal_moves()
                    .iter()
                    .next()
                    .map(|m| m.to_uci(r.chess960()))
            }
            Record::Variant(r) => r.any_legal(),
        }
    }
}
