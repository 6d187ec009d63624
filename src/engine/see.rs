//! Static exchange evaluation: the material balance of the capture
//! sequence on one square when both sides always recapture with their
//! least valuable attacker and may stop when it stops paying. X-rays are
//! found by recomputing slider attacks as pieces leave the occupancy.

use crate::chess::{Bitboard, Color, Move, MoveKind, Position, Role, bishop_attacks, rook_attacks};

/// Exchange values (pawn = 100). The king's is large so that "capturing"
/// with it into a defended square is never judged good.
pub const SEE_VALUE: [i32; 6] = [100, 320, 330, 500, 950, 20_000];

#[inline(always)]
fn value(role: Role) -> i32 {
    SEE_VALUE[role.index()]
}

/// Whether the exchange started by `m` gains at least `threshold`
/// (for the side making `m`). Castling counts as 0.
pub fn see_ge(pos: &Position, m: Move, threshold: i32) -> bool {
    if m.is_castle() {
        return 0 >= threshold;
    }
    let from = m.from();
    let to = m.to();
    let us = pos.turn();
    let Some(mover) = pos.role_at(from) else {
        return false;
    };

    // What the first capture wins, and what stands on the square after it.
    let mut gain = match m.kind() {
        MoveKind::EnPassant => value(Role::Pawn),
        _ => pos.role_at(to).map_or(0, value),
    };
    let mut on_square = mover;
    if let MoveKind::Promotion(r) = m.kind() {
        gain += value(r) - value(Role::Pawn);
        on_square = r;
    }

    // Balance after the first move; if even losing the moved piece for
    // nothing keeps us above the threshold, it is good already.
    let mut balance = gain - threshold;
    if balance < 0 {
        return false;
    }
    balance -= value(on_square);
    if balance >= 0 {
        return true;
    }

    let mut occupied = pos.occupied() ^ Bitboard::from_square(from) | Bitboard::from_square(to);
    if m.is_en_passant() {
        occupied ^=
            Bitboard::from_square(crate::chess::Square::from_coords(to.file(), from.rank()));
    }
    let mut attackers = pos.attackers_to(to, occupied) & occupied;
    let diagonal = pos.by_role(Role::Bishop) | pos.by_role(Role::Queen);
    let straight = pos.by_role(Role::Rook) | pos.by_role(Role::Queen);
    let mut side = !us;

    // Pinned pieces may not recapture while their pinner is still there.
    let pinned_w = pos.pinned(Color::White);
    let pinned_b = pos.pinned(Color::Black);

    loop {
        let mut mine = attackers & pos.by_color(side);
        let pinned = if side == Color::White {
            pinned_w
        } else {
            pinned_b
        };
        if (pinned & mine).any() {
            let king = pos.king(side);
            let pinners = (rook_attacks(king, Bitboard::EMPTY) & straight
                | bishop_attacks(king, Bitboard::EMPTY) & diagonal)
                & pos.by_color(!side)
                & occupied;
            if pinners.any() {
                mine &= !pinned;
            }
        }
        if mine.is_empty() {
            break;
        }
        // Recapture with the least valuable attacker.
        let Some(role) = Role::ALL
            .into_iter()
            .find(|&r| (mine & pos.by_role(r)).any())
        else {
            break;
        };
        occupied ^= Bitboard::from_square((mine & pos.by_role(role)).lsb());
        // Sliders behind the piece that just left join in (x-rays).
        if matches!(role, Role::Pawn | Role::Bishop | Role::Queen) {
            attackers |= bishop_attacks(to, occupied) & diagonal;
        }
        if matches!(role, Role::Rook | Role::Queen) {
            attackers |= rook_attacks(to, occupied) & straight;
        }
        attackers &= occupied;
        side = !side;
        // Negamax step: the balance from the new side's view, having
        // given up `role` on the square.
        balance = -balance - 1 - value(role);
        if balance >= 0 {
            // A king may not recapture into a square still attacked.
            if role == Role::King && (attackers & pos.by_color(side)).any() {
                side = !side;
            }
            break;
        }
    }
    // The side to move when the exchange ended has lost it.
    side != us
}

/// The exchange value itself (for tests and diagnostics), found by
/// bisection over `see_ge`.
pub fn see(pos: &Position, m: Move) -> i32 {
    let (mut lo, mut hi) = (-4_000, 4_000);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if see_ge(pos, m, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn see_of(fen: &str, uci: &str) -> i32 {
        let pos = Position::from_fen(fen).unwrap();
        let m = pos.parse_uci(uci, false).unwrap();
        see(&pos, m)
    }

    #[test]
    fn known_exchanges() {
        // Pawn takes an undefended knight.
        assert_eq!(see_of("4k3/8/8/3n4/4P3/8/8/4K3 w - - 0 1", "e4d5"), 320);
        // Rook takes an undefended pawn (CPW's first example).
        assert_eq!(
            see_of("1k1r4/1pp4p/p7/4p3/8/P5P1/1PP4P/2K1R3 w - - 0 1", "e1e5"),
            100
        );
        // Knight takes a defended pawn and the exchange goes on (CPW).
        assert_eq!(
            see_of(
                "1k1r3q/1ppn3p/p4b2/4p3/8/P2N2P1/1PP1R1BP/2K1Q3 w - - 0 1",
                "d3e5"
            ),
            100 - 320
        );
        // X-ray: the second rook backs the first one up.
        assert_eq!(see_of("4k3/4r3/8/4p3/8/8/4R3/4RK2 w - - 0 1", "e2e5"), 100);
        // Quiet move to an attacked square loses the piece.
        assert_eq!(see_of("4k3/8/8/8/3p4/8/8/2N1K3 w - - 0 1", "c1e2"), 0);
        assert_eq!(see_of("4k3/8/8/3p4/8/8/8/2N1K3 w - - 0 1", "c1b3"), 0);
        assert_eq!(see_of("4k3/8/8/3p4/8/3N4/8/4K3 w - - 0 1", "d3c5"), 0);
        assert_eq!(see_of("4k3/8/3p4/8/8/3N4/8/4K3 w - - 0 1", "d3c5"), -320);
        // En passant wins a pawn.
        assert_eq!(see_of("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1", "e5d6"), 100);
        // Unguarded promotion to a queen.
        assert_eq!(see_of("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", "b7b8q"), 850);
    }
}
