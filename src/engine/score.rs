//! Search values: centipawn scores, mate scores and their arithmetic.
//!
//! Internally a value is an `i32` from the side to move's point of view.
//! Mates are `MATE - ply` (we mate in `ply` plies from the root) and
//! `-MATE + ply` (we are mated); anything beyond `MATE_BOUND` in absolute
//! value is a mate score. `Score` is the form reported to the outside.

/// The deepest ply the search can reach (stack sizes, mate range).
pub const MAX_PLY: usize = 128;

pub const INFINITE: i32 = 32_000;
pub const MATE: i32 = 31_000;
/// Scores at or beyond this are mates found within `MAX_PLY` plies.
pub const MATE_BOUND: i32 = MATE - MAX_PLY as i32;
pub const DRAW: i32 = 0;
/// A win the endgame tables prove, at the root (less the ply where it is
/// found): below every mate score, above every evaluation.
pub const TB_WIN: i32 = MATE_BOUND - 1 - MAX_PLY as i32;

/// Mate given by the side to move in `ply` plies from the root.
#[inline(always)]
pub const fn mate_in(ply: usize) -> i32 {
    MATE - ply as i32
}

/// The side to move is mated `ply` plies from the root.
#[inline(always)]
pub const fn mated_in(ply: usize) -> i32 {
    -MATE + ply as i32
}

#[inline(always)]
pub const fn is_mate(v: i32) -> bool {
    v >= MATE_BOUND || v <= -MATE_BOUND
}

/// Converts a root-relative value into a node-relative one for the
/// transposition table: a mate seen `ply` plies below the root is that
/// many plies closer from this node, whatever path reaches it later.
#[inline(always)]
pub const fn to_tt(v: i32, ply: usize) -> i32 {
    if v >= MATE_BOUND {
        v + ply as i32
    } else if v <= -MATE_BOUND {
        v - ply as i32
    } else {
        v
    }
}

/// Inverse of `to_tt`: a node-relative value read at `ply`. A mate that
/// the 50-move rule would cut off (the clock runs out before the mate is
/// delivered) is not trusted and is reported as a plain bound instead.
#[inline(always)]
pub const fn from_tt(v: i32, ply: usize, halfmove: u32) -> i32 {
    if v >= MATE_BOUND {
        if MATE - v > 100 - halfmove as i32 {
            return MATE_BOUND - 1;
        }
        v - ply as i32
    } else if v <= -MATE_BOUND {
        if MATE + v > 100 - halfmove as i32 {
            return -MATE_BOUND + 1;
        }
        v + ply as i32
    } else {
        v
    }
}

/// A score as reported to the user: centipawns or moves to mate (negative
/// when the side to move is being mated), from the side to move's view.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Score {
    Cp(i32),
    Mate(i32),
}

impl Score {
    /// The external form of an internal value.
    pub fn from_value(v: i32) -> Score {
        if v >= MATE_BOUND {
            Score::Mate((MATE - v + 1) / 2)
        } else if v <= -MATE_BOUND {
            Score::Mate(-(MATE + v) / 2)
        } else {
            Score::Cp(v)
        }
    }
}

impl std::fmt::Display for Score {
    /// UCI form: `cp 34` or `mate -3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Score::Cp(c) => write!(f, "cp {c}"),
            Score::Mate(m) => write!(f, "mate {m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mate_scores_convert_to_moves() {
        assert_eq!(Score::from_value(mate_in(1)), Score::Mate(1));
        assert_eq!(Score::from_value(mate_in(3)), Score::Mate(2));
        assert_eq!(Score::from_value(mated_in(0)), Score::Mate(0));
        assert_eq!(Score::from_value(mated_in(2)), Score::Mate(-1));
        assert_eq!(Score::from_value(mated_in(4)), Score::Mate(-2));
        assert_eq!(Score::from_value(57), Score::Cp(57));
        assert_eq!(Score::Mate(-2).to_string(), "mate -2");
        assert_eq!(Score::Cp(12).to_string(), "cp 12");
    }

    #[test]
    fn tt_adjustment_round_trips() {
        for ply in [0usize, 1, 7, 40] {
            for v in [mate_in(ply + 3), mated_in(ply + 2), 0, 123, -77] {
                assert_eq!(from_tt(to_tt(v, ply), ply, 0), v);
            }
        }
    }
}
