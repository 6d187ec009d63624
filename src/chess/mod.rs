//! The rules of chess and Chess960: board representation, legal move
//! generation, FEN, UCI and SAN notation, game status. No I/O.

mod attacks;
mod bitboard;
mod fen;
mod movegen;
mod moves;
mod notation;
mod perft;
mod position;
mod status;
mod types;
pub mod zobrist;

pub use attacks::{
    attacks, between, bishop_attacks, king_attacks, knight_attacks, line, pawn_attacks,
    pawn_attacks_set, queen_attacks, rook_attacks,
};
pub use bitboard::Bitboard;
pub use fen::{CastlingNotation, FenError, STARTPOS, chess960_start_fen};
pub use moves::{MAX_MOVES, Move, MoveKind, MoveList};
pub use notation::{SanError, UciMoveError};
pub use perft::{divide, perft};
pub use position::{CastleSide, Position, castle_destinations};
pub use status::Outcome;
pub use types::{Color, ParseSquareError, Piece, Role, Square};
