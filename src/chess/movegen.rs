//! Legal move generation. Moves are generated legal from the start (check
//! masks, pin lines, king-safety tests), never "pseudo-legal then filter".
//!
//! Generation is split in two disjoint families so the search can take
//! them in stages: *noisy* moves (captures, en passant, queen promotions)
//! and *quiet* moves (everything else, under-promotions included).
//! `legal_moves` yields both.
//!
//! The generator writes into a `Sink`: a `MoveList` collects moves, a
//! counter only counts them (perft's bulk counting at the last ply).

use super::attacks::{
    between, bishop_attacks, king_attacks, knight_attacks, line, pawn_attacks, queen_attacks,
    rook_attacks,
};
use super::bitboard::Bitboard;
use super::moves::{Move, MoveList};
use super::position::Position;
use super::types::{Color, Role, Square};

/// Where generated moves go. Implemented by `MoveList` and by a counter.
pub(crate) trait Sink {
    /// Normal moves from `from` to each square of `to`.
    fn moves(&mut self, from: Square, to: Bitboard);
    /// Pawn moves to each square of `to`, from `to - delta`.
    fn pawn_moves(&mut self, to: Bitboard, delta: i8);
    /// Promotions to each square of `to`, from `to - delta`.
    fn promotions(&mut self, to: Bitboard, delta: i8, queen: bool, under: bool);
    /// One special move (castling, en passant).
    fn special(&mut self, m: Move);
}

impl Sink for MoveList {
    #[inline(always)]
    fn moves(&mut self, from: Square, to: Bitboard) {
        for t in to {
            self.push(Move::normal(from, t));
        }
    }

    #[inline(always)]
    fn pawn_moves(&mut self, to: Bitboard, delta: i8) {
        for t in to {
            self.push(Move::normal(
                Square::new((t.index() as i8 - delta) as u8),
                t,
            ));
        }
    }

    #[inline(always)]
    fn promotions(&mut self, to: Bitboard, delta: i8, queen: bool, under: bool) {
        for t in to {
            let from = Square::new((t.index() as i8 - delta) as u8);
            if queen {
                self.push(Move::promotion(from, t, Role::Queen));
            }
            if under {
                self.push(Move::promotion(from, t, Role::Knight));
                self.push(Move::promotion(from, t, Role::Rook));
                self.push(Move::promotion(from, t, Role::Bishop));
            }
        }
    }

    #[inline(always)]
    fn special(&mut self, m: Move) {
        self.push(m);
    }
}

/// Counts moves without storing them.
pub(crate) struct Counter(pub u64);

impl Sink for Counter {
    #[inline(always)]
    fn moves(&mut self, _: Square, to: Bitboard) {
        self.0 += to.count() as u64;
    }

    #[inline(always)]
    fn pawn_moves(&mut self, to: Bitboard, _: i8) {
        self.0 += to.count() as u64;
    }

    #[inline(always)]
    fn promotions(&mut self, to: Bitboard, _: i8, queen: bool, under: bool) {
        self.0 += to.count() as u64 * (queen as u64 + 3 * under as u64);
    }

    #[inline(always)]
    fn special(&mut self, _: Move) {
        self.0 += 1;
    }
}

const ALL: u8 = 0;
const NOISY: u8 = 1;
const QUIET: u8 = 2;

impl Position {
    /// Every legal move.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.generate::<ALL, _>(&mut list);
        list
    }

    /// Appends every legal move to `list`.
    pub fn generate_legal(&self, list: &mut MoveList) {
        self.generate::<ALL, _>(list);
    }

    /// Appends the legal noisy moves: captures, en passant and queen
    /// promotions (capturing or not).
    pub fn generate_noisy(&self, list: &mut MoveList) {
        self.generate::<NOISY, _>(list);
    }

    /// Appends the legal quiet moves: non-captures and under-promotions.
    pub fn generate_quiet(&self, list: &mut MoveList) {
        self.generate::<QUIET, _>(list);
    }

    /// Number of legal moves (no list is built).
    pub fn count_legal(&self) -> u64 {
        let mut c = Counter(0);
        self.generate::<ALL, _>(&mut c);
        c.0
    }

    /// Whether the side to move has any legal move.
    pub fn has_legal_move(&self) -> bool {
        // Cheap in practice: mates and stalemates are rare, and counting is
        // fast; an early exit would not repay its complexity.
        self.count_legal() > 0
    }

    pub(crate) fn generate<const MODE: u8, S: Sink>(&self, sink: &mut S) {
        let us = self.turn;
        let them = !us;
        let ours = self.by_color(us);
        let theirs = self.by_color(them);
        let occ = ours | theirs;
        let king = self.king(us);

        // The squares a non-king move may land on: all but our own, cut
        // down to "block or capture the checker" when in check.
        let mode_mask = match MODE {
            NOISY => theirs,
            QUIET => !occ,
            _ => !ours,
        };

        // King moves first: they are the only ones in double check.
        let king_targets = king_attacks(king) & mode_mask;
        if king_targets.any() {
            let occ_wo_king = occ ^ Bitboard::from_square(king);
            let mut safe = Bitboard::EMPTY;
            for t in king_targets {
                if !self.is_attacked(t, them, occ_wo_king) {
                    safe = safe.with(t);
                }
            }
            sink.moves(king, safe);
        }

        let checkers = self.checkers;
        if checkers.more_than_one() {
            return;
        }
        let check_mask = match checkers.first() {
            Some(c) => between(king, c) | checkers,
            None => Bitboard::ALL,
        };
        let target = mode_mask & check_mask;
        let pinned = self.pinned(us);

        // Knights: a pinned knight can never move.
        for from in self.pieces(us, Role::Knight) & !pinned {
            sink.moves(from, knight_attacks(from) & target);
        }
        // Sliders: a pinned one may move along its pin line.
        let queens = self.pieces(us, Role::Queen);
        for from in self.pieces(us, Role::Bishop) {
            let mut t = bishop_attacks(from, occ) & target;
            if pinned.contains(from) {
                t &= line(king, from);
            }
            sink.moves(from, t);
        }
        for from in self.pieces(us, Role::Rook) {
            let mut t = rook_attacks(from, occ) & target;
            if pinned.contains(from) {
                t &= line(king, from);
            }
            sink.moves(from, t);
        }
        for from in queens {
            let mut t = queen_attacks(from, occ) & target;
            if pinned.contains(from) {
                t &= line(king, from);
            }
            sink.moves(from, t);
        }

        self.generate_pawns::<MODE, S>(sink, check_mask, pinned, king);

        if MODE != NOISY && checkers.is_empty() {
            for rook in self.castle_rooks & ours {
                if self.castle_is_legal(rook) {
                    sink.special(Move::castle(king, rook));
                }
            }
        }
    }

    #[inline(always)]
    fn generate_pawns<const MODE: u8, S: Sink>(
        &self,
        sink: &mut S,
        check_mask: Bitboard,
        pinned: Bitboard,
        king: Square,
    ) {
        let us = self.turn;
        let theirs = self.by_color(!us);
        let empty = !self.occupied();
        let pawns = self.pieces(us, Role::Pawn);
        let last_rank = Bitboard::rank(us.relative_last_rank());
        let third_rank = Bitboard::rank(us.relative_rank(2));
        let (up, up_west, up_east): (i8, i8, i8) = match us {
            Color::White => (8, 7, 9),
            Color::Black => (-8, -9, -7),
        };
        let shift = |b: Bitboard, d: i8| -> Bitboard {
            if d > 0 {
                Bitboard(b.0 << d)
            } else {
                Bitboard(b.0 >> -d)
            }
        };
        let not_a = !Bitboard::file(0);
        let not_h = !Bitboard::file(7);

        // Unpinned pawns move set-wise; pawns pinned on a file may still
        // push, and pawns pinned on a diagonal may capture the pinner. Those
        // go one by one below.
        let free = pawns & !pinned;
        let push_ok = MODE != NOISY;
        let (queen_promos, under_promos) = match MODE {
            NOISY => (true, false),
            QUIET => (false, true),
            _ => (true, true),
        };

        // Pushes (quiet promotions of the queen are noisy).
        let single = shift(free, up) & empty;
        if push_ok {
            let double = shift(single & third_rank, up) & empty & check_mask;
            sink.pawn_moves(single & check_mask & !last_rank, up);
            sink.pawn_moves(double, 2 * up);
        }
        let push_promos = single & check_mask & last_rank;
        if push_promos.any() {
            sink.promotions(push_promos, up, queen_promos, under_promos);
        }

        // Captures.
        let capture_mask = theirs & check_mask;
        for (delta, file_mask) in [(up_west, not_h), (up_east, not_a)] {
            let caps = shift(free, delta) & file_mask & capture_mask;
            if MODE != QUIET {
                sink.pawn_moves(caps & !last_rank, delta);
            }
            let promos = caps & last_rank;
            if promos.any() {
                sink.promotions(promos, delta, queen_promos, under_promos);
            }
        }

        // Pinned pawns, one at a time.
        for from in pawns & pinned {
            let pin_line = line(king, from);
            let mut to = pawn_attacks(us, from) & capture_mask & pin_line;
            if (push_ok || (from.rank() == us.relative_rank(6)))
                && let Some(one) = from.forward(us).filter(|s| empty.contains(*s))
            {
                to |= Bitboard::from_square(one) & check_mask & pin_line;
                if from.rank() == us.relative_rank(1)
                    && push_ok
                    && let Some(two) = one.forward(us).filter(|s| empty.contains(*s))
                {
                    to |= Bitboard::from_square(two) & check_mask & pin_line;
                }
            }
            for t in to {
                let delta = t.index() as i8 - from.index() as i8;
                let bb = Bitboard::from_square(t);
                if last_rank.contains(t) {
                    sink.promotions(bb, delta, queen_promos, under_promos);
                } else if MODE == ALL || (MODE == NOISY) == theirs.contains(t) {
                    sink.pawn_moves(bb, delta);
                }
            }
        }

        // En passant (legality checked in full: it removes two pieces from
        // a line, which no pin mask describes).
        if MODE != QUIET
            && let Some(ep) = self.ep_square
        {
            for from in pawn_attacks(!us, ep) & pawns {
                if self.ep_capture_is_legal(from, ep) {
                    sink.special(Move::en_passant(from, ep));
                }
            }
        }
    }
}
