//! The local move sources asked before a search: the opening books, then
//! the endgame tables. [`Sources::choose`] decides whether a position is
//! answered without a search in `kaissa uci`; the bot's mover asks its
//! own books (each for the games its filters admit, in every variant),
//! then [`Sources::table_move`], then Lichess's online sources.

use super::book::{self, BookChoice, PlayedBook};
use super::score::{DRAW, TB_WIN};
use super::tablebase::{CURSED, Outcome, TablebaseMove, Tablebases};
use crate::chess::{Move, Position};
use std::fmt;
use std::sync::Arc;

/// Where a move came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An opening book: the move's weight and the position's total.
    Book { weight: u16, total: u32 },
    /// The local endgame tables.
    Tablebase { outcome: Outcome, dtz: i32 },
    /// Lichess's tablebase server.
    OnlineTablebase { outcome: Outcome },
    /// Lichess's cloud evaluation (an online book).
    CloudEval { cp: i32, depth: u32 },
    /// Lichess's opening explorer: games with the move, and the mover's
    /// score in them, per mille.
    Explorer { games: u32, score: u32 },
    /// ChessDB: its score for the mover (beyond +-20000 a tablebase or
    /// mate result) and depth.
    ChessDb { cp: i32, depth: u32 },
    /// kaissa's own search.
    Search,
}

impl Source {
    /// The score the source gives the position, from the mover's view
    /// (as the search would: tables' wins just below mates), if any.
    pub fn value(&self) -> Option<i32> {
        match *self {
            Source::Tablebase { outcome, .. } | Source::OnlineTablebase { outcome } => {
                Some(outcome_value(outcome))
            }
            Source::CloudEval { cp, .. } => Some(cp),
            Source::ChessDb { cp, .. } => Some(cp.clamp(-10_000, 10_000)),
            _ => None,
        }
    }
}

/// The search's value of a tablebase outcome at the root.
pub fn outcome_value(outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Win => TB_WIN,
        Outcome::CursedWin => DRAW + CURSED,
        Outcome::Draw => DRAW,
        Outcome::BlessedLoss => DRAW - CURSED,
        Outcome::Loss => -TB_WIN,
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Book { weight, total } => write!(f, "book (weight {weight} of {total})"),
            Source::Tablebase { outcome, dtz } => write!(f, "tablebase ({outcome}, dtz {dtz})"),
            Source::OnlineTablebase { outcome } => write!(f, "online tablebase ({outcome})"),
            Source::CloudEval { cp, depth } => write!(f, "cloud eval (cp {cp}, depth {depth})"),
            Source::Explorer { games, score } => write!(
                f,
                "explorer ({games} games, {}.{}%)",
                score / 10,
                score % 10
            ),
            Source::ChessDb { cp, depth } => write!(f, "chessdb (cp {cp}, depth {depth})"),
            Source::Search => f.write_str("search"),
        }
    }
}

/// A move chosen without a search.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SourceMove {
    pub mv: Move,
    pub source: Source,
}

/// The books (asked in order; the bot keeps its own) and tables of a
/// bot or a UCI session.
#[derive(Debug, Default)]
pub struct Sources {
    pub books: Vec<PlayedBook>,
    pub tablebases: Option<Arc<Tablebases>>,
}

impl Sources {
    /// A move for `pos` (reached by `last_move`, if known) from the first
    /// source that has one: the books (standard chess only, within their
    /// depth), then the tables (no castling rights, few enough pieces).
    /// `random` in `0..1` picks among weighted book moves.
    pub fn choose(
        &self,
        pos: &Position,
        last_move: Option<Move>,
        chess960: bool,
        random: f64,
    ) -> Option<SourceMove> {
        if !chess960
            && let Some(BookChoice { mv, weight, total }) =
                book::choose(&self.books, pos, last_move, random)
        {
            return Some(SourceMove {
                mv,
                source: Source::Book { weight, total },
            });
        }
        self.table_move(pos)
    }

    /// The tables' move for `pos`, if they cover it.
    pub fn table_move(&self, pos: &Position) -> Option<SourceMove> {
        let TablebaseMove { mv, outcome, dtz } = self.tablebases.as_ref()?.best_move(pos)?;
        Some(SourceMove {
            mv,
            source: Source::Tablebase { outcome, dtz },
        })
    }
}
