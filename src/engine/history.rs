//! Move-ordering statistics learned during the search: butterfly history
//! (from-to, per side, and whether each square is attacked), continuation
//! history (this move after the move one and two plies earlier), capture
//! history, countermoves, and the correction histories of the static
//! evaluation (by pawn structure and by each side's other pieces).
//! All updates use "gravity": an entry moves towards the bonus and its
//! magnitude saturates at `MAX_HISTORY`, so old knowledge fades.

use crate::chess::{Bitboard, Color, Move, Piece, Position, Role, Square};

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

/// Correction histories: per side to move and pawn structure, and per
/// side to move and the placement of one side's other pieces, how far the
/// search result has been from the static evaluation lately. The
/// evaluation misjudges some structures consistently; adding the running
/// average of its error makes pruning decisions sharper. The tables'
/// corrections add up, and each learns from what the sum still misses.
const CORR_SIZE: usize = 16_384;
const CORR_GRAIN: i32 = 256;
const CORR_MAX: i32 = 64 * CORR_GRAIN;

pub struct History {
    /// `[side][from attacked][to attacked][from][to]`: a move's worth
    /// depends on whether it takes a piece out of an attack or into one.
    butterfly: [[[[[i16; 64]; 64]; 2]; 2]; 2],
    /// `[previous ContKey][piece*64 + to]`
    continuation: Vec<[i16; 12 * 64]>,
    /// `[piece][to][captured role]`
    capture: [[[i16; 6]; 64]; 12],
    countermove: [Move; CONT],
    /// Three tables per side to move, in 1/256 centipawn: `[side * 3]`
    /// by pawn key, `[side * 3 + 1 + colour]` by that colour's non-pawn
    /// key, each `% CORR_SIZE`.
    correction: Vec<[i32; CORR_SIZE]>,
}

/// The keys of a position's correction-history entries.
#[derive(Copy, Clone, Debug)]
pub struct CorrKeys {
    pawn: u64,
    non_pawn: [u64; 2],
}

impl CorrKeys {
    /// The pawn key and both sides' non-pawn keys of `pos`.
    #[inline(always)]
    pub fn of(pos: &Position) -> CorrKeys {
        CorrKeys {
            pawn: pos.pawn_key(),
            non_pawn: [
                pos.non_pawn_key(Color::White),
                pos.non_pawn_key(Color::Black),
            ],
        }
    }
}

impl History {
    pub fn new() -> Box<History> {
        Box::new(History {
            butterfly: [[[[[0; 64]; 64]; 2]; 2]; 2],
            continuation: vec![[0; 12 * 64]; CONT],
            capture: [[[0; 6]; 64]; 12],
            countermove: [Move::NONE; CONT],
            correction: vec![[0; CORR_SIZE]; 6],
        })
    }

    pub fn clear(&mut self) {
        self.butterfly = [[[[[0; 64]; 64]; 2]; 2]; 2];
        for row in &mut self.continuation {
            *row = [0; 12 * 64];
        }
        self.capture = [[[0; 6]; 64]; 12];
        self.countermove = [Move::NONE; CONT];
        for table in &mut self.correction {
            *table = [0; CORR_SIZE];
        }
    }

    /// The `(table, slot)` of each correction entry of a position.
    #[inline(always)]
    fn correction_entries(c: Color, keys: CorrKeys) -> [(usize, usize); 3] {
        let t = 3 * c.index();
        let slot = |k: u64| (k as usize) % CORR_SIZE;
        [
            (t, slot(keys.pawn)),
            (t + 1, slot(keys.non_pawn[0])),
            (t + 2, slot(keys.non_pawn[1])),
        ]
    }

    /// The correction to add to a static evaluation.
    #[inline(always)]
    pub fn correction(&self, c: Color, keys: CorrKeys) -> i32 {
        let sum: i32 = Self::correction_entries(c, keys)
            .iter()
            .map(|&(t, i)| self.correction[t][i])
            .sum();
        sum / CORR_GRAIN
    }

    /// Moves each table's entry by a fraction of `diff` (search result
    /// minus corrected eval), a larger one for deeper searches.
    #[inline(always)]
    pub fn update_correction(&mut self, c: Color, keys: CorrKeys, diff: i32, depth: i32) {
        let w = (depth + 1).min(16);
        for (t, i) in Self::correction_entries(c, keys) {
            let e = &mut self.correction[t][i];
            let target = *e + diff * CORR_GRAIN;
            *e = ((*e * (256 - w) + target * w) / 256).clamp(-CORR_MAX, CORR_MAX);
        }
    }

    /// `threats`: the squares the opponent attacks.
    #[inline(always)]
    pub fn butterfly(&self, c: Color, threats: Bitboard, m: Move) -> i32 {
        let [a, b, f, t] = Self::butterfly_index(threats, m);
        self.butterfly[c.index()][a][b][f][t] as i32
    }

    #[inline(always)]
    pub fn update_butterfly(&mut self, c: Color, threats: Bitboard, m: Move, bonus: i32) {
        let [a, b, f, t] = Self::butterfly_index(threats, m);
        gravity(&mut self.butterfly[c.index()][a][b][f][t], bonus);
    }

    /// `[from attacked][to attacked][from][to]`.
    #[inline(always)]
    fn butterfly_index(threats: Bitboard, m: Move) -> [usize; 4] {
        let (from, to) = (m.from(), m.to());
        [
            threats.contains(from) as usize,
            threats.contains(to) as usize,
            from.index(),
            to.index(),
        ]
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

    fn keys(fen: &str) -> CorrKeys {
        CorrKeys::of(&Position::from_fen(fen).unwrap())
    }

    #[test]
    fn corrections_are_shared_by_positions_that_keep_a_part() {
        let a = keys("4k3/pppp4/8/8/8/8/PPPP4/RN2K3 w - - 0 1");
        // The same pieces, another pawn structure.
        let same_pieces = keys("4k3/pppp4/8/8/8/P7/1PPP4/RN2K3 w - - 0 1");
        // The same pawns and black pieces, the white knight elsewhere.
        let same_pawns = keys("4k3/pppp4/8/8/8/2N5/PPPP4/R3K3 w - - 0 1");
        // Nothing in common.
        let other = keys("3k4/1ppp4/p7/8/8/P4N2/1PPP4/R3K3 w - - 0 1");
        let mut h = History::new();
        for _ in 0..200 {
            let diff = 120 - h.correction(Color::White, a);
            h.update_correction(Color::White, a, diff, 15);
        }
        let full = h.correction(Color::White, a);
        assert!((110..=120).contains(&full), "{full}");
        // Each of the three tables learned about a third of it.
        for part in [same_pieces, same_pawns] {
            let c = h.correction(Color::White, part);
            assert!(full / 2 <= c && c < full, "{c} of {full}");
        }
        assert_eq!(h.correction(Color::White, other), 0);
        assert_eq!(h.correction(Color::Black, a), 0);
    }

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
