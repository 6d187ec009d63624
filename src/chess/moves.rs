//! `Move`, packed in 16 bits, and `MoveList`, a fixed-capacity list that
//! lives on the stack.
//!
//! A castling move is stored as "king takes own rook" (from = king square,
//! to = rook square), which describes standard chess and Chess960 alike;
//! the UCI notation module turns it into `e1g1` where the game wants that.

use super::types::{Role, Square};
use std::fmt;

/// What kind of move this is; the shapes a move really has.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum MoveKind {
    Normal,
    Promotion(Role),
    EnPassant,
    Castle,
}

/// A move: from square (bits 0-5), to square (6-11), kind (12-15).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Move(u16);

const NORMAL: u16 = 0;
const EN_PASSANT: u16 = 1;
const CASTLE: u16 = 2;
// 4 + role index for promotions (knight=1 .. queen=4): 5..=8
const PROMO_BASE: u16 = 4;

impl Move {
    /// No move (`0000` in UCI). Never produced by move generation.
    pub const NONE: Move = Move(0);

    #[inline(always)]
    pub const fn normal(from: Square, to: Square) -> Move {
        Move(from.index() as u16 | (to.index() as u16) << 6 | NORMAL << 12)
    }

    #[inline(always)]
    pub const fn promotion(from: Square, to: Square, role: Role) -> Move {
        Move(from.index() as u16 | (to.index() as u16) << 6 | (PROMO_BASE + role as u16) << 12)
    }

    #[inline(always)]
    pub const fn en_passant(from: Square, to: Square) -> Move {
        Move(from.index() as u16 | (to.index() as u16) << 6 | EN_PASSANT << 12)
    }

    /// Castling, given the king's and the rook's squares.
    #[inline(always)]
    pub const fn castle(king: Square, rook: Square) -> Move {
        Move(king.index() as u16 | (rook.index() as u16) << 6 | CASTLE << 12)
    }

    #[inline(always)]
    pub const fn from(self) -> Square {
        Square::new((self.0 & 63) as u8)
    }

    /// Destination; for castling, the square of the rook.
    #[inline(always)]
    pub const fn to(self) -> Square {
        Square::new((self.0 >> 6 & 63) as u8)
    }

    #[inline(always)]
    pub fn kind(self) -> MoveKind {
        match self.0 >> 12 {
            NORMAL => MoveKind::Normal,
            EN_PASSANT => MoveKind::EnPassant,
            CASTLE => MoveKind::Castle,
            k => MoveKind::Promotion(Role::ALL[(k - PROMO_BASE) as usize % 6]),
        }
    }

    #[inline(always)]
    pub const fn is_castle(self) -> bool {
        self.0 >> 12 == CASTLE
    }

    #[inline(always)]
    pub const fn is_en_passant(self) -> bool {
        self.0 >> 12 == EN_PASSANT
    }

    #[inline(always)]
    pub const fn is_promotion(self) -> bool {
        self.0 >> 12 >= PROMO_BASE
    }

    /// The promotion role, if any.
    #[inline(always)]
    pub fn promotion_role(self) -> Option<Role> {
        match self.kind() {
            MoveKind::Promotion(r) => Some(r),
            _ => None,
        }
    }

    #[inline(always)]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The raw 16 bits (for the transposition table).
    #[inline(always)]
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// Rebuilds a move from `to_bits`. The result is only a candidate: check
    /// it with `Position::is_legal` before playing it.
    #[inline(always)]
    pub const fn from_bits(bits: u16) -> Move {
        Move(bits)
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            _ if self.is_none() => write!(f, "0000"),
            MoveKind::Normal => write!(f, "{}{}", self.from(), self.to()),
            MoveKind::Promotion(r) => write!(f, "{}{}{}", self.from(), self.to(), r.char()),
            MoveKind::EnPassant => write!(f, "{}{}ep", self.from(), self.to()),
            MoveKind::Castle => write!(f, "{}{}castle", self.from(), self.to()),
        }
    }
}

/// Capacity of a `MoveList`: no legal position has more than 218 moves.
pub const MAX_MOVES: usize = 256;

/// A list of moves on the stack.
#[derive(Clone)]
pub struct MoveList {
    moves: [Move; MAX_MOVES],
    len: usize,
}

impl MoveList {
    #[inline(always)]
    pub fn new() -> MoveList {
        MoveList {
            moves: [Move::NONE; MAX_MOVES],
            len: 0,
        }
    }

    #[inline(always)]
    pub fn push(&mut self, m: Move) {
        debug_assert!(self.len < MAX_MOVES);
        // The capacity bound is a property of chess (<= 218 legal moves).
        if let Some(slot) = self.moves.get_mut(self.len) {
            *slot = m;
            self.len += 1;
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }

    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [Move] {
        &mut self.moves[..self.len]
    }

    pub fn contains(&self, m: Move) -> bool {
        self.as_slice().contains(&m)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Move> {
        self.as_slice().iter()
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn swap_remove(&mut self, i: usize) -> Move {
        let m = self.moves[i];
        self.len -= 1;
        self.moves[i] = self.moves[self.len];
        m
    }
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList::new()
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a MoveList {
    type Item = &'a Move;
    type IntoIter = std::slice::Iter<'a, Move>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for MoveList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
