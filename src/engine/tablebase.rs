//! Syzygy endgame tablebases, probed through the shakmaty-syzygy crate:
//! opening the table directories, converting a kaissa position to
//! shakmaty's (piece by piece, no FEN), WDL probes for the search and DTZ
//! at the root so that a won ending is converted within the 50-move rule.
//!
//! Positions with castling rights or more pieces than the tables hold are
//! never probed. WDL values are those of a position reached by a capture
//! or pawn move (the search probes only there); a "cursed" win or
//! "blessed" loss (one the 50-move rule turns into a draw) is scored as a
//! draw, nudged by [`CURSED`] towards its side.

use crate::chess::{Color, Move, Position, Role};
use shakmaty::{CastlingMode, Chess, FromSetup, Setup};
use shakmaty_syzygy::{AmbiguousWdl, Tablebase, Wdl};
use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

/// The score of a cursed win (and minus it, a blessed loss): a draw with
/// chances.
pub const CURSED: i32 = 2;

/// Why the tables cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum TablebaseError {
    #[error("cannot read the table directory {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no Syzygy table (.rtbw/.rtbz) in {0}")]
    Empty(String),
}

/// A win, draw or loss from the side to move's view, as the tables see
/// it under the 50-move rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Loss,
    /// A loss the 50-move rule saves.
    BlessedLoss,
    Draw,
    /// A win the 50-move rule spoils.
    CursedWin,
    Win,
}

impl Outcome {
    fn from_wdl(w: Wdl) -> Outcome {
        match w {
            Wdl::Loss => Outcome::Loss,
            Wdl::BlessedLoss => Outcome::BlessedLoss,
            Wdl::Draw => Outcome::Draw,
            Wdl::CursedWin => Outcome::CursedWin,
            Wdl::Win => Outcome::Win,
        }
    }

    /// -2 (loss) to 2 (win), python-chess's numbers.
    pub fn signum2(self) -> i32 {
        self as i32 - 2
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Loss => "loss",
            Outcome::BlessedLoss => "blessed loss",
            Outcome::Draw => "draw",
            Outcome::CursedWin => "cursed win",
            Outcome::Win => "win",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tables' move for a root position.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TablebaseMove {
    pub mv: Move,
    /// The root's outcome, counting its halfmove clock.
    pub outcome: Outcome,
    /// The root's distance to zeroing (plies to the next capture or pawn
    /// move on the best line; positive when winning).
    pub dtz: i32,
}

/// A set of Syzygy tables.
pub struct Tablebases {
    tables: Tablebase<Chess>,
    dirs: String,
    files: usize,
}

impl fmt::Debug for Tablebases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tablebases")
            .field("dirs", &self.dirs)
            .field("files", &self.files)
            .field("max_pieces", &self.max_pieces())
            .finish()
    }
}

impl Tablebases {
    /// Opens the tables in `dirs`, directories separated by `:` (or `;`,
    /// as Stockfish's `SyzygyPath` on Windows). Files are opened lazily at
    /// the first probe.
    pub fn open(dirs: &str) -> Result<Tablebases, TablebaseError> {
        let mut tables = Tablebase::new();
        let mut files = 0;
        for dir in dirs.split([':', ';']).filter(|d| !d.trim().is_empty()) {
            let path = Path::new(dir.trim());
            files += tables
                .add_directory(path)
                .map_err(|source| TablebaseError::Directory {
                    path: path.to_owned(),
                    source,
                })?;
        }
        if files == 0 {
            return Err(TablebaseError::Empty(dirs.to_owned()));
        }
        Ok(Tablebases {
            tables,
            dirs: dirs.to_owned(),
            files,
        })
    }

    /// The table files found.
    pub fn files(&self) -> usize {
        self.files
    }

    /// The most pieces (kings included) of any table.
    pub fn max_pieces(&self) -> u32 {
        self.tables.max_pieces() as u32
    }

    /// Whether a probe of `pos` can succeed: no castling rights, and no
    /// more pieces than the largest table.
    #[inline]
    pub fn covers(&self, pos: &Position) -> bool {
        pos.occupied().count() <= self.max_pieces() && pos.castle_rooks().is_empty()
    }

    /// The outcome of `pos` as if it had been reached by a capture or a
    /// pawn move (its halfmove clock not counted); needs only WDL tables.
    pub fn probe_wdl(&self, pos: &Position) -> Option<Outcome> {
        if !self.covers(pos) {
            return None;
        }
        let chess = to_shakmaty(pos)?;
        self.tables
            .probe_wdl_after_zeroing(&chess)
            .ok()
            .map(Outcome::from_wdl)
    }

    /// The distance to zeroing of `pos` (its halfmove clock not counted):
    /// positive when the side to move wins, 0 when drawn.
    pub fn probe_dtz(&self, pos: &Position) -> Option<i32> {
        if !self.covers(pos) {
            return None;
        }
        let chess = to_shakmaty(pos)?;
        let dtz = self.tables.probe_dtz(&chess).ok()?;
        Some(dtz.ignore_rounding().0)
    }

    /// The outcome of `pos` counting its halfmove clock (DTZ needed).
    pub fn probe_outcome(&self, pos: &Position) -> Option<Outcome> {
        if !self.covers(pos) {
            return None;
        }
        let chess = to_shakmaty(pos)?;
        let wdl = self.tables.probe_wdl(&chess).ok()?;
        Some(match wdl {
            AmbiguousWdl::Loss | AmbiguousWdl::MaybeLoss => Outcome::Loss,
            AmbiguousWdl::BlessedLoss => Outcome::BlessedLoss,
            AmbiguousWdl::Draw => Outcome::Draw,
            AmbiguousWdl::CursedWin => Outcome::CursedWin,
            AmbiguousWdl::MaybeWin | AmbiguousWdl::Win => Outcome::Win,
        })
    }

    /// The tables' best move for `pos`: the fastest zeroing towards a win,
    /// the slowest towards a loss. `None` when the position is not
    /// covered, a table is missing, or there is no legal move.
    pub fn best_move(&self, pos: &Position) -> Option<TablebaseMove> {
        if !self.covers(pos) {
            return None;
        }
        let chess = to_shakmaty(pos)?;
        let (m, _) = self.tables.best_move(&chess).ok()??;
        let mv = from_shakmaty(pos, &m)?;
        let dtz = self.tables.probe_dtz(&chess).ok()?.ignore_rounding().0;
        let outcome = self.probe_outcome(pos)?;
        Some(TablebaseMove { mv, outcome, dtz })
    }

    /// The root moves worth searching in `pos`: in a won position only the
    /// tables' best move (the search could not tell which move keeps the
    /// win within 50 moves), else every move whose outcome is the best one
    /// (the search picks among equal draws or losses). `None`: not covered.
    pub fn root_moves(&self, pos: &Position) -> Option<Vec<Move>> {
        let best = self.best_move(pos)?;
        if best.outcome >= Outcome::CursedWin {
            return Some(vec![best.mv]);
        }
        let mut rated = Vec::new();
        for &m in pos.legal_moves().iter() {
            let child = pos.play(m);
            let theirs = self.probe_outcome(&child)?;
            rated.push((m, theirs));
        }
        // Our outcome is the reverse of theirs: the best for us is their worst.
        let worst_for_them = rated.iter().map(|&(_, o)| o).min()?;
        Some(
            rated
                .into_iter()
                .filter(|&(_, o)| o == worst_for_them)
                .map(|(m, _)| m)
                .collect(),
        )
    }
}

/// `pos` as a shakmaty position (castling rights are not carried over:
/// the tables are never probed with any). Public for the probe-cost
/// measurement (`examples/tb_probe_cost.rs`).
pub fn to_shakmaty(pos: &Position) -> Option<Chess> {
    let mut setup = Setup::empty();
    for sq in pos.occupied() {
        let p = pos.piece_at(sq)?;
        let role = match p.role {
            Role::Pawn => shakmaty::Role::Pawn,
            Role::Knight => shakmaty::Role::Knight,
            Role::Bishop => shakmaty::Role::Bishop,
            Role::Rook => shakmaty::Role::Rook,
            Role::Queen => shakmaty::Role::Queen,
            Role::King => shakmaty::Role::King,
        };
        let color = shakmaty_color(p.color);
        setup.board.set_piece_at(
            shakmaty::Square::new(sq.index() as u32),
            shakmaty::Piece { color, role },
        );
    }
    setup.turn = shakmaty_color(pos.turn());
    setup.ep_square = pos
        .ep_square()
        .map(|sq| shakmaty::Square::new(sq.index() as u32));
    setup.halfmoves = pos.halfmove_clock();
    setup.fullmoves = NonZeroU32::new(pos.fullmove_number().max(1))?;
    Chess::from_setup(setup, CastlingMode::Standard).ok()
}

fn shakmaty_color(c: Color) -> shakmaty::Color {
    match c {
        Color::White => shakmaty::Color::White,
        Color::Black => shakmaty::Color::Black,
    }
}

/// The legal move of `pos` that shakmaty's `m` is.
fn from_shakmaty(pos: &Position, m: &shakmaty::Move) -> Option<Move> {
    let from = m.from()? as usize;
    let to = m.to() as usize;
    let promotion = m.promotion().map(|r| match r {
        shakmaty::Role::Knight => Role::Knight,
        shakmaty::Role::Bishop => Role::Bishop,
        shakmaty::Role::Rook => Role::Rook,
        _ => Role::Queen,
    });
    pos.legal_moves().iter().copied().find(|lm| {
        !lm.is_castle()
            && lm.from().index() == from
            && lm.to().index() == to
            && lm.promotion_role() == promotion
    })
}
