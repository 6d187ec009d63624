//! Game status: checkmate, stalemate, the 50-move rule, threefold
//! repetition against a history of keys, insufficient material.

use super::bitboard::Bitboard;
use super::position::Position;
use super::types::{Color, Role};

/// How a game has ended.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum Outcome {
    Checkmate { winner: Color },
    Stalemate,
    InsufficientMaterial,
    FiftyMoves,
    Repetition,
}

impl Outcome {
    pub fn winner(self) -> Option<Color> {
        match self {
            Outcome::Checkmate { winner } => Some(winner),
            _ => None,
        }
    }

    /// The PGN result string.
    pub fn result(self) -> &'static str {
        match self.winner() {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        }
    }
}

impl Position {
    /// The side to move is checkmated.
    pub fn is_checkmate(&self) -> bool {
        self.in_check() && !self.has_legal_move()
    }

    pub fn is_stalemate(&self) -> bool {
        !self.in_check() && !self.has_legal_move()
    }

    /// Whether `color` cannot possibly deliver mate (Lichess's rule: a
    /// lone king; king and knight against king and at most queens; king
    /// and bishops on one colour with no knights or pawns on the board).
    pub fn has_insufficient_material(&self, color: Color) -> bool {
        let ours = self.by_color(color);
        let heavy = self.by_role(Role::Pawn) | self.by_role(Role::Rook) | self.by_role(Role::Queen);
        if (ours & heavy).any() {
            return false;
        }
        if (ours & self.by_role(Role::Knight)).any() {
            return ours.count() <= 2
                && (self.by_color(!color)
                    & !self.by_role(Role::King)
                    & !self.by_role(Role::Queen))
                .is_empty();
        }
        let bishops = self.by_role(Role::Bishop);
        if (ours & bishops).any() {
            let one_colour = (bishops & Bitboard::DARK_SQUARES).is_empty()
                || (bishops & Bitboard::LIGHT_SQUARES).is_empty();
            return one_colour
                && self.by_role(Role::Pawn).is_empty()
                && self.by_role(Role::Knight).is_empty();
        }
        true
    }

    /// Neither side can mate.
    pub fn is_insufficient_material(&self) -> bool {
        self.has_insufficient_material(Color::White) && self.has_insufficient_material(Color::Black)
    }

    /// How many times this position occurred before, according to
    /// `history`: the keys of the game's earlier positions, oldest first,
    /// the last one being the position just before this one. Only
    /// positions since the last capture or pawn move can repeat.
    pub fn repetitions(&self, history: &[u64]) -> usize {
        let window = (self.halfmove_clock() as usize).min(history.len());
        history[history.len() - window..]
            .iter()
            .rev()
            .skip(1)
            .step_by(2)
            .filter(|&&k| k == self.key())
            .count()
    }

    /// The game's outcome if it is over, with the game's key `history`
    /// (see `repetitions`) for threefold repetition. Checkmate wins over
    /// the 50-move rule, as in the laws of chess.
    pub fn outcome(&self, history: &[u64]) -> Option<Outcome> {
        if !self.has_legal_move() {
            return Some(if self.in_check() {
                Outcome::Checkmate {
                    winner: !self.turn(),
                }
            } else {
                Outcome::Stalemate
            });
        }
        if self.is_insufficient_material() {
            return Some(Outcome::InsufficientMaterial);
        }
        if self.halfmove_clock() >= 100 {
            return Some(Outcome::FiftyMoves);
        }
        if self.repetitions(history) >= 2 {
            return Some(Outcome::Repetition);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play(pos: &Position, moves: &str, history: &mut Vec<u64>) -> Position {
        let mut p = pos.clone();
        for m in moves.split_whitespace() {
            history.push(p.key());
            let mv = p.parse_uci(m, false).unwrap();
            p = p.play(mv);
        }
        p
    }

    #[test]
    fn threefold_needs_three_occurrences() {
        let start = Position::startpos();
        let mut h = Vec::new();
        let p = play(&start, "g1f3 g8f6 f3g1 f6g8", &mut h);
        assert_eq!(p.repetitions(&h), 1);
        assert_eq!(p.outcome(&h), None);
        let p = play(&p, "g1f3 g8f6 f3g1 f6g8", &mut h);
        assert_eq!(p.repetitions(&h), 2);
        assert_eq!(p.outcome(&h), Some(Outcome::Repetition));
    }

    #[test]
    fn mate_stalemate_fifty_and_material() {
        let mate = Position::from_fen("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1").unwrap();
        assert_eq!(
            mate.outcome(&[]),
            Some(Outcome::Checkmate {
                winner: Color::White
            })
        );
        let stale = Position::from_fen("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1").unwrap();
        assert_eq!(stale.outcome(&[]), Some(Outcome::Stalemate));
        let fifty = Position::from_fen("7k/8/6K1/8/8/8/8/R7 b - - 100 80").unwrap();
        assert_eq!(fifty.outcome(&[]), Some(Outcome::FiftyMoves));
        let mated_at_fifty = Position::from_fen("R5k1/5ppp/8/8/8/8/8/6K1 b - - 100 80").unwrap();
        assert_eq!(
            mated_at_fifty.outcome(&[]).and_then(Outcome::winner),
            Some(Color::White)
        );
        for fen in [
            "8/8/4k3/8/8/3K4/8/8 w - - 0 1",
            "8/8/4k3/8/8/3KN3/8/8 w - - 0 1",
            "8/8/4k3/8/8/3KB3/8/8 w - - 0 1",
            "8/4b3/4k3/8/8/3KB3/8/8 w - - 0 1",
        ] {
            let p = Position::from_fen(fen).unwrap();
            assert_eq!(p.outcome(&[]), Some(Outcome::InsufficientMaterial), "{fen}");
        }
        for fen in [
            "8/8/4k3/8/8/3KNN2/8/8 w - - 0 1",
            "8/3b4/4k3/8/8/3KB3/8/8 w - - 0 1",
            "8/8/4k3/8/8/3K4/4P3/8 w - - 0 1",
        ] {
            let p = Position::from_fen(fen).unwrap();
            assert_eq!(p.outcome(&[]), None, "{fen}");
        }
    }
}
