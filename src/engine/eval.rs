//! Static evaluation, hand-crafted and tapered: every term has a mid-game
//! and an end-game weight, blended by the material phase. All weights live
//! in one array, `params::WEIGHTS`, laid out by `weights` (the offsets),
//! so the Texel tuner (`tune`) can fit them to game results.
//!
//! The evaluation is linear in the weights: each term adds `weight *
//! count` for White and subtracts it for Black. A `Trace` records the
//! counts, which is all the tuner needs to compute the gradient.

use super::params::WEIGHTS;
use super::weights::*;
use crate::chess::{
    Bitboard, Color, Position, Role, Square, bishop_attacks, king_attacks, knight_attacks,
    pawn_attacks, pawn_attacks_set, queen_attacks, rook_attacks,
};

/// Phase weights: knight and bishop 1, rook 2, queen 4; 24 = opening.
pub const PHASE_MAX: i32 = 24;
const PHASE_WEIGHT: [i32; 6] = [0, 1, 1, 2, 4, 0];

// ---- Tracing --------------------------------------------------------------

/// Receives every term's coefficient (White minus Black) for the tuner.
pub trait Trace {
    fn add(&mut self, idx: usize, coef: i32);
}

/// The search's trace: does nothing and compiles away.
pub struct NoTrace;

impl Trace for NoTrace {
    #[inline(always)]
    fn add(&mut self, _: usize, _: i32) {}
}

// ---- Geometry tables ------------------------------------------------------

const fn file_bb(f: u8) -> u64 {
    0x0101_0101_0101_0101u64 << f
}

const fn adjacent_files(f: u8) -> u64 {
    let mut b = 0;
    if f > 0 {
        b |= file_bb(f - 1);
    }
    if f < 7 {
        b |= file_bb(f + 1);
    }
    b
}

/// Squares strictly in front of `sq` (from `c`'s view), all files.
const fn forward_ranks(c: usize, sq: usize) -> u64 {
    let r = sq / 8;
    if c == 0 {
        if r == 7 { 0 } else { !0u64 << (8 * (r + 1)) }
    } else if r == 0 {
        0
    } else {
        !0u64 >> (8 * (8 - r))
    }
}

const fn build_front(c: usize, span: bool) -> [u64; 64] {
    let mut t = [0u64; 64];
    let mut sq = 0;
    while sq < 64 {
        let f = (sq % 8) as u8;
        let files = if span {
            file_bb(f) | adjacent_files(f)
        } else {
            file_bb(f)
        };
        t[sq] = forward_ranks(c, sq) & files;
        sq += 1;
    }
    t
}

/// Squares in front of a pawn on its file.
static FRONT_FILE: [[u64; 64]; 2] = [build_front(0, false), build_front(1, false)];
/// Squares an enemy pawn must not occupy for the pawn to be passed.
static PASSED_SPAN: [[u64; 64]; 2] = [build_front(0, true), build_front(1, true)];

#[inline(always)]
fn distance(a: Square, b: Square) -> i32 {
    (a.file() as i32 - b.file() as i32)
        .abs()
        .max((a.rank() as i32 - b.rank() as i32).abs())
}

// ---- Evaluation -----------------------------------------------------------

struct Eval<'a, T: Trace> {
    pos: &'a Position,
    w: &'a [S],
    trace: &'a mut T,
    score: S,
    attacked_by: [[Bitboard; 6]; 2],
    attacked: [Bitboard; 2],
    king_zone: [Bitboard; 2],
}

impl<T: Trace> Eval<'_, T> {
    #[inline(always)]
    fn add(&mut self, c: Color, idx: usize, n: i32) {
        let n = if c == Color::White { n } else { -n };
        self.score += self.w[idx] * n;
        self.trace.add(idx, n);
    }

    fn material_and_psts(&mut self) {
        let pos = self.pos;
        for c in Color::ALL {
            for role in Role::ALL {
                for sq in pos.pieces(c, role) {
                    self.add(c, MATERIAL + role.index(), 1);
                    // Tables are written from White's side; a Black piece
                    // reads the square with its rank mirrored (7 - rank).
                    self.add(c, PST + role.index() * 64 + sq.relative(c).index(), 1);
                }
            }
        }
    }

    fn pawns(&mut self, c: Color) {
        let pos = self.pos;
        let ours = pos.pieces(c, Role::Pawn);
        let theirs = pos.pieces(!c, Role::Pawn);
        let their_pawn_att = self.attacked_by[(!c).index()][0];
        for sq in ours {
            let ci = c.index();
            let f = sq.file();
            let rel_rank = sq.relative(c).rank() as usize;
            let adjacent = Bitboard(adjacent_files(f));
            let supported = (pawn_attacks(!c, sq) & ours).any();
            let phalanx = (adjacent & Bitboard::rank(sq.rank()) & ours).any();
            let front_own = (Bitboard(FRONT_FILE[ci][sq.index()]) & ours).any();

            if (adjacent & ours).is_empty() {
                self.add(c, ISOLATED, 1);
            } else if !supported && !phalanx {
                // Backward: every neighbour has advanced past it and the
                // square in front is held by an enemy pawn.
                let behind_or_level = !Bitboard(forward_ranks(ci, sq.index()));
                let stop = sq.forward(c);
                if (adjacent & behind_or_level & ours).is_empty()
                    && stop.is_some_and(|s| their_pawn_att.contains(s))
                {
                    self.add(c, BACKWARD, 1);
                }
            }
            if front_own {
                self.add(c, DOUBLED, 1);
            }
            if supported || phalanx {
                self.add(c, CONNECTED + rel_rank, 1);
            }
            if !front_own && (Bitboard(PASSED_SPAN[ci][sq.index()]) & theirs).is_empty() {
                self.add(c, PASSED + rel_rank, 1);
                if let Some(stop) = sq.forward(c) {
                    if pos.occupied().contains(stop) {
                        self.add(c, PASSED_BLOCKED + rel_rank, 1);
                    }
                    let own_d = distance(pos.king(c), stop) as usize;
                    let their_d = distance(pos.king(!c), stop) as usize;
                    self.add(c, PASSED_OWN_KING + own_d.min(7), 1);
                    self.add(c, PASSED_THEIR_KING + their_d.min(7), 1);
                }
            }
        }
    }

    fn pieces(&mut self, c: Color) {
        let pos = self.pos;
        let ci = c.index();
        let occ = pos.occupied();
        let ours = pos.by_color(c);
        let own_pawns = pos.pieces(c, Role::Pawn);
        let their_pawns = pos.pieces(!c, Role::Pawn);
        // Squares worth counting for mobility: not our pawns or king, not
        // covered by an enemy pawn (a piece going there is just lost).
        let area = !(own_pawns | pos.pieces(c, Role::King) | self.attacked_by[(!c).index()][0]);
        let enemy_zone = self.king_zone[(!c).index()];
        for (role, mob_base) in [
            (Role::Knight, MOB_KNIGHT),
            (Role::Bishop, MOB_BISHOP),
            (Role::Rook, MOB_ROOK),
            (Role::Queen, MOB_QUEEN),
        ] {
            for sq in pos.pieces(c, role) {
                let att = match role {
                    Role::Knight => knight_attacks(sq),
                    Role::Bishop => bishop_attacks(sq, occ),
                    Role::Rook => rook_attacks(sq, occ),
                    _ => queen_attacks(sq, occ),
                };
                self.attacked_by[ci][role.index()] |= att;
                self.attacked[ci] |= att;
                self.add(c, mob_base + (att & area).count() as usize, 1);
                let zone_hits = (att & enemy_zone).count() as i32;
                if zone_hits > 0 {
                    self.add(c, KING_ATTACK + role.index() - 1, zone_hits);
                }
                let rel_rank = sq.relative(c).rank();
                match role {
                    Role::Rook => {
                        let file = Bitboard::file(sq.file());
                        if (file & own_pawns).is_empty() {
                            if (file & their_pawns).is_empty() {
                                self.add(c, ROOK_OPEN, 1);
                            } else {
                                self.add(c, ROOK_SEMI, 1);
                            }
                        }
                        if rel_rank == 6 {
                            self.add(c, ROOK_7TH, 1);
                        }
                    }
                    Role::Knight | Role::Bishop => {
                        // An outpost: in the enemy half, guarded by a pawn,
                        // and no enemy pawn can ever chase the piece away.
                        let span =
                            Bitboard(PASSED_SPAN[ci][sq.index()]) & !Bitboard::file(sq.file());
                        if (3..=5).contains(&rel_rank)
                            && self.attacked_by[ci][0].contains(sq)
                            && (span & their_pawns).is_empty()
                        {
                            self.add(c, OUTPOST + (role == Role::Bishop) as usize, 1);
                        }
                    }
                    _ => {}
                }
            }
        }
        if pos.pieces(c, Role::Bishop).more_than_one() {
            self.add(c, BISHOP_PAIR, 1);
        }
        let _ = ours;
    }

    fn king_safety(&mut self, c: Color) {
        let pos = self.pos;
        let them = !c;
        let ksq = pos.king(c);
        let own_pawns = pos.pieces(c, Role::Pawn);
        // Pawn shield on the king's file and its neighbours.
        let files = Bitboard(file_bb(ksq.file()) | adjacent_files(ksq.file()));
        let r2 = Bitboard::rank(c.relative_rank(1));
        let r3 = Bitboard::rank(c.relative_rank(2));
        let shield2 = (files & r2 & own_pawns).count() as i32;
        let shield3 = (files & r3 & own_pawns).count() as i32;
        if ksq.relative(c).rank() <= 1 {
            self.add(c, SHIELD, shield2);
            self.add(c, SHIELD + 1, shield3);
        }
        let lo = ksq.file().saturating_sub(1);
        let hi = (ksq.file() + 1).min(7);
        let semi_open = (lo..=hi)
            .filter(|&f| (Bitboard::file(f) & own_pawns).is_empty())
            .count() as i32;
        self.add(c, KING_SEMI_OPEN, semi_open);

        // Safe checks: squares from which an enemy piece would check and
        // that we do not defend.
        let occ = pos.occupied();
        let safe = !self.attacked[c.index()] & !pos.by_color(them);
        let ti = them.index();
        let knight_checks = knight_attacks(ksq) & safe & self.attacked_by[ti][1];
        let bishop_checks = bishop_attacks(ksq, occ) & safe;
        let rook_checks = rook_attacks(ksq, occ) & safe;
        self.add(them, SAFE_CHECK, knight_checks.count() as i32);
        self.add(
            them,
            SAFE_CHECK + 1,
            (bishop_checks & self.attacked_by[ti][2]).count() as i32,
        );
        self.add(
            them,
            SAFE_CHECK + 2,
            (rook_checks & self.attacked_by[ti][3]).count() as i32,
        );
        self.add(
            them,
            SAFE_CHECK + 3,
            ((bishop_checks | rook_checks) & self.attacked_by[ti][4]).count() as i32,
        );
    }

    fn threats(&mut self, c: Color) {
        let pos = self.pos;
        let ci = c.index();
        let them = !c;
        let ti = them.index();
        let their_pieces = pos.by_color(them) & !pos.by_role(Role::King);
        let non_pawns = their_pieces & !pos.by_role(Role::Pawn);
        self.add(
            c,
            THREAT_BY_PAWN,
            (self.attacked_by[ci][0] & non_pawns).count() as i32,
        );
        // Weak: not defended by a pawn, or simply worth more than the
        // attacker.
        let defended_by_pawn = self.attacked_by[ti][0];
        let minors_att = self.attacked_by[ci][1] | self.attacked_by[ci][2];
        let rook_att = self.attacked_by[ci][3];
        for role in [
            Role::Pawn,
            Role::Knight,
            Role::Bishop,
            Role::Rook,
            Role::Queen,
        ] {
            let victims = pos.pieces(them, role);
            let weak_for_minor = if role >= Role::Rook {
                victims
            } else {
                victims & !defended_by_pawn
            };
            let weak_for_rook = if role == Role::Queen {
                victims
            } else {
                victims & !self.attacked[ti]
            };
            let n = (weak_for_minor & minors_att).count() as i32;
            if n > 0 {
                self.add(c, THREAT_BY_MINOR + role.index(), n);
            }
            let n = (weak_for_rook & rook_att).count() as i32;
            if n > 0 {
                self.add(c, THREAT_BY_ROOK + role.index(), n);
            }
        }
        let hanging = non_pawns & self.attacked[ci] & !self.attacked[ti];
        self.add(c, HANGING, hanging.count() as i32);
    }
}

/// Game phase from the remaining material: 24 = all pieces, 0 = pawns
/// and kings only.
pub fn phase(pos: &Position) -> i32 {
    let mut p = 0;
    for role in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen] {
        p += PHASE_WEIGHT[role.index()] * pos.by_role(role).count() as i32;
    }
    p.min(PHASE_MAX)
}

/// Scale (out of 64) for the end-game half: a side without pawns needs
/// more than a minor piece's worth of extra material to win.
pub fn eg_scale(pos: &Position, eg_white: i32) -> i32 {
    let strong = if eg_white >= 0 {
        Color::White
    } else {
        Color::Black
    };
    if pos.pieces(strong, Role::Pawn).any() {
        return 64;
    }
    let npm = |c: Color| {
        pos.pieces(c, Role::Knight).count() as i32 * 3
            + pos.pieces(c, Role::Bishop).count() as i32 * 3
            + pos.pieces(c, Role::Rook).count() as i32 * 5
            + pos.pieces(c, Role::Queen).count() as i32 * 9
    };
    let diff = npm(strong) - npm(!strong);
    if diff <= 3 {
        if npm(strong) <= 3 { 0 } else { 16 }
    } else {
        64
    }
}

/// Evaluates `pos` with weights `w`, reporting every term to `trace`.
/// Returns (packed White score, phase, eg scale).
pub fn evaluate_terms<T: Trace>(pos: &Position, w: &[S], trace: &mut T) -> (S, i32, i32) {
    let mut e = Eval {
        pos,
        w,
        trace,
        score: 0,
        attacked_by: [[Bitboard::EMPTY; 6]; 2],
        attacked: [Bitboard::EMPTY; 2],
        king_zone: [Bitboard::EMPTY; 2],
    };
    for c in Color::ALL {
        let ci = c.index();
        let pawn_att = pawn_attacks_set(c, pos.pieces(c, Role::Pawn));
        let king_att = king_attacks(pos.king(c));
        e.attacked_by[ci][0] = pawn_att;
        e.attacked_by[ci][5] = king_att;
        e.attacked[ci] = pawn_att | king_att;
        e.king_zone[ci] = king_att | Bitboard::from_square(pos.king(c));
    }
    e.material_and_psts();
    for c in Color::ALL {
        e.pieces(c);
    }
    for c in Color::ALL {
        e.pawns(c);
        e.king_safety(c);
        e.threats(c);
    }
    e.add(pos.turn(), TEMPO, 1);
    let ph = phase(pos);
    let scale = eg_scale(pos, eg(e.score));
    (e.score, ph, scale)
}

/// Blends a packed White score into one value from White's view.
#[inline(always)]
pub fn taper(score: S, phase: i32, scale: i32) -> i32 {
    (mg(score) * phase + eg(score) * scale / 64 * (PHASE_MAX - phase)) / PHASE_MAX
}

/// The static evaluation from the side to move's point of view.
pub fn evaluate(pos: &Position) -> i32 {
    let (score, phase, scale) = evaluate_terms(pos, &WEIGHTS, &mut NoTrace);
    let v = taper(score, phase, scale);
    if pos.turn() == Color::White { v } else { -v }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Coefs(Vec<i32>);
    impl Trace for Coefs {
        fn add(&mut self, idx: usize, coef: i32) {
            self.0[idx] += coef;
        }
    }

    #[test]
    fn packing() {
        for (a, b) in [(0, 0), (5, -7), (-300, 1200), (-1, -1), (32000, -32000)] {
            assert_eq!((mg(s(a, b)), eg(s(a, b))), (a, b));
        }
        assert_eq!(mg(s(3, 4) + s(-5, 6)), -2);
        assert_eq!(eg(s(3, 4) + s(-5, 6)), 10);
        assert_eq!(eg(s(3, -4) * -3), 12);
    }

    #[test]
    fn symmetric_and_linear() {
        for fen in [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
            "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1BBPPP/R2QK2R b KQ - 0 8",
            "8/8/4k3/8/8/3KB3/8/8 w - - 0 1",
        ] {
            let pos = Position::from_fen(fen).unwrap();
            // Mirror: flip ranks and swap colours.
            let mirrored = mirror_fen(fen);
            let m = Position::from_fen(&mirrored).unwrap();
            assert_eq!(evaluate(&pos), evaluate(&m), "{fen} vs {mirrored}");
            // The trace reproduces the packed score.
            let mut t = Coefs(vec![0; N_PARAMS]);
            let (score, _, _) = evaluate_terms(&pos, &WEIGHTS, &mut t);
            let sum: i32 = t.0.iter().zip(WEIGHTS.iter()).map(|(c, w)| c * w).sum();
            assert_eq!(score, sum);
        }
    }

    fn mirror_fen(fen: &str) -> String {
        let parts: Vec<&str> = fen.split(' ').collect();
        let board: Vec<String> = parts[0]
            .split('/')
            .rev()
            .map(|r| {
                r.chars()
                    .map(|ch| {
                        if ch.is_ascii_uppercase() {
                            ch.to_ascii_lowercase()
                        } else {
                            ch.to_ascii_uppercase()
                        }
                    })
                    .collect()
            })
            .collect();
        let turn = if parts[1] == "w" { "b" } else { "w" };
        let castling: String = if parts[2] == "-" {
            "-".into()
        } else {
            let mut c: Vec<char> = parts[2]
                .chars()
                .map(|ch| {
                    if ch.is_ascii_uppercase() {
                        ch.to_ascii_lowercase()
                    } else {
                        ch.to_ascii_uppercase()
                    }
                })
                .collect();
            c.sort_by_key(|ch| (ch.is_ascii_lowercase(), *ch));
            c.into_iter().collect()
        };
        format!(
            "{} {} {} - {} {}",
            board.join("/"),
            turn,
            castling,
            parts[4],
            parts[5]
        )
    }
}
