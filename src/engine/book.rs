//! Polyglot opening books: reading `.bin` files (sorted 16-byte entries:
//! key, move, weight, learn; big-endian), looking a position up by binary
//! search, and choosing one of its moves by weight (at random, the
//! heaviest, or any at the same odds), within the book's depth and
//! leaving out its lighter moves. The moves here are kaissa's (standard
//! chess and Chess960, castling written king-takes-rook as Polyglot
//! does); the key and moves of a position in Lichess's other variants are
//! the variant board's (`bot::board::variant`), chosen by the same
//! [`PlayedBook::pick`].
//!
//! kaissa's position key is the Polyglot key except for one rule: kaissa
//! counts the en-passant file only when a legal en-passant capture exists,
//! Polyglot whenever a pawn of the side to move stands beside the pawn
//! that just made a double step. [`polyglot_key`] applies Polyglot's rule,
//! which needs the move that led to the position.

use crate::chess::{Color, Move, Position, Role, Square, zobrist};
use std::fmt;
use std::path::{Path, PathBuf};

/// Debian's `gnuchess-book` (public domain): the book used by default
/// when it is installed.
pub const DEFAULT_BOOK: &str = "/usr/share/games/gnuchess/book.bin";

/// The size of one book entry.
pub const ENTRY_LEN: usize = 16;

/// How a move is chosen among the book's moves for a position.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// At random, each move with a chance proportional to its weight
    /// (moves of weight 0 are never played).
    Weighted,
    /// Always the heaviest move (the first of them in the file on ties).
    Best,
    /// At random, every move of positive weight at the same odds.
    Uniform,
}

impl Selection {
    /// `weighted`, `best` or `uniform`.
    pub fn parse(s: &str) -> Option<Selection> {
        match s {
            "weighted" => Some(Selection::Weighted),
            "best" => Some(Selection::Best),
            "uniform" => Some(Selection::Uniform),
            _ => None,
        }
    }

    /// The name `parse` reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Selection::Weighted => "weighted",
            Selection::Best => "best",
            Selection::Uniform => "uniform",
        }
    }
}

/// One move of a book for a position (kaissa's move, or a variant
/// board's).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BookMove<M = Move> {
    pub mv: M,
    pub weight: u16,
}

/// A book move chosen for a position, with what the book said about it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BookChoice<M = Move> {
    pub mv: M,
    pub weight: u16,
    /// The weights of all the position's moves added up.
    pub total: u32,
}

/// Why a book file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a Polyglot book: {len} bytes is not a whole number of 16-byte entries")]
    Length { path: PathBuf, len: usize },
    #[error("{path} is not a Polyglot book: its entries are not sorted by key (entry {index})")]
    Unsorted { path: PathBuf, index: usize },
}

/// One Polyglot book, held in memory.
pub struct Book {
    path: PathBuf,
    data: Vec<u8>,
}

impl fmt::Debug for Book {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Book")
            .field("path", &self.path)
            .field("entries", &self.len())
            .finish()
    }
}

impl Book {
    /// Reads and checks the book at `path`.
    pub fn open(path: &Path) -> Result<Book, BookError> {
        let data = std::fs::read(path).map_err(|source| BookError::Read {
            path: path.to_owned(),
            source,
        })?;
        Book::from_bytes(path, data)
    }

    /// A book from its bytes (`path` names it in errors).
    pub fn from_bytes(path: &Path, data: Vec<u8>) -> Result<Book, BookError> {
        if !data.len().is_multiple_of(ENTRY_LEN) {
            return Err(BookError::Length {
                path: path.to_owned(),
                len: data.len(),
            });
        }
        let book = Book {
            path: path.to_owned(),
            data,
        };
        // Binary search needs sorted keys: check once, not trust.
        for i in 1..book.len() {
            if book.key_at(i) < book.key_at(i - 1) {
                return Err(BookError::Unsorted {
                    path: path.to_owned(),
                    index: i,
                });
            }
        }
        Ok(book)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.data.len() / ENTRY_LEN
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn entry(&self, i: usize) -> &[u8] {
        &self.data[i * ENTRY_LEN..(i + 1) * ENTRY_LEN]
    }

    fn key_at(&self, i: usize) -> u64 {
        let e = self.entry(i);
        u64::from_be_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
    }

    /// The raw entries (move, weight) stored for `key`, in file order.
    pub fn entries(&self, key: u64) -> Vec<(u16, u16)> {
        // The first entry whose key is not below `key`.
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key_at(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo..self.len())
            .take_while(|&i| self.key_at(i) == key)
            .map(|i| {
                let e = self.entry(i);
                (
                    u16::from_be_bytes([e[8], e[9]]),
                    u16::from_be_bytes([e[10], e[11]]),
                )
            })
            .collect()
    }

    /// The book's legal moves for `pos` (reached by `last_move`, if known:
    /// see [`polyglot_key`]), in file order. Entries that are no legal move
    /// here (a key collision, a broken book) are skipped.
    pub fn moves(&self, pos: &Position, last_move: Option<Move>) -> Vec<BookMove> {
        self.entries(polyglot_key(pos, last_move))
            .into_iter()
            .filter_map(|(raw, weight)| decode_move(pos, raw).map(|mv| BookMove { mv, weight }))
            .collect()
    }
}

/// A book and how its moves are played.
#[derive(Debug)]
pub struct PlayedBook {
    pub book: Book,
    pub selection: Selection,
    /// Book moves are played while the game is shorter than this many
    /// plies (0: never).
    pub max_plies: u32,
    /// Moves lighter than this are left out (0: none).
    pub min_weight: u16,
}

impl PlayedBook {
    /// The book's choice among `moves` (its legal moves for a position at
    /// game ply `ply`): none past its depth, the moves lighter than
    /// `min_weight` left out, then by its selection. `random` in `0..1`.
    pub fn pick<M: Copy>(
        &self,
        ply: u32,
        moves: &[BookMove<M>],
        random: f64,
    ) -> Option<BookChoice<M>> {
        if ply >= self.max_plies {
            return None;
        }
        let kept: Vec<BookMove<M>> = moves
            .iter()
            .copied()
            .filter(|m| m.weight >= self.min_weight)
            .collect();
        select(&kept, self.selection, random)
    }

    /// The book's move for `pos` (reached by `last_move`, if known).
    pub fn choose(
        &self,
        pos: &Position,
        last_move: Option<Move>,
        random: f64,
    ) -> Option<BookChoice> {
        let ply = game_ply(pos);
        if ply >= self.max_plies {
            return None;
        }
        self.pick(ply, &self.book.moves(pos, last_move), random)
    }
}

/// A move for `pos` from the first of `books` that has one. `random` is
/// a number in `0..1`.
pub fn choose(
    books: &[PlayedBook],
    pos: &Position,
    last_move: Option<Move>,
    random: f64,
) -> Option<BookChoice> {
    books.iter().find_map(|b| b.choose(pos, last_move, random))
}

/// The ply of the game at `pos` (0 at the start position), from its
/// move number.
pub fn game_ply(pos: &Position) -> u32 {
    2 * pos.fullmove_number().saturating_sub(1) + (pos.turn() == Color::Black) as u32
}

/// Chooses among `moves` by `selection`; `random` in `0..1`. `None` when
/// there is no move, or no move of positive weight.
pub fn select<M: Copy>(
    moves: &[BookMove<M>],
    selection: Selection,
    random: f64,
) -> Option<BookChoice<M>> {
    let total: u32 = moves.iter().map(|m| m.weight as u32).sum();
    if total == 0 {
        return None;
    }
    let chosen = match selection {
        Selection::Uniform => {
            let played: Vec<&BookMove<M>> = moves.iter().filter(|m| m.weight > 0).collect();
            let pick = (random.clamp(0.0, 1.0) * played.len() as f64) as usize;
            played[pick.min(played.len() - 1)]
        }
        Selection::Best => {
            // The first of the heaviest.
            let best = moves.iter().map(|m| m.weight).max()?;
            moves.iter().find(|m| m.weight == best)?
        }
        Selection::Weighted => {
            let mut pick = (random.clamp(0.0, 1.0) * total as f64) as u32;
            pick = pick.min(total - 1);
            moves.iter().find(|m| {
                if pick < m.weight as u32 {
                    true
                } else {
                    pick -= m.weight as u32;
                    false
                }
            })?
        }
    };
    Some(BookChoice {
        mv: chosen.mv,
        weight: chosen.weight,
        total,
    })
}

/// The Polyglot key of `pos`, which `last_move` led to (if known). It is
/// kaissa's key, plus the en-passant file when the last move was a double
/// pawn step and a pawn of the side to move stands beside it but cannot
/// legally take en passant (kaissa leaves the file out then, Polyglot
/// not). Without `last_move` such a position gets kaissa's key.
pub fn polyglot_key(pos: &Position, last_move: Option<Move>) -> u64 {
    let key = pos.key();
    if pos.ep_square().is_some() {
        // A legal capture exists: both rules count the file.
        return key;
    }
    let Some(m) = last_move else {
        return key;
    };
    let us = pos.turn();
    let them = !us;
    let (from, to) = (m.from(), m.to());
    let double_step = from.file() == to.file()
        && from.rank().abs_diff(to.rank()) == 2
        && to.rank() == them.relative_rank(3)
        && pos
            .piece_at(to)
            .is_some_and(|p| p.color == them && p.role == Role::Pawn);
    if !double_step {
        return key;
    }
    let beside = [to.file().checked_sub(1), Some(to.file() + 1)]
        .into_iter()
        .flatten()
        .filter(|&f| f < 8)
        .any(|f| {
            pos.piece_at(Square::from_coords(f, to.rank()))
                .is_some_and(|p| p.color == us && p.role == Role::Pawn)
        });
    if beside {
        key ^ zobrist::en_passant(to.file())
    } else {
        key
    }
}

/// The legal move of `pos` that Polyglot's move bits `raw` stand for:
/// to file (bits 0-2), to rank (3-5), from file (6-8), from rank (9-11),
/// promotion (12-14: none, knight, bishop, rook, queen). Castling is
/// written king-takes-rook (e1h1), as kaissa's castling moves are.
pub fn decode_move(pos: &Position, raw: u16) -> Option<Move> {
    let (from, to, promotion) = decode_bits(raw)?;
    pos.legal_moves()
        .iter()
        .copied()
        .find(|m| m.from() == from && m.to() == to && m.promotion_role() == promotion)
}

/// Polyglot's move bits `raw` as squares and promotion: from, to, and
/// the piece promoted to (`None` for bits that name no piece).
pub fn decode_bits(raw: u16) -> Option<(Square, Square, Option<Role>)> {
    let sq = |bits: u16| Square::new((bits & 63) as u8);
    let promotion = match (raw >> 12) & 7 {
        0 => None,
        1 => Some(Role::Knight),
        2 => Some(Role::Bishop),
        3 => Some(Role::Rook),
        4 => Some(Role::Queen),
        _ => return None,
    };
    Some((sq(raw >> 6), sq(raw), promotion))
}

/// Polyglot's move bits for `m` (castling as king-takes-rook): the
/// inverse of [`decode_move`], for writing books in tests and tools.
pub fn encode_move(m: Move) -> u16 {
    let sq = |s: Square| (s.rank() as u16) << 3 | s.file() as u16;
    let promotion = match m.promotion_role() {
        Some(Role::Knight) => 1,
        Some(Role::Bishop) => 2,
        Some(Role::Rook) => 3,
        Some(Role::Queen) => 4,
        _ => 0,
    };
    promotion << 12 | sq(m.from()) << 6 | sq(m.to())
}

/// One 16-byte entry (learn = 0), for writing books in tests and tools.
pub fn encode_entry(key: u64, m: Move, weight: u16) -> [u8; ENTRY_LEN] {
    raw_entry(key, encode_move(m), weight)
}

/// One 16-byte entry of Polyglot's move bits `raw` (learn = 0): a
/// variant board's move, in tests and tools.
pub fn raw_entry(key: u64, raw: u16, weight: u16) -> [u8; ENTRY_LEN] {
    let mut e = [0; ENTRY_LEN];
    e[..8].copy_from_slice(&key.to_be_bytes());
    e[8..10].copy_from_slice(&raw.to_be_bytes());
    e[10..12].copy_from_slice(&weight.to_be_bytes());
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play(pos: &Position, uci: &str) -> (Position, Move) {
        let m = pos.parse_uci(uci, false).unwrap();
        (pos.play(m), m)
    }

    #[test]
    fn moves_round_trip_through_polyglot_bits_castling_as_king_takes_rook() {
        let pos = Position::from_fen("r3k2r/pPpp1ppp/8/8/8/8/PPPP1PPP/R3K2R w KQkq - 0 1").unwrap();
        for &m in pos.legal_moves().iter() {
            assert_eq!(decode_move(&pos, encode_move(m)), Some(m), "{m:?}");
        }
        // e1h1 is White's short castling; e1g1 is no move here.
        let e1h1 = 4 << 6 | 7;
        assert!(decode_move(&pos, e1h1).is_some_and(|m| m.is_castle()));
        let e1g1 = 4 << 6 | 6;
        assert_eq!(decode_move(&pos, e1g1), None);
    }

    #[test]
    fn the_polyglot_key_counts_an_en_passant_file_kaissa_leaves_out() {
        // Black's d-pawn steps to d5 beside White's e5 pawn, which is
        // pinned on the fifth rank by the rook on a5 (king on h5): no
        // legal capture, so kaissa leaves the file out; Polyglot counts it.
        let pos = Position::from_fen("7k/3p4/8/r3P2K/8/8/8/8 b - - 0 1").unwrap();
        let (after, m) = play(&pos, "d7d5");
        assert_eq!(after.ep_square(), None);
        assert_eq!(
            polyglot_key(&after, Some(m)),
            after.key() ^ zobrist::en_passant(3)
        );
        // Without the move, kaissa's key is all we can give.
        assert_eq!(polyglot_key(&after, None), after.key());
        // A legal capture: both rules agree.
        let pos = Position::from_fen("7k/3p4/8/4P3/8/8/8/7K b - - 0 1").unwrap();
        let (after, m) = play(&pos, "d7d5");
        assert!(after.ep_square().is_some());
        assert_eq!(polyglot_key(&after, Some(m)), after.key());
        // No pawn beside: neither counts it.
        let pos = Position::from_fen("7k/3p4/8/6P1/8/8/8/7K b - - 0 1").unwrap();
        let (after, m) = play(&pos, "d7d5");
        assert_eq!(polyglot_key(&after, Some(m)), after.key());
    }

    #[test]
    fn weighted_selection_follows_the_weights_and_best_takes_the_heaviest() {
        let pos = Position::startpos();
        let mv = |s: &str| pos.parse_uci(s, false).unwrap();
        let moves = [
            BookMove {
                mv: mv("e2e4"),
                weight: 30,
            },
            BookMove {
                mv: mv("d2d4"),
                weight: 10,
            },
            BookMove {
                mv: mv("g1f3"),
                weight: 0,
            },
        ];
        let at = |r: f64| select(&moves, Selection::Weighted, r).unwrap().mv;
        assert_eq!(at(0.0), mv("e2e4"));
        assert_eq!(at(0.74), mv("e2e4"));
        assert_eq!(at(0.76), mv("d2d4"));
        assert_eq!(at(1.0), mv("d2d4"));
        let best = select(&moves, Selection::Best, 0.9).unwrap();
        assert_eq!((best.mv, best.weight, best.total), (mv("e2e4"), 30, 40));
        assert_eq!(select(&moves[2..], Selection::Weighted, 0.5), None);
    }

    #[test]
    fn a_played_book_keeps_to_its_depth_and_leaves_out_light_moves() {
        let pos = Position::startpos();
        let mv = |s: &str| pos.parse_uci(s, false).unwrap();
        let data: Vec<u8> = [("e2e4", 30), ("d2d4", 10), ("g1f3", 3)]
            .iter()
            .flat_map(|&(m, w)| encode_entry(pos.key(), mv(m), w))
            .collect();
        let book = |selection, min_weight| PlayedBook {
            book: Book::from_bytes(Path::new("x.bin"), data.clone()).unwrap(),
            selection,
            max_plies: 2,
            min_weight,
        };
        // Weighted over all three: 0.95 falls on the lightest.
        let all = book(Selection::Weighted, 0);
        let c = all.choose(&pos, None, 0.95).unwrap();
        assert_eq!((c.mv, c.total), (mv("g1f3"), 43));
        // With min_weight 10, Nf3 (3) is left out, d4 (10) kept.
        let heavy = book(Selection::Weighted, 10);
        let c = heavy.choose(&pos, None, 0.95).unwrap();
        assert_eq!((c.mv, c.weight, c.total), (mv("d2d4"), 10, 40));
        assert_eq!(book(Selection::Best, 31).choose(&pos, None, 0.5), None);
        // Uniform: each kept move at the same odds, whatever its weight.
        let uniform = book(Selection::Uniform, 0);
        let at = |r: f64| uniform.choose(&pos, None, r).unwrap().mv;
        assert_eq!(
            [at(0.0), at(0.34), at(0.67), at(1.0)],
            [mv("e2e4"), mv("d2d4"), mv("g1f3"), mv("g1f3")]
        );
        // Depth: ply 2 (after a move each) is past a depth of 2 plies.
        let moves = all.book.moves(&pos, None);
        assert!(all.pick(1, &moves, 0.0).is_some());
        assert_eq!(all.pick(2, &moves, 0.0), None);
        assert_eq!(Selection::parse("uniform"), Some(Selection::Uniform));
        assert_eq!(Selection::Uniform.as_str(), "uniform");
    }

    #[test]
    fn a_broken_file_is_refused_with_the_reason() {
        let p = Path::new("x.bin");
        assert!(matches!(
            Book::from_bytes(p, vec![0; 17]),
            Err(BookError::Length { len: 17, .. })
        ));
        let pos = Position::startpos();
        let m = pos.legal_moves()[0];
        let mut data = encode_entry(2, m, 1).to_vec();
        data.extend_from_slice(&encode_entry(1, m, 1));
        assert!(matches!(
            Book::from_bytes(p, data),
            Err(BookError::Unsorted { index: 1, .. })
        ));
    }
}
