//! Accumulators: the feature layer's output for both perspectives, and
//! the per-ply stack the searcher keeps. Entering a child records only
//! the move's feature changes (`Delta`); the accumulator is brought up to
//! date when the node is evaluated, from the nearest computed ancestor,
//! so nodes cut off before their evaluation cost nothing. In a net with
//! king-mirrored inputs a king move between files a-d and e-h changes
//! every input of its side's perspective: that perspective is then
//! computed afresh from the position. Nothing here allocates after the
//! stack is built.

use super::features::{feature_index, king_flip};
use super::network::{Network, Row};
use super::simd;
use crate::chess::{Color, Move, MoveKind, Piece, Position, Role, Square, castle_destinations};
use crate::engine::score::MAX_PLY;

/// The feature layer's output, one row per perspective (indexed by
/// `Color`), and the file mirror each row was computed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Accumulator {
    pub rows: [Row; 2],
    /// Per perspective: 0, or 7 when its inputs are mirrored left-right.
    pub flips: [u8; 2],
}

impl Accumulator {
    /// Computes both perspectives from scratch.
    pub fn refresh(net: &Network, pos: &Position) -> Accumulator {
        let mut acc = Accumulator {
            rows: [Row::ZERO; 2],
            flips: [0; 2],
        };
        for c in Color::ALL {
            acc.refresh_perspective(net, pos, c);
        }
        acc
    }

    /// Computes the row of `perspective` from scratch.
    fn refresh_perspective(&mut self, net: &Network, pos: &Position, perspective: Color) {
        let flip = net.flip(pos, perspective);
        let row = &mut self.rows[perspective.index()];
        *row = net.feature_bias;
        for sq in pos.occupied() {
            if let Some(piece) = pos.piece_at(sq) {
                let w = &net.feature_weights[feature_index(perspective, piece, sq, flip)];
                for (o, w) in row.0.iter_mut().zip(&w.0) {
                    *o = o.wrapping_add(*w);
                }
            }
        }
        self.flips[perspective.index()] = flip;
    }

    /// Evaluation in centipawns of `pos`, whose accumulator this is, for
    /// its side to move.
    #[inline(always)]
    pub fn evaluate(&self, net: &Network, pos: &Position) -> i32 {
        let stm = pos.turn();
        net.output(
            &self.rows[stm.index()],
            &self.rows[(!stm).index()],
            pos.occupied().count(),
        )
    }
}

/// The pieces a move takes off and puts on squares (at most two each:
/// a capture removes two, castling moves two), and whether it took a
/// king between files a-d and e-h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delta {
    add: [(Piece, Square); 2],
    sub: [(Piece, Square); 2],
    n_add: u8,
    n_sub: u8,
    /// The side whose king crossed between the board's halves.
    king_crossed: Option<Color>,
}

const NO_PIECE: (Piece, Square) = (
    Piece {
        color: Color::White,
        role: Role::Pawn,
    },
    Square::new(0),
);

impl Delta {
    /// No change (a null move).
    pub const NONE: Delta = Delta {
        add: [NO_PIECE; 2],
        sub: [NO_PIECE; 2],
        n_add: 0,
        n_sub: 0,
        king_crossed: None,
    };

    #[inline(always)]
    fn add(&mut self, p: Piece, sq: Square) {
        self.add[self.n_add as usize & 1] = (p, sq);
        self.n_add += 1;
    }

    #[inline(always)]
    fn sub(&mut self, p: Piece, sq: Square) {
        self.sub[self.n_sub as usize & 1] = (p, sq);
        self.n_sub += 1;
    }

    /// The changes of `m`, legal in `pos` (which is the position before
    /// it). `Move::NONE` is the null move.
    pub fn of_move(pos: &Position, m: Move) -> Delta {
        let mut d = Delta::NONE;
        if m.is_none() {
            return d;
        }
        let (from, to) = (m.from(), m.to());
        let Some(moving) = pos.piece_at(from) else {
            return d;
        };
        let us = moving.color;
        match m.kind() {
            MoveKind::Castle => {
                // King takes own rook; in Chess960 the destinations may
                // be the other piece's start square (or its own).
                let rook = Piece {
                    color: us,
                    role: Role::Rook,
                };
                let (king_to, rook_to) = castle_destinations(us, from, to);
                d.sub(moving, from);
                d.sub(rook, to);
                d.add(moving, king_to);
                d.add(rook, rook_to);
                d.king_crossed = (king_flip(from) != king_flip(king_to)).then_some(us);
            }
            MoveKind::EnPassant => {
                let captured = Piece {
                    color: !us,
                    role: Role::Pawn,
                };
                d.sub(moving, from);
                d.sub(captured, Square::from_coords(to.file(), from.rank()));
                d.add(moving, to);
            }
            kind => {
                d.sub(moving, from);
                if let Some(captured) = pos.piece_at(to) {
                    d.sub(captured, to);
                }
                let placed = match kind {
                    MoveKind::Promotion(role) => Piece { color: us, role },
                    _ => moving,
                };
                d.add(placed, to);
                if moving.role == Role::King && king_flip(from) != king_flip(to) {
                    d.king_crossed = Some(us);
                }
            }
        }
        d
    }

    /// Whether this move changes every input of `perspective` in `net`
    /// (its king crossed between the halves of a king-mirrored net): its
    /// row must then be computed afresh.
    #[inline(always)]
    pub fn refreshes(&self, net: &Network, perspective: Color) -> bool {
        net.mirrored && self.king_crossed == Some(perspective)
    }

    /// `out = inp` changed by this delta, for `perspective`; the delta
    /// must not `refresh` it.
    #[inline(always)]
    pub fn apply(
        &self,
        net: &Network,
        perspective: Color,
        inp: &Accumulator,
        out: &mut Accumulator,
    ) {
        let (na, ns) = (self.n_add as usize, self.n_sub as usize);
        let c = perspective.index();
        let flip = inp.flips[c];
        let row = |(p, sq): (Piece, Square)| {
            &net.feature_weights[feature_index(perspective, p, sq, flip)]
        };
        let add = [row(self.add[0]), row(self.add[1])];
        let sub = [row(self.sub[0]), row(self.sub[1])];
        simd::update(
            net.simd,
            &mut out.rows[c],
            &inp.rows[c],
            &add[..na],
            &sub[..ns],
        );
        out.flips[c] = flip;
    }
}

#[derive(Clone, Copy)]
struct Entry {
    acc: Accumulator,
    delta: Delta,
    /// Per perspective: `acc`'s row is up to date.
    computed: [bool; 2],
}

/// One accumulator per ply of the current line.
pub struct AccumulatorStack {
    entries: Box<[Entry]>,
}

impl Default for AccumulatorStack {
    fn default() -> Self {
        AccumulatorStack::new()
    }
}

impl AccumulatorStack {
    pub fn new() -> AccumulatorStack {
        let entry = Entry {
            acc: Accumulator {
                rows: [Row::ZERO; 2],
                flips: [0; 2],
            },
            delta: Delta::NONE,
            computed: [false; 2],
        };
        AccumulatorStack {
            entries: vec![entry; MAX_PLY + 2].into_boxed_slice(),
        }
    }

    /// The search starts at `pos` (ply 0).
    pub fn reset(&mut self, net: &Network, pos: &Position) {
        self.entries[0].acc = Accumulator::refresh(net, pos);
        self.entries[0].computed = [true; 2];
    }

    /// The node at `ply` is entered by `m` from `parent` (`Move::NONE`: a
    /// null move). Only records the change.
    #[inline(always)]
    pub fn push(&mut self, ply: usize, parent: &Position, m: Move) {
        if let Some(e) = self.entries.get_mut(ply) {
            e.delta = Delta::of_move(parent, m);
            e.computed = [false; 2];
        }
    }

    /// The evaluation of `pos`, the node at `ply` of the current line.
    #[inline]
    pub fn evaluate(&mut self, net: &Network, pos: &Position, ply: usize) -> i32 {
        if ply >= self.entries.len() {
            return Accumulator::refresh(net, pos).evaluate(net, pos);
        }
        for c in Color::ALL {
            self.update(net, pos, ply, c);
        }
        self.entries[ply].acc.evaluate(net, pos)
    }

    /// Brings the row of `perspective` at `ply` up to date: by the
    /// deltas from the nearest computed ancestor, or afresh from `pos`
    /// when there is none or a move on the way refreshes it.
    #[inline]
    fn update(&mut self, net: &Network, pos: &Position, ply: usize, perspective: Color) {
        let c = perspective.index();
        let mut base = ply;
        loop {
            let e = &self.entries[base];
            if e.computed[c] {
                break;
            }
            if base == 0 || e.delta.refreshes(net, perspective) {
                let e = &mut self.entries[ply];
                e.acc.refresh_perspective(net, pos, perspective);
                e.computed[c] = true;
                return;
            }
            base -= 1;
        }
        while base < ply {
            let (done, rest) = self.entries.split_at_mut(base + 1);
            let next = &mut rest[0];
            next.delta
                .apply(net, perspective, &done[base].acc, &mut next.acc);
            next.computed[c] = true;
            base += 1;
        }
    }

    /// The accumulator of `ply` as `evaluate` last left it (tests).
    pub fn accumulator(&self, ply: usize) -> Option<&Accumulator> {
        self.entries
            .get(ply)
            .filter(|e| e.computed == [true; 2])
            .map(|e| &e.acc)
    }
}
