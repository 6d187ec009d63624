//! Move notation: UCI (long algebraic, with both castling conventions)
//! and SAN (for PGN and chat).

use super::moves::{Move, MoveKind};
use super::position::{CastleSide, Position};
use super::types::{Role, Square};
use std::fmt::Write as _;

/// A UCI move string that does not name a legal move.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UciMoveError {
    #[error("malformed UCI move {0:?}")]
    Syntax(String),
    #[error("illegal move {0} in this position")]
    Illegal(String),
}

/// A SAN string that does not name a legal move.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no legal move matches SAN {0:?}")]
pub struct SanError(pub String);

fn clip(s: &str) -> String {
    s.chars().take(16).collect()
}

impl Move {
    /// UCI notation. Castling is `e1g1` unless `chess960`, where it is
    /// written king-takes-rook (`e1h1`).
    pub fn to_uci(self, chess960: bool) -> String {
        let mut out = String::with_capacity(5);
        match self.kind() {
            _ if self.is_none() => out.push_str("0000"),
            MoveKind::Castle if !chess960 => {
                let side = if self.to().file() > self.from().file() {
                    CastleSide::King
                } else {
                    CastleSide::Queen
                };
                let to = Square::from_coords(side.destination_files().0, self.from().rank());
                let _ = write!(out, "{}{}", self.from(), to);
            }
            MoveKind::Promotion(r) => {
                let _ = write!(out, "{}{}{}", self.from(), self.to(), r.char());
            }
            _ => {
                let _ = write!(out, "{}{}", self.from(), self.to());
            }
        }
        out
    }
}

impl Position {
    /// Parses a UCI move and checks that it is legal here. Castling is
    /// accepted as king-takes-rook always, and also as the king's two-step
    /// (`e1g1`) unless `chess960`.
    pub fn parse_uci(&self, s: &str, chess960: bool) -> Result<Move, UciMoveError> {
        let b = s.as_bytes();
        if !(4..=5).contains(&b.len()) || !s.is_ascii() {
            return Err(UciMoveError::Syntax(clip(s)));
        }
        let from: Square = s[0..2].parse().map_err(|_| UciMoveError::Syntax(clip(s)))?;
        let to: Square = s[2..4].parse().map_err(|_| UciMoveError::Syntax(clip(s)))?;
        let promotion = match b.get(4) {
            None => None,
            Some(&c) => match Role::from_char(c as char) {
                Some(r @ (Role::Knight | Role::Bishop | Role::Rook | Role::Queen))
                    if c.is_ascii_lowercase() =>
                {
                    Some(r)
                }
                _ => return Err(UciMoveError::Syntax(clip(s))),
            },
        };
        let found = self.legal_moves().iter().copied().find(|m| {
            if m.from() != from || m.promotion_role() != promotion {
                return false;
            }
            if m.is_castle() {
                m.to() == to || (!chess960 && m.to_uci(false)[2..4] == s[2..4])
            } else {
                m.to() == to
            }
        });
        found.ok_or_else(|| UciMoveError::Illegal(clip(s)))
    }

    /// Standard algebraic notation of the legal move `m`, with `+`/`#`.
    pub fn san(&self, m: Move) -> String {
        let mut out = self.san_without_suffix(m);
        let after = self.play(m);
        if after.in_check() {
            out.push(if after.has_legal_move() { '+' } else { '#' });
        }
        out
    }

    fn san_without_suffix(&self, m: Move) -> String {
        let from = m.from();
        let to = m.to();
        if m.is_castle() {
            return if to.file() > from.file() {
                "O-O"
            } else {
                "O-O-O"
            }
            .to_string();
        }
        let role = self.role_at(from).unwrap_or(Role::Pawn);
        let capture = m.is_en_passant() || self.piece_at(to).is_some();
        let mut out = String::with_capacity(8);
        if role == Role::Pawn {
            if capture {
                out.push((b'a' + from.file()) as char);
            }
        } else {
            out.push(role.char().to_ascii_uppercase());
            let rivals: Vec<Square> = self
                .legal_moves()
                .iter()
                .filter(|o| {
                    !o.is_castle()
                        && o.to() == to
                        && o.from() != from
                        && self.role_at(o.from()) == Some(role)
                })
                .map(|o| o.from())
                .collect();
            if !rivals.is_empty() {
                let file_unique = rivals.iter().all(|r| r.file() != from.file());
                let rank_unique = rivals.iter().all(|r| r.rank() != from.rank());
                if file_unique {
                    out.push((b'a' + from.file()) as char);
                } else if rank_unique {
                    out.push((b'1' + from.rank()) as char);
                } else {
                    let _ = write!(out, "{from}");
                }
            }
        }
        if capture {
            out.push('x');
        }
        let _ = write!(out, "{to}");
        if let Some(r) = m.promotion_role() {
            out.push('=');
            out.push(r.char().to_ascii_uppercase());
        }
        out
    }

    /// Parses SAN (`Nf3`, `exd5`, `e8=Q+`, `O-O`); check marks and
    /// annotations (`+`, `#`, `!`, `?`) are optional.
    pub fn parse_san(&self, s: &str) -> Result<Move, SanError> {
        let core = s
            .trim()
            .trim_end_matches(['+', '#', '!', '?'])
            .replace('0', "O");
        self.legal_moves()
            .iter()
            .copied()
            .find(|&m| self.san_without_suffix(m) == core)
            .ok_or_else(|| SanError(clip(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uci_castling_both_forms_in_standard_chess() {
        let pos = Position::from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1").unwrap();
        let a = pos.parse_uci("e1g1", false).unwrap();
        let b = pos.parse_uci("e1h1", false).unwrap();
        assert_eq!(a, b);
        assert!(a.is_castle());
        assert_eq!(a.to_uci(false), "e1g1");
        assert_eq!(a.to_uci(true), "e1h1");
        assert_eq!(pos.parse_uci("e1c1", false).unwrap().to_uci(true), "e1a1");
        // In Chess960 mode only king-takes-rook names castling.
        assert!(pos.parse_uci("e1g1", true).is_err());
        assert!(pos.parse_uci("e1h1", true).unwrap().is_castle());
    }

    #[test]
    fn uci_errors() {
        let pos = Position::startpos();
        for s in ["", "e2", "e2e9", "e2e4qq", "e7e8k", "e2e4Q", "ééé", "0000"] {
            assert!(
                matches!(pos.parse_uci(s, false), Err(UciMoveError::Syntax(_))),
                "{s}"
            );
        }
        for s in ["e2e5", "e1e2", "a7a8q", "e2e4q"] {
            assert!(
                matches!(pos.parse_uci(s, false), Err(UciMoveError::Illegal(_))),
                "{s}"
            );
        }
    }

    #[test]
    fn san_disambiguation_and_suffixes() {
        let pos = Position::from_fen("r3k2r/8/8/8/8/2N3N1/8/R3K2R w KQkq - 0 1").unwrap();
        let m = pos.parse_uci("c3e4", false).unwrap();
        assert_eq!(pos.san(m), "Nce4");
        let m = pos.parse_uci("a1a8", false).unwrap();
        assert_eq!(pos.san(m), "Rxa8+");
        let m = pos.parse_uci("e1c1", false).unwrap();
        assert_eq!(pos.san(m), "O-O-O");
        let mate = Position::from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1").unwrap();
        let m = mate.parse_uci("a1a8", false).unwrap();
        assert_eq!(mate.san(m), "Ra8#");
        let promo = Position::from_fen("1n5k/P7/8/8/8/8/8/7K w - - 0 1").unwrap();
        let m = promo.parse_uci("a7b8n", false).unwrap();
        assert_eq!(promo.san(m), "axb8=N");
        assert_eq!(promo.parse_san("axb8=N").unwrap(), m);
        let files = Position::from_fen("7k/8/8/8/8/8/8/R3R2K w - - 0 1").unwrap();
        assert_eq!(files.san(files.parse_uci("a1c1", false).unwrap()), "Rac1");
        let ranks = Position::from_fen("7k/8/8/8/R7/8/8/R6K w - - 0 1").unwrap();
        assert_eq!(ranks.san(ranks.parse_uci("a1a2", false).unwrap()), "R1a2");
    }
}
