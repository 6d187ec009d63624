//! The input features: which of the 768 inputs a piece on a square turns
//! on, seen from one side (the perspective). Colours are relative to the
//! perspective (own pieces first) and squares are mirrored vertically
//! for Black, so both accumulators share one set of weights. In a net
//! with king-mirrored inputs a perspective whose king stands on files
//! e-h also sees the board mirrored left-right (`king_flip`), so the
//! inputs always show its own king on files a-d.

use crate::chess::{Color, Piece, Square};

/// The file mirror of a perspective whose king is on `king`, in a net
/// with king-mirrored inputs: 7 (files a <-> h) when the king stands on
/// files e-h, 0 otherwise. A net without them uses 0 throughout.
#[inline(always)]
pub fn king_flip(king: Square) -> u8 {
    if king.file() >= 4 { 7 } else { 0 }
}

/// The input index of `piece` on `sq` for the accumulator of
/// `perspective`, whose file mirror is `flip` (0 or 7, `king_flip`):
/// (own/their) * 384 + role * 64 + oriented square.
#[inline(always)]
pub fn feature_index(perspective: Color, piece: Piece, sq: Square, flip: u8) -> usize {
    let theirs = (piece.color != perspective) as usize;
    theirs * 384 + piece.role.index() * 64 + (sq.relative(perspective).index() ^ flip as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Role;

    #[test]
    fn indices_cover_the_inputs_once_per_perspective() {
        for perspective in Color::ALL {
            let mut seen = vec![false; super::super::INPUTS];
            for color in Color::ALL {
                for role in Role::ALL {
                    for sq in Square::all() {
                        let i = feature_index(perspective, Piece { color, role }, sq, 0);
                        assert!(!seen[i], "{i} twice");
                        seen[i] = true;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn perspectives_mirror_each_other() {
        let white_pawn_e2 = Piece {
            color: Color::White,
            role: Role::Pawn,
        };
        let black_pawn_e7 = Piece {
            color: Color::Black,
            role: Role::Pawn,
        };
        let e2: Square = "e2".parse().unwrap();
        let e7: Square = "e7".parse().unwrap();
        assert_eq!(
            feature_index(Color::White, white_pawn_e2, e2, 0),
            feature_index(Color::Black, black_pawn_e7, e7, 0)
        );
        assert_eq!(feature_index(Color::White, white_pawn_e2, e2, 0), 12);
        assert_eq!(feature_index(Color::Black, white_pawn_e2, e2, 0), 384 + 52);
    }
}
