//! Staged move ordering. Moves come out best-guess first so that alpha-beta
//! cuts as early as possible, and are generated lazily: a cutoff on the
//! transposition-table move costs no move generation at all.
//!
//! Main search: TT move, good captures (MVV/LVA plus capture history,
//! SEE at least 0), two killers, the countermove, quiets by history, bad
//! captures.
//! Quiescence: TT move if noisy, then every noisy move by MVV/LVA; when in
//! check the main search order is used so that all evasions are tried.

use super::history::{ContKey, History};
use super::see::{SEE_VALUE, see_ge};
use crate::chess::{
    Bitboard, MAX_MOVES, Move, MoveList, Position, Role, Square, attacks, bishop_attacks,
    knight_attacks, line, pawn_attacks, rook_attacks,
};

/// Whether `m` is a capture (castling is "king takes own rook" internally
/// and is no capture).
#[inline(always)]
pub fn is_capture(pos: &Position, m: Move) -> bool {
    m.is_en_passant() || (!m.is_castle() && pos.piece_at(m.to()).is_some())
}

/// Captures, en passant and queen promotions: what `generate_noisy` makes.
#[inline(always)]
pub fn is_noisy(pos: &Position, m: Move) -> bool {
    is_capture(pos, m) || m.promotion_role() == Some(Role::Queen)
}

/// What telling a checking move needs of a position, computed once per
/// node: the squares from which each kind of piece of the side to move
/// would attack the enemy king, and the side to move's pieces that alone
/// stand between one of its sliders and that king.
#[derive(Copy, Clone)]
pub struct CheckInfo {
    king: Square,
    /// `[role]`; empty for the king, which never gives check directly.
    squares: [Bitboard; 6],
    discoverers: Bitboard,
}

impl CheckInfo {
    #[inline]
    pub fn new(pos: &Position) -> CheckInfo {
        let us = pos.turn();
        let king = pos.king(!us);
        let occ = pos.occupied();
        let diagonal = bishop_attacks(king, occ);
        let straight = rook_attacks(king, occ);
        CheckInfo {
            king,
            squares: [
                pawn_attacks(!us, king),
                knight_attacks(king),
                diagonal,
                straight,
                diagonal | straight,
                Bitboard::EMPTY,
            ],
            discoverers: pos.blockers(!us) & pos.by_color(us),
        }
    }

    /// Whether `m` gives check, without playing it: a direct check by the
    /// moved piece, or a discovered one by a slider behind it. A slider's
    /// checking squares are those of the present occupancy: the square it
    /// leaves cannot lie between `to` and the king, or the king would be
    /// in check already. A promotion's are worked out from the occupancy
    /// after the move (the pawn may have stood in the new piece's way);
    /// castling and en passant, rare, are played out.
    #[inline]
    pub fn gives_check(&self, pos: &Position, m: Move) -> bool {
        if m.is_castle() || m.is_en_passant() {
            return pos.play(m).in_check();
        }
        let (from, to) = (m.from(), m.to());
        if self.discoverers.contains(from) && !line(from, self.king).contains(to) {
            return true;
        }
        match m.promotion_role() {
            Some(role) => {
                let occ =
                    (pos.occupied() ^ Bitboard::from_square(from)) | Bitboard::from_square(to);
                attacks(role, pos.turn(), to, occ).contains(self.king)
            }
            None => pos
                .role_at(from)
                .is_some_and(|role| self.squares[role.index()].contains(to)),
        }
    }
}

/// The role captured by `m`, if any.
#[inline(always)]
pub fn captured_role(pos: &Position, m: Move) -> Option<Role> {
    if m.is_en_passant() {
        Some(Role::Pawn)
    } else if m.is_castle() {
        None
    } else {
        pos.role_at(m.to())
    }
}

#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Stage {
    TtMove,
    GenNoisy,
    GoodNoisy,
    Killer1,
    Killer2,
    Counter,
    GenQuiet,
    Quiet,
    BadNoisy,
    QGenNoisy,
    QNoisy,
    Done,
}

/// What the ordering needs to know about the path to this node.
#[derive(Copy, Clone, Default)]
pub struct OrderingContext {
    pub killers: [Move; 2],
    pub counter: Move,
    /// Continuation keys of the moves one and two plies earlier.
    pub cont: [ContKey; 2],
    /// The squares the opponent attacks (for the butterfly history).
    pub threats: Bitboard,
}

pub struct MovePicker {
    stage: Stage,
    tt_move: Move,
    ctx: OrderingContext,
    list: MoveList,
    scores: [i32; MAX_MOVES],
    idx: usize,
    /// Losing captures are compacted to the front of `list` as the good
    /// ones are handed out: `list[..bad_len]`.
    bad_len: usize,
    bad_idx: usize,
    /// Where the quiet moves start in `list` (after the noisy ones).
    quiet_start: usize,
    /// Set by the search when late quiet moves are no longer wanted.
    pub skip_quiets: bool,
    qsearch: bool,
}

impl MovePicker {
    /// For the main search (and for quiescence nodes in check).
    pub fn new(pos: &Position, tt_move: Move, ctx: OrderingContext) -> MovePicker {
        let tt_ok = !tt_move.is_none() && pos.is_legal(tt_move);
        MovePicker {
            stage: if tt_ok {
                Stage::TtMove
            } else {
                Stage::GenNoisy
            },
            tt_move: if tt_ok { tt_move } else { Move::NONE },
            ctx,
            list: MoveList::new(),
            scores: [0; MAX_MOVES],
            idx: 0,
            bad_len: 0,
            bad_idx: 0,
            quiet_start: 0,
            skip_quiets: false,
            qsearch: false,
        }
    }

    /// For quiescence nodes not in check: noisy moves only.
    pub fn new_qsearch(pos: &Position, tt_move: Move) -> MovePicker {
        let tt_ok = !tt_move.is_none() && is_noisy(pos, tt_move) && pos.is_legal(tt_move);
        MovePicker {
            stage: if tt_ok {
                Stage::TtMove
            } else {
                Stage::QGenNoisy
            },
            tt_move: if tt_ok { tt_move } else { Move::NONE },
            ctx: OrderingContext::default(),
            list: MoveList::new(),
            scores: [0; MAX_MOVES],
            idx: 0,
            bad_len: 0,
            bad_idx: 0,
            quiet_start: 0,
            skip_quiets: true,
            qsearch: true,
        }
    }

    /// Whether the picker has reached the losing captures.
    pub fn in_bad_captures(&self) -> bool {
        self.stage == Stage::BadNoisy
    }

    fn score_noisy(&mut self, pos: &Position, hist: &History) {
        for (i, &m) in self.list.iter().enumerate() {
            let victim = captured_role(pos, m).map_or(0, |r| SEE_VALUE[r.index()]);
            let promo = match m.promotion_role() {
                Some(r) => SEE_VALUE[r.index()] - SEE_VALUE[0],
                None => 0,
            };
            let hist_score = match (pos.piece_at(m.from()), captured_role(pos, m)) {
                (Some(p), Some(c)) => hist.capture(p, m.to(), c),
                _ => 0,
            };
            // Most valuable victim first; history breaks the ties between
            // attackers better than a fixed least-valuable-attacker rule.
            self.scores[i] = 8 * (victim + promo) + hist_score / 16;
        }
    }

    fn score_quiet(&mut self, pos: &Position, hist: &History) {
        let us = pos.turn();
        for (i, &m) in self.list.iter().enumerate().skip(self.quiet_start) {
            let Some(p) = pos.piece_at(m.from()) else {
                continue;
            };
            let key = ContKey::new(p, m.to());
            self.scores[i] = hist.butterfly(us, self.ctx.threats, m)
                + hist.continuation(self.ctx.cont[0], key)
                + hist.continuation(self.ctx.cont[1], key);
        }
    }

    /// Sorts `list[from..]` by descending score (insertion sort: the
    /// lists are short and often nearly sorted).
    fn sort(&mut self, from: usize) {
        let n = self.list.len();
        let moves = &mut self.list.as_mut_slice()[from..n];
        let scores = &mut self.scores[from..n];
        for i in 1..moves.len() {
            let (m, s) = (moves[i], scores[i]);
            let mut j = i;
            while j > 0 && scores[j - 1] < s {
                moves[j] = moves[j - 1];
                scores[j] = scores[j - 1];
                j -= 1;
            }
            moves[j] = m;
            scores[j] = s;
        }
    }

    fn is_special(&self, m: Move) -> bool {
        m == self.tt_move
            || m == self.ctx.killers[0]
            || m == self.ctx.killers[1]
            || m == self.ctx.counter
    }

    /// The next move to try, or `None` when all have been returned.
    pub fn next(&mut self, pos: &Position, hist: &History) -> Option<Move> {
        loop {
            match self.stage {
                Stage::TtMove => {
                    self.stage = if self.qsearch {
                        Stage::QGenNoisy
                    } else {
                        Stage::GenNoisy
                    };
                    return Some(self.tt_move);
                }
                Stage::GenNoisy => {
                    self.list.clear();
                    pos.generate_noisy(&mut self.list);
                    self.score_noisy(pos, hist);
                    self.sort(0);
                    self.idx = 0;
                    self.stage = Stage::GoodNoisy;
                }
                Stage::GoodNoisy => {
                    while self.idx < self.list.len() {
                        let m = self.list[self.idx];
                        self.idx += 1;
                        if m == self.tt_move {
                            continue;
                        }
                        if see_ge(pos, m, 0) {
                            return Some(m);
                        }
                        // bad_len < idx: this slot was handed out already.
                        self.list.as_mut_slice()[self.bad_len] = m;
                        self.bad_len += 1;
                    }
                    self.stage = Stage::Killer1;
                }
                Stage::Killer1 | Stage::Killer2 | Stage::Counter => {
                    let (m, next) = match self.stage {
                        Stage::Killer1 => (self.ctx.killers[0], Stage::Killer2),
                        Stage::Killer2 => (self.ctx.killers[1], Stage::Counter),
                        _ => (self.ctx.counter, Stage::GenQuiet),
                    };
                    let dup = match self.stage {
                        Stage::Killer1 => m == self.tt_move,
                        Stage::Killer2 => m == self.tt_move || m == self.ctx.killers[0],
                        _ => {
                            m == self.tt_move
                                || m == self.ctx.killers[0]
                                || m == self.ctx.killers[1]
                        }
                    };
                    self.stage = next;
                    if !self.skip_quiets
                        && !m.is_none()
                        && !dup
                        && !is_noisy(pos, m)
                        && pos.is_legal(m)
                    {
                        return Some(m);
                    }
                }
                Stage::GenQuiet => {
                    if self.skip_quiets {
                        self.stage = Stage::BadNoisy;
                        continue;
                    }
                    self.quiet_start = self.list.len();
                    pos.generate_quiet(&mut self.list);
                    self.score_quiet(pos, hist);
                    self.sort(self.quiet_start);
                    self.idx = self.quiet_start;
                    self.stage = Stage::Quiet;
                }
                Stage::Quiet => {
                    while self.idx < self.list.len() {
                        let m = self.list[self.idx];
                        self.idx += 1;
                        // Once quiets are skipped, under-promotions (which
                        // the generator files as quiet) are still tried.
                        if !self.is_special(m) && (!self.skip_quiets || m.is_promotion()) {
                            return Some(m);
                        }
                    }
                    self.stage = Stage::BadNoisy;
                }
                Stage::BadNoisy => {
                    if self.bad_idx < self.bad_len {
                        let m = self.list[self.bad_idx];
                        self.bad_idx += 1;
                        return Some(m);
                    }
                    self.stage = Stage::Done;
                }
                Stage::QGenNoisy => {
                    self.list.clear();
                    pos.generate_noisy(&mut self.list);
                    self.score_noisy(pos, hist);
                    self.sort(0);
                    self.idx = 0;
                    self.stage = Stage::QNoisy;
                }
                Stage::QNoisy => {
                    while self.idx < self.list.len() {
                        let m = self.list[self.idx];
                        self.idx += 1;
                        if m != self.tt_move {
                            return Some(m);
                        }
                    }
                    self.stage = Stage::Done;
                }
                Stage::Done => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gives_check_agrees_with_playing_the_move() {
        for fen in [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
            "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
            "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
            "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
            "k7/8/1K6/8/8/8/8/7R w - - 0 1",
            "4k3/8/8/2pP4/8/8/8/R3K2R w KQ c6 0 1",
            "3k4/8/8/KPp4r/8/8/8/8 w - c6 0 1",
            "2r1k3/8/8/8/2B5/8/8/2R1K3 b - - 0 1",
            // A promotion that checks along the file the pawn stood on,
            // and a pawn that discovers check by promoting.
            "7K/1P6/8/8/8/8/8/1k6 w - - 0 1",
            "8/8/8/8/8/1k6/r3p2K/8 b - - 0 1",
        ] {
            // Every move of the position and of each position after it.
            let root = Position::from_fen(fen).unwrap();
            let mut positions = vec![root.clone()];
            positions.extend(root.legal_moves().iter().map(|&m| root.play(m)));
            for pos in positions {
                let info = CheckInfo::new(&pos);
                for m in pos.legal_moves().iter().copied() {
                    assert_eq!(
                        info.gives_check(&pos, m),
                        pos.play(m).in_check(),
                        "{}: {}",
                        pos.to_fen(crate::chess::CastlingNotation::XFen),
                        m.to_uci(false)
                    );
                }
            }
        }
    }

    use super::*;

    fn all_moves(fen: &str, tt: &str) -> Vec<Move> {
        let pos = Position::from_fen(fen).unwrap();
        let tt = pos.parse_uci(tt, false).unwrap_or(Move::NONE);
        let hist = History::new();
        let mut mp = MovePicker::new(&pos, tt, OrderingContext::default());
        let mut out = Vec::new();
        while let Some(m) = mp.next(&pos, &hist) {
            out.push(m);
        }
        out
    }

    #[test]
    fn every_legal_move_exactly_once() {
        for (fen, tt) in [
            (
                "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                "e2a6",
            ),
            ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", "b4f4"),
            (
                "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
                "c4c5",
            ),
            ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", "e1h1"),
        ] {
            let pos = Position::from_fen(fen).unwrap();
            let mut got = all_moves(fen, tt);
            let mut want: Vec<Move> = pos.legal_moves().iter().copied().collect();
            got.sort_by_key(|m| m.to_bits());
            want.sort_by_key(|m| m.to_bits());
            assert_eq!(got, want, "{fen}");
        }
    }

    #[test]
    fn tt_move_first_then_best_capture() {
        let fen = "4k3/8/3q4/2P1r3/3P4/8/8/K6Q w - - 0 1";
        let moves = all_moves(fen, "a1b1");
        assert_eq!(moves[0].to_uci(false), "a1b1");
        assert_eq!(moves[1].to_uci(false), "c5d6");
    }
}
