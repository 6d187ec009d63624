//! FEN, X-FEN and Shredder-FEN: parsing (with full validation) and output.
//!
//! Castling rights may be written `KQkq` (the outermost rook on that side
//! of the king), or by rook file (`HAha`, Shredder-FEN), or mixed (X-FEN).

use super::bitboard::Bitboard;
use super::position::{CastleSide, Position};
use super::types::{Color, Piece, Role, Square};

/// The standard starting position.
pub const STARTPOS: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// What is wrong with a FEN string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenError {
    #[error("FEN has {0} fields; expected 4 to 6 (board, side, castling, en passant, clocks)")]
    FieldCount(usize),
    #[error("FEN board has {0} ranks; expected 8")]
    RankCount(usize),
    #[error("FEN board rank {rank} describes {files} files; expected 8")]
    RankLength { rank: u8, files: usize },
    #[error("FEN board has an invalid character {0:?}")]
    BadPiece(char),
    #[error("{0} has {1} kings; expected exactly one")]
    KingCount(&'static str, u32),
    #[error("pawn on the first or last rank ({0})")]
    PawnOnBackRank(Square),
    #[error("{0} has too many pieces ({1} pieces, {2} pawns)")]
    TooManyPieces(&'static str, u32, u32),
    #[error("side to move must be 'w' or 'b', not {0:?}")]
    BadSide(String),
    #[error("the side not to move ({0}) is in check")]
    OppositeCheck(&'static str),
    #[error("impossible check: the side to move is attacked by {0} pieces")]
    ImpossibleCheck(u32),
    #[error("invalid castling field {0:?}")]
    BadCastling(String),
    #[error("castling right {0:?} has no king on the back rank and rook to match")]
    ImpossibleCastling(char),
    #[error("invalid en-passant field {0:?}")]
    BadEnPassant(String),
    #[error("impossible en-passant square {0}: no pawn has just made a double step there")]
    ImpossibleEnPassant(Square),
    #[error("invalid halfmove clock {0:?}")]
    BadHalfmove(String),
    #[error("invalid fullmove number {0:?}")]
    BadFullmove(String),
}

/// How castling rights are written on output.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum CastlingNotation {
    /// `KQkq` where the rook is the outermost on its side, the rook's file
    /// otherwise. Reads as plain FEN for standard chess.
    XFen,
    /// Always the rook's file: `HAha`.
    Shredder,
}

fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "white",
        Color::Black => "black",
    }
}

impl std::str::FromStr for Position {
    type Err = FenError;
    fn from_str(s: &str) -> Result<Position, FenError> {
        Position::from_fen(s)
    }
}

/// Shows the position as its X-FEN.
impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", self.to_fen(CastlingNotation::XFen))
    }
}

impl Position {
    /// The standard starting position.
    pub fn startpos() -> Position {
        Position::from_fen(STARTPOS).expect("the start position is valid")
    }

    /// Parses and validates a FEN, X-FEN or Shredder-FEN string. Missing
    /// clock fields default to `0 1`.
    pub fn from_fen(fen: &str) -> Result<Position, FenError> {
        let fields: Vec<&str> = fen.split_whitespace().collect();
        if !(4..=6).contains(&fields.len()) {
            return Err(FenError::FieldCount(fields.len()));
        }
        let mut pos = Position::empty();
        parse_board(&mut pos, fields[0])?;

        pos.turn = match fields[1] {
            "w" => Color::White,
            "b" => Color::Black,
            other => return Err(FenError::BadSide(other.chars().take(16).collect())),
        };

        for color in Color::ALL {
            let kings = pos.pieces(color, Role::King).count();
            if kings != 1 {
                return Err(FenError::KingCount(color_name(color), kings));
            }
            let pieces = pos.by_color(color).count();
            let pawns = pos.pieces(color, Role::Pawn).count();
            if pieces > 16 || pawns > 8 {
                return Err(FenError::TooManyPieces(color_name(color), pieces, pawns));
            }
        }
        let back_ranks = Bitboard::rank(0) | Bitboard::rank(7);
        if let Some(sq) = (pos.by_role(Role::Pawn) & back_ranks).first() {
            return Err(FenError::PawnOnBackRank(sq));
        }
        let occ = pos.occupied();
        let them = !pos.turn;
        if pos.is_attacked(pos.king(them), pos.turn, occ) {
            return Err(FenError::OppositeCheck(color_name(them)));
        }
        pos.checkers = pos.attackers_to(pos.king(pos.turn), occ) & pos.by_color(them);
        if pos.checkers.count() > 2 {
            return Err(FenError::ImpossibleCheck(pos.checkers.count()));
        }

        parse_castling(&mut pos, fields[2])?;
        parse_en_passant(&mut pos, fields[3])?;

        if let Some(h) = fields.get(4) {
            pos.halfmove = h
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= 10_000)
                .ok_or_else(|| FenError::BadHalfmove(h.chars().take(16).collect()))?;
        }
        if let Some(f) = fields.get(5) {
            pos.fullmove = f
                .parse::<u32>()
                .ok()
                .filter(|&n| n <= 100_000)
                .ok_or_else(|| FenError::BadFullmove(f.chars().take(16).collect()))?
                .max(1);
        }

        pos.key = pos.compute_key();
        pos.pawn_key = pos.compute_pawn_key();
        Ok(pos)
    }

    /// The FEN of this position.
    pub fn to_fen(&self, castling: CastlingNotation) -> String {
        let mut out = String::with_capacity(90);
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                match self.piece_at(Square::from_coords(file, rank)) {
                    Some(p) => {
                        if empty > 0 {
                            out.push((b'0' + empty) as char);
                            empty = 0;
                        }
                        out.push(p.char());
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                out.push((b'0' + empty) as char);
            }
            if rank > 0 {
                out.push('/');
            }
        }
        out.push(' ');
        out.push(self.turn.char());
        out.push(' ');
        let rights = self.castling_field(castling);
        out.push_str(if rights.is_empty() { "-" } else { &rights });
        out.push(' ');
        match self.ep_square {
            Some(sq) => out.push_str(&sq.to_string()),
            None => out.push('-'),
        }
        out.push_str(&format!(" {} {}", self.halfmove, self.fullmove));
        out
    }

    fn castling_field(&self, notation: CastlingNotation) -> String {
        let mut out = String::new();
        for color in Color::ALL {
            let rank_rooks = self.pieces(color, Role::Rook) & Bitboard::rank(color.back_rank());
            for side in [CastleSide::King, CastleSide::Queen] {
                let Some(rook) = self.castle_rook(color, side) else {
                    continue;
                };
                let outermost = match side {
                    CastleSide::King => rank_rooks.last(),
                    CastleSide::Queen => rank_rooks.first(),
                } == Some(rook);
                let ch = match notation {
                    CastlingNotation::XFen if outermost => match side {
                        CastleSide::King => 'k',
                        CastleSide::Queen => 'q',
                    },
                    _ => (b'a' + rook.file()) as char,
                };
                out.push(match color {
                    Color::White => ch.to_ascii_uppercase(),
                    Color::Black => ch,
                });
            }
        }
        out
    }
}

fn parse_board(pos: &mut Position, board: &str) -> Result<(), FenError> {
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 8 {
        return Err(FenError::RankCount(ranks.len()));
    }
    for (i, rank_str) in ranks.iter().enumerate() {
        let rank = 7 - i as u8;
        let mut file = 0usize;
        for c in rank_str.chars() {
            if let Some(d) = c.to_digit(10) {
                if !(1..=8).contains(&d) {
                    return Err(FenError::BadPiece(c));
                }
                file += d as usize;
            } else {
                let piece = Piece::from_char(c).ok_or(FenError::BadPiece(c))?;
                if file < 8 {
                    pos.put(Square::from_coords(file as u8, rank), piece);
                }
                file += 1;
            }
            if file > 8 {
                break;
            }
        }
        if file != 8 {
            return Err(FenError::RankLength {
                rank: rank + 1,
                files: file,
            });
        }
    }
    Ok(())
}

fn parse_castling(pos: &mut Position, field: &str) -> Result<(), FenError> {
    if field == "-" {
        return Ok(());
    }
    if field.is_empty() || field.chars().count() > 4 {
        return Err(FenError::BadCastling(field.chars().take(16).collect()));
    }
    for c in field.chars() {
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        let rank = color.back_rank();
        let king = pos.king(color);
        let rooks = pos.pieces(color, Role::Rook) & Bitboard::rank(rank);
        if king.rank() != rank {
            return Err(FenError::ImpossibleCastling(c));
        }
        let king_side = rooks & Bitboard(!0u64 << king.index());
        let queen_side = rooks & Bitboard((1u64 << king.index()) - 1);
        let rook = match c.to_ascii_lowercase() {
            'k' => king_side.last(),
            'q' => queen_side.first(),
            f @ 'a'..='h' => {
                let sq = Square::from_coords(f as u8 - b'a', rank);
                rooks.contains(sq).then_some(sq)
            }
            _ => return Err(FenError::BadCastling(field.chars().take(16).collect())),
        }
        .ok_or(FenError::ImpossibleCastling(c))?;
        // At most one right per side of the king.
        let same_side = if rook.file() > king.file() {
            king_side
        } else {
            queen_side
        };
        if (pos.castle_rooks & same_side).any() {
            return Err(FenError::BadCastling(field.chars().take(16).collect()));
        }
        pos.castle_rooks |= Bitboard::from_square(rook);
    }
    Ok(())
}

fn parse_en_passant(pos: &mut Position, field: &str) -> Result<(), FenError> {
    if field == "-" {
        return Ok(());
    }
    let ep: Square = field
        .parse()
        .map_err(|_| FenError::BadEnPassant(field.chars().take(16).collect()))?;
    let us = pos.turn;
    let them = !us;
    // The pawn that just moved two squares stands one rank beyond `ep`
    // (seen from the mover), and the squares it crossed are empty.
    let pushed = ep.forward(them);
    let origin = ep.forward(us);
    let valid = ep.rank() == us.relative_rank(5)
        && pushed.is_some_and(|p| {
            pos.piece_at(p)
                == Some(Piece {
                    color: them,
                    role: Role::Pawn,
                })
        })
        && !pos.occupied().contains(ep)
        && origin.is_some_and(|o| !pos.occupied().contains(o));
    if !valid {
        return Err(FenError::ImpossibleEnPassant(ep));
    }
    // Kept only when a capture is actually possible, as after a move.
    if pos.has_legal_ep_capture(ep) {
        pos.ep_square = Some(ep);
    }
    Ok(())
}

/// The FEN of Chess960 start position `n` (Scharnagl numbering, taken
/// modulo 960; 518 is the standard start), castling written `KQkq`.
pub fn chess960_start_fen(n: u32) -> String {
    const KNIGHTS: [(usize, usize); 10] = [
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 3),
        (2, 4),
        (3, 4),
    ];
    let mut rank = [None::<char>; 8];
    let n = (n % 960) as usize;
    let (n, light) = (n / 4, n % 4);
    rank[2 * light + 1] = Some('B');
    let (n, dark) = (n / 4, n % 4);
    rank[2 * dark] = Some('B');
    let (n, queen) = (n / 6, n % 6);
    // The `nth` empty square; there are always enough (8 squares, 8 pieces).
    let put = |rank: &mut [Option<char>; 8], nth: usize, piece: char| {
        if let Some(i) = (0..8).filter(|&i| rank[i].is_none()).nth(nth) {
            rank[i] = Some(piece);
        }
    };
    put(&mut rank, queen, 'Q');
    let (first, second) = KNIGHTS[n];
    // The second knight first, so the first one's index is unaffected.
    put(&mut rank, second, 'N');
    put(&mut rank, first, 'N');
    for piece in ['R', 'K', 'R'] {
        put(&mut rank, 0, piece);
    }
    let white: String = rank.iter().map(|p| p.unwrap_or('?')).collect();
    let black = white.to_lowercase();
    format!("{black}/pppppppp/8/8/8/8/PPPPPPPP/{white} w KQkq - 0 1")
}

#[cfg(test)]
mod tests {
    #[test]
    fn chess960_start_positions() {
        assert_eq!(chess960_start_fen(518), STARTPOS);
        assert_eq!(
            chess960_start_fen(0),
            "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"
        );
        let all: std::collections::HashSet<String> = (0..960).map(chess960_start_fen).collect();
        assert_eq!(all.len(), 960);
        for fen in &all {
            let pos = crate::chess::Position::from_fen(fen).expect(fen);
            assert_eq!(pos.castling_rights(), 0b1111, "{fen}");
        }
    }

    use super::*;

    #[test]
    fn start_position_round_trip() {
        let pos = Position::from_fen(STARTPOS).unwrap();
        assert_eq!(pos.to_fen(CastlingNotation::XFen), STARTPOS);
        assert_eq!(
            pos.to_fen(CastlingNotation::Shredder),
            STARTPOS.replace("KQkq", "HAha")
        );
        assert_eq!(pos.key(), 0x463b_9618_1691_fc9c, "Polyglot start key");
    }

    #[test]
    fn polyglot_reference_keys() {
        // Keys from the Polyglot book format description.
        let cases = [
            (
                "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
                0x823c_9b50_fd11_4196,
            ),
            (
                "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2",
                0x0756_b944_61c5_0fb0,
            ),
            (
                "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2",
                0x662f_afb9_65db_29d4,
            ),
            (
                "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                0x22a4_8b5a_8e47_ff78,
            ),
            (
                "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPPKPPP/RNBQ1BNR b kq - 0 3",
                0x652a_607c_a3f2_42c1,
            ),
            (
                "rnbq1bnr/ppp1pkpp/8/3pPp2/8/8/PPPPKPPP/RNBQ1BNR w - - 0 4",
                0x00fd_d303_c946_bdd9,
            ),
            (
                "rnbqkbnr/p1pppppp/8/8/PpP4P/8/1P1PPPP1/RNBQKBNR b KQkq c3 0 3",
                0x3c81_23ea_7b06_7637,
            ),
            (
                "rnbqkbnr/p1pppppp/8/8/P6P/R1p5/1P1PPPP1/1NBQKBNR b Kkq - 0 4",
                0x5c3f_9b82_9b27_9560,
            ),
        ];
        for (fen, key) in cases {
            let pos = Position::from_fen(fen).unwrap();
            assert_eq!(pos.key(), key, "{fen}");
        }
    }

    #[test]
    fn chess960_castling_notations() {
        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let pos = Position::from_fen(fen).unwrap();
        assert_eq!(pos.to_fen(CastlingNotation::Shredder), fen);
        // h-rooks are outermost (K/k); f-rooks are not the outermost on the
        // queen side? They are: no rook on a-e of the back rank.
        assert_eq!(
            pos.to_fen(CastlingNotation::XFen),
            "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w KQkq - 2 9"
        );
        let back = Position::from_fen(&pos.to_fen(CastlingNotation::XFen)).unwrap();
        assert_eq!(back, pos);
    }

    #[test]
    fn malformed_fens_are_rejected_with_a_reason() {
        let bad = [
            ("", FenError::FieldCount(0)),
            ("8/8/8/8/8/8/8/8 w - - 0 1 extra", FenError::FieldCount(7)),
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
                FenError::RankCount(7),
            ),
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1",
                FenError::BadPiece('X'),
            ),
            (
                "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                FenError::BadPiece('9'),
            ),
            (
                "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                FenError::RankLength { rank: 7, files: 7 },
            ),
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKKNR w KQkq - 0 1",
                FenError::KingCount("white", 2),
            ),
            (
                "4k3/8/8/8/8/8/8/8 w - - 0 1",
                FenError::KingCount("white", 0),
            ),
            (
                "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",
                FenError::PawnOnBackRank("a8".parse().unwrap()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K2R x - - 0 1",
                FenError::BadSide("x".into()),
            ),
            (
                "4k2R/8/8/8/8/8/8/4K3 w - - 0 1",
                FenError::OppositeCheck("black"),
            ),
            (
                "4k3/8/8/8/8/8/8/4K3 w K - 0 1",
                FenError::ImpossibleCastling('K'),
            ),
            (
                "4k3/8/8/8/8/8/8/4K2R w KK - 0 1",
                FenError::BadCastling("KK".into()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K2R w Kx - 0 1",
                FenError::BadCastling("Kx".into()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K3 w - e6 0 1",
                FenError::ImpossibleEnPassant("e6".parse().unwrap()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K3 w - z9 0 1",
                FenError::BadEnPassant("z9".into()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K3 w - - x 1",
                FenError::BadHalfmove("x".into()),
            ),
            (
                "4k3/8/8/8/8/8/8/4K3 w - - 0 -1",
                FenError::BadFullmove("-1".into()),
            ),
        ];
        for (fen, err) in bad {
            assert_eq!(Position::from_fen(fen), Err(err), "{fen}");
        }
    }

    #[test]
    fn en_passant_square_kept_only_when_capturable() {
        // No black pawn can take on e3: the square is dropped.
        let p = Position::from_fen("4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1").unwrap();
        assert_eq!(p.ep_square(), None);
        let p = Position::from_fen("4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1").unwrap();
        assert_eq!(p.ep_square(), Some("e3".parse().unwrap()));
        // The capture would expose the black king on the rank: dropped.
        let p = Position::from_fen("8/8/8/8/k2pP2R/8/8/4K3 b - e3 0 1").unwrap();
        assert_eq!(p.ep_square(), None);
    }
}
