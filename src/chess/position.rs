//! `Position`: the board, side to move, castling rights, en-passant square,
//! clocks and Zobrist key, with copy-make (`play`). A `Position` is only
//! built by `from_fen`/`startpos` (in `fen`, which depends on this module
//! and not the reverse), which validate it, so every `Position`
//! is legal: one king a side, the side not to move is not in check, the
//! castling rights and en-passant square are consistent.

use super::attacks::{
    between, bishop_attacks, king_attacks, knight_attacks, line, pawn_attacks, pawn_attacks_set,
    rook_attacks,
};
use super::bitboard::Bitboard;
use super::moves::{Move, MoveKind};
use super::types::{Color, Piece, Role, Square};
use super::zobrist;

/// A legal chess (or Chess960) position.
#[derive(Clone, PartialEq, Eq)]
pub struct Position {
    pub(crate) by_role: [Bitboard; 6],
    pub(crate) by_color: [Bitboard; 2],
    pub(crate) board: [Option<Piece>; 64],
    pub(crate) turn: Color,
    /// Rooks that still carry a castling right (at most two per side).
    pub(crate) castle_rooks: Bitboard,
    /// Set only when a legal en-passant capture exists.
    pub(crate) ep_square: Option<Square>,
    pub(crate) halfmove: u32,
    pub(crate) fullmove: u32,
    pub(crate) key: u64,
    pub(crate) pawn_key: u64,
    pub(crate) checkers: Bitboard,
}

/// The castling side of a rook, relative to its king.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum CastleSide {
    King,
    Queen,
}

impl CastleSide {
    /// Files where king and rook end up: (king file, rook file).
    #[inline(always)]
    pub fn destination_files(self) -> (u8, u8) {
        match self {
            CastleSide::King => (6, 5),
            CastleSide::Queen => (2, 3),
        }
    }
}

/// Where `color`'s king and rook end up when the king on `king` castles
/// with the rook on `rook` (standard chess and Chess960 alike).
#[inline(always)]
pub fn castle_destinations(color: Color, king: Square, rook: Square) -> (Square, Square) {
    let side = if rook.file() > king.file() {
        CastleSide::King
    } else {
        CastleSide::Queen
    };
    let (kf, rf) = side.destination_files();
    let rank = color.back_rank();
    (Square::from_coords(kf, rank), Square::from_coords(rf, rank))
}

impl Position {
    /// An empty board: only for the FEN parser, which fills and validates it.
    pub(crate) fn empty() -> Position {
        Position {
            by_role: [Bitboard::EMPTY; 6],
            by_color: [Bitboard::EMPTY; 2],
            board: [None; 64],
            turn: Color::White,
            castle_rooks: Bitboard::EMPTY,
            ep_square: None,
            halfmove: 0,
            fullmove: 1,
            key: 0,
            pawn_key: 0,
            checkers: Bitboard::EMPTY,
        }
    }

    // ---- Accessors -------------------------------------------------------

    #[inline(always)]
    pub fn turn(&self) -> Color {
        self.turn
    }

    #[inline(always)]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.board[sq.index()]
    }

    #[inline(always)]
    pub fn role_at(&self, sq: Square) -> Option<Role> {
        self.board[sq.index()].map(|p| p.role)
    }

    #[inline(always)]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }

    #[inline(always)]
    pub fn by_color(&self, c: Color) -> Bitboard {
        self.by_color[c.index()]
    }

    #[inline(always)]
    pub fn by_role(&self, r: Role) -> Bitboard {
        self.by_role[r.index()]
    }

    #[inline(always)]
    pub fn pieces(&self, c: Color, r: Role) -> Bitboard {
        self.by_color[c.index()] & self.by_role[r.index()]
    }

    #[inline(always)]
    pub fn king(&self, c: Color) -> Square {
        // Every Position has exactly one king per side (checked on parse).
        self.pieces(c, Role::King).lsb()
    }

    #[inline(always)]
    pub fn checkers(&self) -> Bitboard {
        self.checkers
    }

    #[inline(always)]
    pub fn in_check(&self) -> bool {
        self.checkers.any()
    }

    /// Zobrist key (Polyglot-compatible, see `zobrist`).
    #[inline(always)]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// Zobrist key of the pawns only.
    #[inline(always)]
    pub fn pawn_key(&self) -> u64 {
        self.pawn_key
    }

    #[inline(always)]
    pub fn ep_square(&self) -> Option<Square> {
        self.ep_square
    }

    /// Plies since the last capture or pawn move.
    #[inline(always)]
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove
    }

    #[inline(always)]
    pub fn fullmove_number(&self) -> u32 {
        self.fullmove
    }

    /// The rooks that still carry a castling right.
    #[inline(always)]
    pub fn castle_rooks(&self) -> Bitboard {
        self.castle_rooks
    }

    /// The rook square of `color`'s castling right on `side`, if any.
    pub fn castle_rook(&self, color: Color, side: CastleSide) -> Option<Square> {
        let king = self.king(color);
        (self.castle_rooks & self.by_color(color))
            .into_iter()
            .find(|r| (r.file() > king.file()) == (side == CastleSide::King))
    }

    /// Castling rights as a 4-bit set: 1 = White king side, 2 = White queen
    /// side, 4 = Black king side, 8 = Black queen side.
    pub fn castling_rights(&self) -> u8 {
        let mut rights = 0;
        for color in Color::ALL {
            let rooks = self.castle_rooks & self.by_color(color);
            if rooks.is_empty() {
                continue;
            }
            let king = self.king(color);
            for rook in rooks {
                let bit = if rook.file() > king.file() { 1 } else { 2 };
                rights |= bit << (2 * color.index());
            }
        }
        rights
    }

    /// Whether some castling right is not one of standard chess's (king on
    /// the e-file, rook in the a- or h-file corner): such a position only
    /// castles the Chess960 way, and its castling moves are written
    /// king-takes-rook (`e1f1` with the rook on f1), as Lichess expects in
    /// a "from position" game set up like this.
    pub fn has_chess960_castling(&self) -> bool {
        Color::ALL.into_iter().any(|color| {
            let rooks = self.castle_rooks & self.by_color(color);
            rooks.any()
                && (self.king(color).file() != 4
                    || rooks.into_iter().any(|r| !matches!(r.file(), 0 | 7)))
        })
    }

    /// A hash of where `color`'s pieces other than pawns stand (king
    /// included), for the search's non-pawn correction history. Computed
    /// from the bitboards on demand, not kept up to date move by move.
    #[inline]
    pub fn non_pawn_key(&self, color: Color) -> u64 {
        // MurmurHash3's finalizer after each bitboard: every bit of the
        // input reaches every bit of the key, the low ones included.
        fn mix(mut h: u64) -> u64 {
            h ^= h >> 33;
            h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
            h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
            h ^ (h >> 33)
        }
        let mut h = color.index() as u64;
        for role in [
            Role::Knight,
            Role::Bishop,
            Role::Rook,
            Role::Queen,
            Role::King,
        ] {
            h = mix(h ^ self.pieces(color, role).0);
        }
        h
    }

    /// Non-pawn, non-king material of `color` exists (null-move safety).
    #[inline]
    pub fn has_non_pawn_material(&self, color: Color) -> bool {
        (self.by_color(color) & !(self.by_role(Role::Pawn) | self.by_role(Role::King))).any()
    }

    // ---- Attacks ---------------------------------------------------------

    /// Pieces of both colours attacking `sq`, given an occupancy.
    #[inline]
    pub fn attackers_to(&self, sq: Square, occupied: Bitboard) -> Bitboard {
        let rooks = self.by_role(Role::Rook) | self.by_role(Role::Queen);
        let bishops = self.by_role(Role::Bishop) | self.by_role(Role::Queen);
        (pawn_attacks(Color::White, sq) & self.pieces(Color::Black, Role::Pawn))
            | (pawn_attacks(Color::Black, sq) & self.pieces(Color::White, Role::Pawn))
            | (knight_attacks(sq) & self.by_role(Role::Knight))
            | (king_attacks(sq) & self.by_role(Role::King))
            | (rook_attacks(sq, occupied) & rooks)
            | (bishop_attacks(sq, occupied) & bishops)
    }

    /// Every square `color` attacks on this board.
    #[inline]
    pub fn attacks_by(&self, color: Color) -> Bitboard {
        let occupied = self.occupied();
        let of = |role| self.pieces(color, role);
        let queens = of(Role::Queen);
        let mut bb = pawn_attacks_set(color, of(Role::Pawn));
        for sq in of(Role::Knight) {
            bb |= knight_attacks(sq);
        }
        for sq in of(Role::Bishop) | queens {
            bb |= bishop_attacks(sq, occupied);
        }
        for sq in of(Role::Rook) | queens {
            bb |= rook_attacks(sq, occupied);
        }
        for sq in of(Role::King) {
            bb |= king_attacks(sq);
        }
        bb
    }

    /// Whether `by` attacks `sq`, given an occupancy.
    #[inline]
    pub fn is_attacked(&self, sq: Square, by: Color, occupied: Bitboard) -> bool {
        let them = self.by_color(by);
        let rooks = (self.by_role(Role::Rook) | self.by_role(Role::Queen)) & them;
        let bishops = (self.by_role(Role::Bishop) | self.by_role(Role::Queen)) & them;
        (pawn_attacks(!by, sq) & self.pieces(by, Role::Pawn)).any()
            || (knight_attacks(sq) & self.pieces(by, Role::Knight)).any()
            || (king_attacks(sq) & self.pieces(by, Role::King)).any()
            || (rook_attacks(sq, occupied) & rooks).any()
            || (bishop_attacks(sq, occupied) & bishops).any()
    }

    /// Pieces of either colour that alone stand between `color`'s king and
    /// an enemy slider: moving one may expose the king.
    #[inline]
    pub fn blockers(&self, color: Color) -> Bitboard {
        let king = self.king(color);
        let them = self.by_color(!color);
        let snipers = ((rook_attacks(king, Bitboard::EMPTY)
            & (self.by_role(Role::Rook) | self.by_role(Role::Queen)))
            | (bishop_attacks(king, Bitboard::EMPTY)
                & (self.by_role(Role::Bishop) | self.by_role(Role::Queen))))
            & them;
        let occupied = self.occupied();
        let mut blockers = Bitboard::EMPTY;
        for sniper in snipers {
            let b = between(king, sniper) & occupied;
            if b.any() && !b.more_than_one() {
                blockers |= b;
            }
        }
        blockers
    }

    /// `color`'s own pieces pinned to its king.
    #[inline]
    pub fn pinned(&self, color: Color) -> Bitboard {
        self.blockers(color) & self.by_color(color)
    }

    // ---- Board edits (keep every derived field in step) -----------------

    #[inline(always)]
    pub(crate) fn put(&mut self, sq: Square, piece: Piece) {
        let bb = Bitboard::from_square(sq);
        self.by_role[piece.role.index()] |= bb;
        self.by_color[piece.color.index()] |= bb;
        self.board[sq.index()] = Some(piece);
        self.key ^= zobrist::piece(piece, sq);
        if piece.role == Role::Pawn {
            self.pawn_key ^= zobrist::piece(piece, sq);
        }
    }

    #[inline(always)]
    pub(crate) fn remove(&mut self, sq: Square, piece: Piece) {
        let bb = Bitboard::from_square(sq);
        self.by_role[piece.role.index()] ^= bb;
        self.by_color[piece.color.index()] ^= bb;
        self.board[sq.index()] = None;
        self.key ^= zobrist::piece(piece, sq);
        if piece.role == Role::Pawn {
            self.pawn_key ^= zobrist::piece(piece, sq);
        }
    }

    /// Recomputes the key from scratch (tests compare it with the
    /// incremental one).
    pub fn compute_key(&self) -> u64 {
        let mut key = 0;
        for sq in self.occupied() {
            if let Some(p) = self.piece_at(sq) {
                key ^= zobrist::piece(p, sq);
            }
        }
        key ^= zobrist::castling(self.castling_rights());
        if let Some(ep) = self.ep_square {
            key ^= zobrist::en_passant(ep.file());
        }
        if self.turn == Color::White {
            key ^= zobrist::WHITE_TO_MOVE;
        }
        key
    }

    pub(crate) fn compute_pawn_key(&self) -> u64 {
        self.by_role(Role::Pawn)
            .into_iter()
            .filter_map(|sq| self.piece_at(sq).map(|p| zobrist::piece(p, sq)))
            .fold(0, |a, k| a ^ k)
    }

    // ---- Making moves ----------------------------------------------------

    /// The position after `m`, which must be legal here (from this
    /// position's move generator, or checked with `is_legal`).
    #[inline]
    pub fn play(&self, m: Move) -> Position {
        let mut next = self.clone();
        next.play_unchecked(m);
        next
    }

    /// Plays `m` in place. `m` must be legal in this position.
    pub fn play_unchecked(&mut self, m: Move) {
        let us = self.turn;
        let them = !us;
        let from = m.from();
        let to = m.to();
        let Some(moving) = self.board[from.index()] else {
            debug_assert!(false, "play_unchecked: no piece on {from}");
            return;
        };

        if let Some(ep) = self.ep_square.take() {
            self.key ^= zobrist::en_passant(ep.file());
        }
        self.halfmove += 1;

        // Castling rights die when the king moves or a rook leaves or is
        // captured on its square.
        let touched = Bitboard::from_square(from) | Bitboard::from_square(to);
        if self.castle_rooks.any()
            && ((self.castle_rooks & touched).any()
                || (moving.role == Role::King && (self.castle_rooks & self.by_color(us)).any()))
        {
            let before = self.castling_rights();
            self.castle_rooks &= !touched;
            if moving.role == Role::King {
                self.castle_rooks &= !self.by_color(us);
            }
            // Rights are computed from king squares; for the side whose
            // king moves, all rights are gone already, so the squares
            // after the move give the same answer.
            let after = self.castling_rights();
            self.key ^= zobrist::castling(before) ^ zobrist::castling(after);
        }

        match m.kind() {
            MoveKind::Castle => {
                let rook = Piece {
                    color: us,
                    role: Role::Rook,
                };
                let (king_to, rook_to) = castle_destinations(us, from, to);
                self.remove(from, moving);
                self.remove(to, rook);
                self.put(king_to, moving);
                self.put(rook_to, rook);
            }
            MoveKind::EnPassant => {
                let captured_sq = Square::from_coords(to.file(), from.rank());
                self.remove(
                    captured_sq,
                    Piece {
                        color: them,
                        role: Role::Pawn,
                    },
                );
                self.remove(from, moving);
                self.put(to, moving);
                self.halfmove = 0;
            }
            kind => {
                if let Some(captured) = self.board[to.index()] {
                    self.remove(to, captured);
                    self.halfmove = 0;
                }
                self.remove(from, moving);
                let placed = match kind {
                    MoveKind::Promotion(role) => Piece { color: us, role },
                    _ => moving,
                };
                self.put(to, placed);
                if moving.role == Role::Pawn {
                    self.halfmove = 0;
                    if from.index().abs_diff(to.index()) == 16 {
                        let ep = Square::new(((from.index() + to.index()) / 2) as u8);
                        // Only worth a look if an enemy pawn attacks it.
                        if (pawn_attacks(us, ep) & self.pieces(them, Role::Pawn)).any() {
                            self.ep_square = Some(ep);
                        }
                    }
                }
            }
        }

        self.turn = them;
        self.key ^= zobrist::WHITE_TO_MOVE;
        if us == Color::Black {
            self.fullmove += 1;
        }
        self.checkers = self.attackers_to(self.king(them), self.occupied()) & self.by_color(us);
        if let Some(ep) = self.ep_square {
            if self.has_legal_ep_capture(ep) {
                self.key ^= zobrist::en_passant(ep.file());
            } else {
                self.ep_square = None;
            }
        }
    }

    /// Passes the turn (null move, for the search). Must not be called in
    /// check.
    pub fn play_null(&self) -> Position {
        let mut next = self.clone();
        if let Some(ep) = next.ep_square.take() {
            next.key ^= zobrist::en_passant(ep.file());
        }
        next.turn = !self.turn;
        next.key ^= zobrist::WHITE_TO_MOVE;
        next.halfmove += 1;
        next.checkers = Bitboard::EMPTY;
        next
    }

    /// Any pawn of the side to move can legally capture en passant on `ep`.
    pub(crate) fn has_legal_ep_capture(&self, ep: Square) -> bool {
        let us = self.turn;
        (pawn_attacks(!us, ep) & self.pieces(us, Role::Pawn))
            .into_iter()
            .any(|from| self.ep_capture_is_legal(from, ep))
    }

    /// Whether the en-passant capture `from`x`ep` leaves the king safe.
    #[inline]
    pub(crate) fn ep_capture_is_legal(&self, from: Square, ep: Square) -> bool {
        let us = self.turn;
        let them = !us;
        let captured = Square::from_coords(ep.file(), from.rank());
        let king = self.king(us);
        // A knight's or another pawn's check is not answered by this capture.
        let other_checkers = self.checkers
            & !Bitboard::from_square(captured)
            & (self.by_role(Role::Knight) | self.by_role(Role::Pawn));
        if other_checkers.any() {
            return false;
        }
        let occ = (self.occupied() ^ Bitboard::from_square(from) ^ Bitboard::from_square(captured))
            | Bitboard::from_square(ep);
        let rooks = (self.by_role(Role::Rook) | self.by_role(Role::Queen)) & self.by_color(them);
        let bishops =
            (self.by_role(Role::Bishop) | self.by_role(Role::Queen)) & self.by_color(them);
        (rook_attacks(king, occ) & rooks).is_empty()
            && (bishop_attacks(king, occ) & bishops).is_empty()
    }

    /// Whether castling with the rook on `rook` is legal now (rights, empty
    /// path, king not in, through or into check).
    pub(crate) fn castle_is_legal(&self, rook: Square) -> bool {
        let us = self.turn;
        if self.in_check() || !(self.castle_rooks & self.pieces(us, Role::Rook)).contains(rook) {
            return false;
        }
        let king = self.king(us);
        let (king_to, rook_to) = castle_destinations(us, king, rook);
        let occ = self.occupied() ^ Bitboard::from_square(king) ^ Bitboard::from_square(rook);
        let king_path = between(king, king_to) | Bitboard::from_square(king_to);
        let must_be_empty = king_path | between(rook, rook_to) | Bitboard::from_square(rook_to);
        if (must_be_empty & occ).any() {
            return false;
        }
        // The castling rook leaves the back rank too, so test with it gone:
        // in Chess960 it may be what shields the king's destination.
        king_path
            .into_iter()
            .all(|sq| !self.is_attacked(sq, !us, occ))
    }

    /// Whether `m` is a legal move here. Cheap enough for checking moves
    /// from the transposition table or killer slots.
    pub fn is_legal(&self, m: Move) -> bool {
        let us = self.turn;
        let from = m.from();
        let to = m.to();
        let Some(piece) = self.piece_at(from) else {
            return false;
        };
        if piece.color != us || m.is_none() {
            return false;
        }
        let ours = self.by_color(us);
        let occ = self.occupied();
        let last_rank = Bitboard::rank(us.relative_last_rank());
        match m.kind() {
            MoveKind::Castle => {
                return piece.role == Role::King
                    && from.rank() == us.back_rank()
                    && self.castle_is_legal(to);
            }
            MoveKind::EnPassant => {
                return piece.role == Role::Pawn
                    && self.ep_square == Some(to)
                    && pawn_attacks(us, from).contains(to)
                    && self.ep_capture_is_legal(from, to);
            }
            kind => {
                if ours.contains(to) {
                    return false;
                }
                let is_promo = matches!(kind, MoveKind::Promotion(_));
                if let MoveKind::Promotion(r) = kind
                    && matches!(r, Role::Pawn | Role::King)
                {
                    return false;
                }
                if piece.role == Role::Pawn {
                    if is_promo != last_rank.contains(to) {
                        return false;
                    }
                    let them = self.by_color(!us);
                    let push = from.forward(us);
                    let ok = (pawn_attacks(us, from) & them).contains(to)
                        || (push == Some(to) && !occ.contains(to))
                        || (push.is_some_and(|p| !occ.contains(p))
                            && from.rank() == us.relative_rank(1)
                            && push.and_then(|p| p.forward(us)) == Some(to)
                            && !occ.contains(to));
                    if !ok {
                        return false;
                    }
                } else {
                    if is_promo {
                        return false;
                    }
                    let att = super::attacks::attacks(piece.role, us, from, occ);
                    if !att.contains(to) {
                        return false;
                    }
                }
            }
        }
        // Legality proper: the king must not stand attacked afterwards.
        let king = self.king(us);
        if piece.role == Role::King {
            return !self.is_attacked(to, !us, occ ^ Bitboard::from_square(from));
        }
        if self.checkers.more_than_one() {
            return false;
        }
        if let Some(checker) = self.checkers.first()
            && !(between(king, checker) | self.checkers).contains(to)
        {
            return false;
        }
        !self.pinned(us).contains(from) || line(king, from).contains(to)
    }
}

impl Color {
    /// The rank, 0-based, that is `n` ranks from this side's back rank.
    #[inline(always)]
    pub fn relative_rank(self, n: u8) -> u8 {
        match self {
            Color::White => n,
            Color::Black => 7 - n,
        }
    }

    /// The promotion rank of this side's pawns.
    #[inline(always)]
    pub fn relative_last_rank(self) -> u8 {
        self.relative_rank(7)
    }
}

impl std::hash::Hash for Position {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attacks_by_agrees_with_is_attacked_on_every_square() {
        for fen in [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        ] {
            let pos = Position::from_fen(fen).unwrap();
            for color in [Color::White, Color::Black] {
                let attacked = pos.attacks_by(color);
                for i in 0..64 {
                    let sq = Square::new(i);
                    assert_eq!(
                        attacked.contains(sq),
                        pos.is_attacked(sq, color, pos.occupied()),
                        "{fen}: {color:?} on {sq:?}"
                    );
                }
            }
        }
    }
}
