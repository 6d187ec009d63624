//! Small value types of the board: colours, roles, pieces and squares.

use std::fmt;
use std::ops::Not;
use std::str::FromStr;

/// A side: White or Black.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Color {
    White = 0,
    Black = 1,
}

impl Color {
    pub const ALL: [Color; 2] = [Color::White, Color::Black];

    #[inline(always)]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The rank where this side's pieces start (0 for White, 7 for Black).
    #[inline(always)]
    pub fn back_rank(self) -> u8 {
        match self {
            Color::White => 0,
            Color::Black => 7,
        }
    }

    pub fn char(self) -> char {
        match self {
            Color::White => 'w',
            Color::Black => 'b',
        }
    }
}

impl Not for Color {
    type Output = Color;
    #[inline(always)]
    fn not(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }
}

/// What a piece is, regardless of colour.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Role {
    Pawn = 0,
    Knight = 1,
    Bishop = 2,
    Rook = 3,
    Queen = 4,
    King = 5,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Pawn,
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
        Role::King,
    ];

    #[inline(always)]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case letter as in FEN and UCI promotions (`p`, `n`, ...).
    pub fn char(self) -> char {
        b"pnbrqk"[self as usize] as char
    }

    pub fn from_char(c: char) -> Option<Role> {
        Some(match c.to_ascii_lowercase() {
            'p' => Role::Pawn,
            'n' => Role::Knight,
            'b' => Role::Bishop,
            'r' => Role::Rook,
            'q' => Role::Queen,
            'k' => Role::King,
            _ => return None,
        })
    }
}

/// A coloured piece.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Piece {
    pub color: Color,
    pub role: Role,
}

impl Piece {
    /// FEN letter: upper case for White.
    pub fn char(self) -> char {
        match self.color {
            Color::White => self.role.char().to_ascii_uppercase(),
            Color::Black => self.role.char(),
        }
    }

    pub fn from_char(c: char) -> Option<Piece> {
        let role = Role::from_char(c)?;
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        Some(Piece { color, role })
    }
}

/// A square, 0 = a1, 7 = h1, 63 = h8.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// # Panics
    /// Never: the index is masked into range.
    #[inline(always)]
    pub const fn new(index: u8) -> Square {
        Square(index & 63)
    }

    #[inline(always)]
    pub const fn from_coords(file: u8, rank: u8) -> Square {
        Square::new(rank * 8 + file)
    }

    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    #[inline(always)]
    pub const fn file(self) -> u8 {
        self.0 & 7
    }

    #[inline(always)]
    pub const fn rank(self) -> u8 {
        self.0 >> 3
    }

    /// The square seen from `color`'s side (rank mirrored for Black).
    #[inline(always)]
    pub const fn relative(self, color: Color) -> Square {
        match color {
            Color::White => self,
            Color::Black => Square(self.0 ^ 56),
        }
    }

    /// The same square with the rank flipped.
    #[inline(always)]
    pub const fn flip(self) -> Square {
        Square(self.0 ^ 56)
    }

    /// One rank forward from `color`'s point of view, if on the board.
    #[inline(always)]
    pub fn forward(self, color: Color) -> Option<Square> {
        match color {
            Color::White if self.0 < 56 => Some(Square(self.0 + 8)),
            Color::Black if self.0 >= 8 => Some(Square(self.0 - 8)),
            _ => None,
        }
    }

    pub fn all() -> impl Iterator<Item = Square> {
        (0..64).map(Square)
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            (b'a' + self.file()) as char,
            (b'1' + self.rank()) as char
        )
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The string is not a square name such as `e4`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid square name")]
pub struct ParseSquareError;

impl FromStr for Square {
    type Err = ParseSquareError;

    fn from_str(s: &str) -> Result<Square, ParseSquareError> {
        match s.as_bytes() {
            [f @ b'a'..=b'h', r @ b'1'..=b'8'] => Ok(Square::from_coords(f - b'a', r - b'1')),
            _ => Err(ParseSquareError),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_parse_and_print() {
        for s in Square::all() {
            assert_eq!(s.to_string().parse::<Square>(), Ok(s));
        }
        assert!("i1".parse::<Square>().is_err());
        assert!("a9".parse::<Square>().is_err());
        assert!("".parse::<Square>().is_err());
        assert!("é4".parse::<Square>().is_err());
        assert_eq!("e4".parse::<Square>().unwrap().flip().to_string(), "e5");
    }
}
