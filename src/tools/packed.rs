//! The training record: one position in 32 bytes, as `kaissa datagen`
//! writes it and `kaissa train` / `kaissa tune` read it.
//!
//! Layout (little-endian):
//!
//! | bytes  | field                                                        |
//! |--------|--------------------------------------------------------------|
//! | 0..8   | occupancy, bit i = square i (a1 = 0, h8 = 63)                |
//! | 8..24  | a 4-bit code per occupied square, ascending: role \| 8 if black |
//! | 24..26 | search score, centipawns, White's view (i16)                 |
//! | 26     | result: 0 Black won, 1 draw, 2 White won                     |
//! | 27     | side to move: 0 White, 1 Black                               |
//! | 28..32 | game number within the file (u32)                            |
//!
//! The positions of one game are contiguous and in move order, so a
//! reader can split data by game. Castling rights, the en-passant square
//! and the clocks are not kept: the evaluation does not see them.

use crate::chess::{Bitboard, Color, Piece, Position, Role, Square};
use std::fmt;

/// Size of one record in bytes.
pub const RECORD_BYTES: usize = 32;

/// A game result from White's view, as stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GameResult {
    BlackWon = 0,
    Draw = 1,
    WhiteWon = 2,
}

impl GameResult {
    /// White's score: 0, 0.5 or 1.
    pub fn white_score(self) -> f32 {
        self as u8 as f32 / 2.0
    }
}

/// One training position.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct PackedBoard {
    pub occupied: u64,
    pub pieces: [u8; 16],
    /// Search score in centipawns from White's view.
    pub score: i16,
    pub result: GameResult,
    pub stm: Color,
    pub game: u32,
}

/// Why bytes are not a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("more than 32 pieces")]
    TooManyPieces,
    #[error("bad piece code {0}")]
    BadPiece(u8),
    #[error("bad result byte {0}")]
    BadResult(u8),
    #[error("bad side-to-move byte {0}")]
    BadSide(u8),
    #[error("unused piece codes are not zero")]
    Padding,
}

impl PackedBoard {
    /// Packs `pos`. A legal position has at most 32 pieces, so this never
    /// truncates.
    pub fn from_position(pos: &Position, score_white: i16, result: GameResult, game: u32) -> Self {
        let occupied = pos.occupied();
        let mut pieces = [0u8; 16];
        for (k, sq) in occupied.into_iter().take(32).enumerate() {
            let p = pos.piece_at(sq).expect("occupied square has a piece");
            let code = p.role as u8 | if p.color == Color::Black { 8 } else { 0 };
            pieces[k / 2] |= code << (4 * (k % 2));
        }
        PackedBoard {
            occupied: occupied.0,
            pieces,
            score: score_white,
            result,
            stm: pos.turn(),
            game,
        }
    }

    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..8].copy_from_slice(&self.occupied.to_le_bytes());
        b[8..24].copy_from_slice(&self.pieces);
        b[24..26].copy_from_slice(&self.score.to_le_bytes());
        b[26] = self.result as u8;
        b[27] = self.stm as u8;
        b[28..32].copy_from_slice(&self.game.to_le_bytes());
        b
    }

    /// Reads a record, checking every field.
    pub fn from_bytes(b: &[u8; RECORD_BYTES]) -> Result<Self, RecordError> {
        let occupied = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
        let n = occupied.count_ones() as usize;
        if n > 32 {
            return Err(RecordError::TooManyPieces);
        }
        let mut pieces = [0u8; 16];
        pieces.copy_from_slice(&b[8..24]);
        for k in 0..32 {
            let code = (pieces[k / 2] >> (4 * (k % 2))) & 15;
            if k < n && (code & 7) > 5 {
                return Err(RecordError::BadPiece(code));
            }
            if k >= n && code != 0 {
                return Err(RecordError::Padding);
            }
        }
        let result = match b[26] {
            0 => GameResult::BlackWon,
            1 => GameResult::Draw,
            2 => GameResult::WhiteWon,
            x => return Err(RecordError::BadResult(x)),
        };
        let stm = match b[27] {
            0 => Color::White,
            1 => Color::Black,
            x => return Err(RecordError::BadSide(x)),
        };
        Ok(PackedBoard {
            occupied,
            pieces,
            score: i16::from_le_bytes([b[24], b[25]]),
            result,
            stm,
            game: u32::from_le_bytes(b[28..32].try_into().expect("4 bytes")),
        })
    }

    /// Every piece with its square, in ascending square order.
    pub fn pieces(&self) -> impl Iterator<Item = (Square, Piece)> + '_ {
        Bitboard(self.occupied)
            .into_iter()
            .enumerate()
            .map(|(k, sq)| {
                let code = (self.pieces[k / 2] >> (4 * (k % 2))) & 15;
                let color = if code & 8 != 0 {
                    Color::Black
                } else {
                    Color::White
                };
                (
                    sq,
                    Piece {
                        color,
                        role: Role::ALL[(code & 7) as usize % 6],
                    },
                )
            })
    }

    /// The side to move.
    pub fn side_to_move(&self) -> Color {
        self.stm
    }

    /// The position as a FEN without castling rights or en passant.
    pub fn to_fen(&self) -> String {
        let mut board = [None; 64];
        for (sq, p) in self.pieces() {
            board[sq.index()] = Some(p);
        }
        let mut fen = String::with_capacity(80);
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                match board[rank * 8 + file] {
                    Some(p) => {
                        if empty > 0 {
                            fen.push(char::from(b'0' + empty));
                            empty = 0;
                        }
                        fen.push(p.char());
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                fen.push(char::from(b'0' + empty));
            }
            if rank > 0 {
                fen.push('/');
            }
        }
        fen.push_str(if self.stm == Color::White {
            " w - - 0 1"
        } else {
            " b - - 0 1"
        });
        fen
    }

    /// The position (without castling rights), if the record is one.
    pub fn to_position(&self) -> Option<Position> {
        Position::from_fen(&self.to_fen()).ok()
    }
}

impl fmt::Debug for PackedBoard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} score {} result {:?} game {}",
            self.to_fen(),
            self.score,
            self.result,
            self.game
        )
    }
}

/// Reads every whole record of `bytes` (a trailing partial record is
/// ignored); records that fail to decode are counted, not returned.
pub fn read_records(bytes: &[u8]) -> (Vec<PackedBoard>, usize) {
    let mut out = Vec::with_capacity(bytes.len() / RECORD_BYTES);
    let mut bad = 0;
    for chunk in bytes.chunks_exact(RECORD_BYTES) {
        match PackedBoard::from_bytes(chunk.try_into().expect("32 bytes")) {
            Ok(r) => out.push(r),
            Err(_) => bad += 1,
        }
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::CastlingNotation;

    #[test]
    fn round_trips_positions() {
        let fens = [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b - - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
            "4k3/8/8/8/8/8/8/4K3 b - - 0 1",
        ];
        for (i, fen) in fens.iter().enumerate() {
            let pos = Position::from_fen(fen).unwrap();
            let rec = PackedBoard::from_position(&pos, -123, GameResult::Draw, i as u32);
            let back = PackedBoard::from_bytes(&rec.to_bytes()).unwrap();
            assert_eq!(back, rec);
            assert_eq!(back.to_fen(), *fen);
            let p = back.to_position().unwrap();
            assert_eq!(p.to_fen(CastlingNotation::XFen), *fen);
            assert_eq!(back.score, -123);
            assert_eq!(back.game, i as u32);
        }
    }

    #[test]
    fn rejects_bad_bytes() {
        let pos = Position::startpos();
        let good = PackedBoard::from_position(&pos, 0, GameResult::WhiteWon, 0).to_bytes();
        let mut b = good;
        b[26] = 3;
        assert_eq!(PackedBoard::from_bytes(&b), Err(RecordError::BadResult(3)));
        let mut b = good;
        b[27] = 2;
        assert_eq!(PackedBoard::from_bytes(&b), Err(RecordError::BadSide(2)));
        let mut b = good;
        b[8] = 0x07;
        assert_eq!(PackedBoard::from_bytes(&b), Err(RecordError::BadPiece(7)));
        let mut b = good;
        b[0..8].copy_from_slice(&0xFFFFu64.to_le_bytes());
        assert_eq!(PackedBoard::from_bytes(&b), Err(RecordError::Padding));
        let mut b = good;
        b[0..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(PackedBoard::from_bytes(&b), Err(RecordError::TooManyPieces));
        let mut bytes = good.to_vec();
        bytes.extend_from_slice(&b);
        bytes.extend_from_slice(&good[..10]);
        let (recs, bad) = read_records(&bytes);
        assert_eq!((recs.len(), bad), (1, 1));
    }
}
