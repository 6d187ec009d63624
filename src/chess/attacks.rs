//! Attack tables: magic bitboards for sliders, lookup tables for leapers,
//! and the `between`/`line` geometry used by pin and check detection. The
//! tables are computed by `build.rs` and read here as plain statics.

use super::bitboard::Bitboard;
use super::types::{Color, Role, Square};

pub(crate) struct Magic {
    mask: u64,
    magic: u64,
    shift: u32,
    offset: u32,
}

include!(concat!(env!("OUT_DIR"), "/attack_tables.rs"));

#[inline(always)]
fn magic_index(m: &Magic, occupied: Bitboard) -> usize {
    ((occupied.0 & m.mask).wrapping_mul(m.magic) >> m.shift) as usize + m.offset as usize
}

/// Squares a rook on `sq` attacks, given the occupied squares.
#[inline(always)]
pub fn rook_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let m = &ROOK_MAGICS[sq.index()];
    // SAFETY-free: the index is in bounds by construction of the tables,
    // and the compiler keeps the bounds check cheap.
    Bitboard(SLIDER_ATTACKS[magic_index(m, occupied)])
}

/// Squares a bishop on `sq` attacks, given the occupied squares.
#[inline(always)]
pub fn bishop_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let m = &BISHOP_MAGICS[sq.index()];
    Bitboard(SLIDER_ATTACKS[magic_index(m, occupied)])
}

#[inline(always)]
pub fn queen_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    rook_attacks(sq, occupied) | bishop_attacks(sq, occupied)
}

#[inline(always)]
pub fn knight_attacks(sq: Square) -> Bitboard {
    Bitboard(KNIGHT_ATTACKS[sq.index()])
}

#[inline(always)]
pub fn king_attacks(sq: Square) -> Bitboard {
    Bitboard(KING_ATTACKS[sq.index()])
}

/// Squares a pawn of `color` on `sq` attacks.
#[inline(always)]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(PAWN_ATTACKS[color as usize * 64 + sq.index()])
}

/// Squares attacked by all of `color`'s pawns in `pawns` at once.
#[inline(always)]
pub fn pawn_attacks_set(color: Color, pawns: Bitboard) -> Bitboard {
    let west = pawns & !Bitboard::file(0);
    let east = pawns & !Bitboard::file(7);
    match color {
        Color::White => Bitboard((west.0 << 7) | (east.0 << 9)),
        Color::Black => Bitboard((west.0 >> 9) | (east.0 >> 7)),
    }
}

/// Attacks of any piece of role `role` and colour `color` on `sq`.
#[inline]
pub fn attacks(role: Role, color: Color, sq: Square, occupied: Bitboard) -> Bitboard {
    match role {
        Role::Pawn => pawn_attacks(color, sq),
        Role::Knight => knight_attacks(sq),
        Role::Bishop => bishop_attacks(sq, occupied),
        Role::Rook => rook_attacks(sq, occupied),
        Role::Queen => queen_attacks(sq, occupied),
        Role::King => king_attacks(sq),
    }
}

/// Squares strictly between `a` and `b` if they share a rank, file or
/// diagonal; empty otherwise.
#[inline(always)]
pub fn between(a: Square, b: Square) -> Bitboard {
    Bitboard(BETWEEN[a.index() * 64 + b.index()])
}

/// The whole line through `a` and `b` (both included), or empty.
#[inline(always)]
pub fn line(a: Square, b: Square) -> Bitboard {
    Bitboard(LINE[a.index() * 64 + b.index()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(s: &str) -> Square {
        s.parse().unwrap()
    }

    #[test]
    fn slider_attacks_stop_at_blockers() {
        let occ = Bitboard::from_square(sq("d6")) | Bitboard::from_square(sq("f4"));
        let r = rook_attacks(sq("d4"), occ);
        assert!(r.contains(sq("d6")) && !r.contains(sq("d7")));
        assert!(r.contains(sq("f4")) && !r.contains(sq("g4")));
        assert!(r.contains(sq("a4")) && r.contains(sq("d1")));
        assert_eq!(r.count(), 3 + 2 + 2 + 3);
        let b = bishop_attacks(sq("a1"), Bitboard::EMPTY);
        assert_eq!(b.count(), 7);
    }

    #[test]
    fn geometry() {
        assert_eq!(between(sq("a1"), sq("a4")).count(), 2);
        assert_eq!(between(sq("a1"), sq("b3")).count(), 0);
        assert_eq!(line(sq("c1"), sq("e3")).count(), 6);
        assert!(line(sq("b2"), sq("d4")).contains(sq("a1")));
        assert!(line(sq("b2"), sq("d4")).contains(sq("h8")));
        assert_eq!(knight_attacks(sq("a1")).count(), 2);
        assert_eq!(king_attacks(sq("e4")).count(), 8);
        assert_eq!(
            pawn_attacks(Color::White, sq("a2")),
            Bitboard::from_square(sq("b3"))
        );
        assert_eq!(
            pawn_attacks(Color::Black, sq("h7")),
            Bitboard::from_square(sq("g6"))
        );
    }
}
