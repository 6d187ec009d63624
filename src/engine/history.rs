//! Move-ordering statistics learned during the search: butterfly history
//! (from-to, per side), continuation history (this move after the move
//! one and two plies earlier), capture history, countermoves, and the
//! pawn-structure correction history of the static evaluation.
//! All updates use "gravity": an entry moves towards the bonus and its
//! magnitude saturates at `MAX_HISTORY`, so old knowledge fades.

use crate::chess::{Color, Move, Piece, Role, Square};

pub const MAX_HISTORY: i32 = 16_384;

/// Index of a coloured piece, 0..12.
#[inline(always)]
pub fn piece_index(p: Piece) -> usize {
    p.color.index() * 6 + p.role.index()
}

/// Bonus for the move that caused a cutoff at `depth` (the others tried
/// before it get the same amount as a malus).
#[inline(always)]
pub fn stat_bonus(depth: i32) -> i32 {
    (depth * depth * 16 + depth * 32).min(1_600)
}

#[inline(always)]
fn gravity(entry: &mut i16, bonus: i32) {
    let bonus = bonus.clamp(-MAX_HISTORY, MAX_HISTORY);
    let e = *entry as i32;
    *entry = (e + bonus - e * bonus.abs() / MAX_HISTORY) as i16;
}

/// A continuation key: which piece went to which square (index into the
/// continuation tables); 0 for "no move" (root, null move).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ContKey(pub u16);

impl ContKey {
    pub const NONE: ContKey = ContKey(0);

    #[inline(always)]
    pub fn new(piece: Piece, to: Square) -> ContKey {
        ContKey(1 + (piece_index(piece) * 64 + to.index()) as u16)
    }

    #[inline(always)]
    fn index(self) -> usize {
        self.0 as usize
    }
}

const CONT: usize = 12 * 64 + 1;

/// Correction history: per side to move and pawn structure, how far the
/// search result has been from the static evaluation lately. The
/// evaluation misjudges some pawn structures consistently; adding the
/// running average of its error makes pruning decisions sharper.
const CORR_SIZE: usize = 16_384;
const CORR_GRAIN: i32 = 256;
const CORR_MAX: i32 = 64 * CORR_GRAIN;

pub struct History {
    butterfly: [[[i16; 64]; 64]; 2],
    /// `[previous ContKey][piece*64 + to]`
    continuation: Vec<[i16; 12 * 64]>,
    /// `[piece][to][captured role]`
    capture: [[[i16; 6]; 64]; 12],
    countermove: [Move; CONT],
    /// `[side][pawn key % CORR_SIZE]`, in 1/256 centipawn.
    correction: Vec<[i32; CORR_SIZE]>,
}

impl History {
    pub fn new() -> Box<History> {
        Box::new(History {
            butterfly: [[[0; 64]; 64]; 2],
            continuation: vec![[0; 12 * 64]; CONT],
            capture: [[[0; 6]; 64]; 12],
            countermove: [Move::NONE; CONT],
            correction: vec![[0; CORR_SIZE]; 2],
        })
    }

    pub fn clear(&mut self) {
        self.butterfly = [[[0; 64]; 64]; 2];
        for row in &mut self.continuation {
            *row = [0; 12 * 64];
        }
        self.capture = [[[0; 6]; 64]; 12];
        self.countermove = [Move::NONE; CONT];
        for side in &mut self.correction {
            *side = [0; CORR_SIZE];
        }
    }

    /// The correction to add to a static evaluation.
    #[inline(always)]
    pub fn correction(&self, c: Color, pawn_key: u64) -> i32 {
        self.correction[c.index()][(pawn_key as usize) % CORR_SIZE] / CORR_GRAIN
    }

    /// Moves the correction towards `diff` (search result minus corrected
    /// eval), faster for deeper searches.
    #[inline(always)]
    pub fn update_correction(&mut self, c: Color, pawn_key: u64, diff: i32, depth: i32) {
        let e = &mut self.correction[c.index()][(pawn_key as usize) % CORR_SIZE];
        let w = (depth + 1).min(16);
        let target = *e + diff * CORR_GRAIN;
        *e = ((*e * (256 - w) + target * w) / 256).clamp(-CORR_MAX, CORR_MAX);
    }

    #[inline(always)]
    pub fn butterfly(&self, c: Color, m: Move) -> i32 {
        self.butterfly[c.index()][m.from().index()][m.to().index()] as i32
    }

    #[inline(always)]
    pub fn update_butterfly(&mut self, c: Color, m: Move, bonus: i32) {
        gravity(
            &mut self.butterfly[c.index()][m.from().index()][m.to().index()],
            bonus,
        );
    }

    #[inline(always)]
    pub fn continuation(&self, prev: ContKey, cur: ContKey) -> i32 {
        if prev == ContKey::NONE {
            return 0;
        }
        self.continuation[prev.index()][cur.index() - 1] as i32
    }

    #[inline(always)]
    fn update_continuation(&mut self, prev: ContKey, cur: ContKey, bonus: i32) {
        if prev != ContKey::NONE {
            gravity(&mut self.continuation[prev.index()][cur.index() - 1], bonus);
        }
    }

    /// The continuation-history update of a move `cur` after the moves
    /// one and two plies back.
    #[inline(always)]
    pub fn update_continuations(&mut self, prev: [ContKey; 2], cur: ContKey, bonus: i32) {
        self.update_continuation(prev[0], cur, bonus);
        self.update_continuation(prev[1], cur, bonus);
    }

    #[inline(always)]
    pub fn capture(&self, p: Piece, to: Square, captured: Role) -> i32 {
        self.capture[piece_index(p)][to.index()][captured.index()] as i32
    }

    #[inline(always)]
    pub fn update_capture(&mut self, p: Piece, to: Square, captured: Role, bonus: i32) {
        gravity(
            &mut self.capture[piece_index(p)][to.index()][captured.index()],
            bonus,
        );
    }

    #[inline(always)]
    pub fn countermove(&self, prev: ContKey) -> Move {
        self.countermove[prev.index()]
    }

    #[inline(always)]
    pub fn set_countermove(&mut self, prev: ContKey, m: Move) {
        if prev != ContKey::NONE {
            self.countermove[prev.index()] = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gravity_saturates() {
        let mut e = 0i16;
        for _ in 0..1000 {
            gravity(&mut e, stat_bonus(20));
        }
        assert!(e as i32 <= MAX_HISTORY && e > 15_000);
        for _ in 0..1000 {
            gravity(&mut e, -stat_bonus(20));
        }
        assert!(e as i32 >= -MAX_HISTORY && e < -15_000);
    }
}
