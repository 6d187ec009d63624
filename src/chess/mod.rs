//! The rules of chess and Chess960: board representation, legal move
//! generation, FEN, UCI and SAN notation, game status. No I/O.
