//! `GameRecord`: one game's moves as the server reports them, replayed on
//! our own board. The server's move list is authoritative: every
//! `gameState` carries the whole list, and the record follows it, playing
//! only the new moves when the list grew and rebuilding when it shrank
//! (a takeback) or changed. An illegal move from the server is an error
//! that leaves the record as it was.

use super::line::Line;
use crate::chess::{CastlingNotation, Move, Outcome, Position};

/// The server's move list does not fit the game.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("invalid initial position: {0}")]
    InitialFen(#[from] crate::chess::FenError),
    /// The initial position of a variant game (shakmaty's rules).
    #[error("invalid initial position: {0}")]
    VariantSetup(String),
    #[error("move {index} ({text}) is not legal: {reason}")]
    IllegalMove {
        index: usize,
        text: String,
        reason: String,
    },
}

/// The moves of a game and the positions they lead to.
#[derive(Clone, Debug)]
pub struct GameRecord {
    initial: Position,
    chess960: bool,
    line: Line<Position, Move>,
}

impl GameRecord {
    /// A record starting at `initial_fen` ("startpos" or a FEN). Moves are
    /// read and written in Chess960 notation (castling king-takes-rook)
    /// when `chess960` is set or when the initial castling rights are not
    /// standard chess's (a "from position" game set up the Chess960 way,
    /// which Lichess also plays by Chess960's castling rules).
    pub fn new(initial_fen: &str, chess960: bool) -> Result<GameRecord, RecordError> {
        let initial = if initial_fen.trim().is_empty() || initial_fen.trim() == "startpos" {
            Position::startpos()
        } else {
            Position::from_fen(initial_fen)?
        };
        Ok(GameRecord {
            line: Line::new(initial.clone()),
            chess960: chess960 || initial.has_chess960_castling(),
            initial,
        })
    }

    /// Brings the record in line with the server's space-separated UCI
    /// move list. Returns how many moves are new. On error the record is
    /// unchanged.
    pub fn sync(&mut self, moves: &str) -> Result<usize, RecordError> {
        let chess960 = self.chess960;
        self.line.sync(moves, |pos, text| {
            let m = pos.parse_uci(text, chess960).map_err(|e| e.to_string())?;
            Ok((m, pos.play(m)))
        })
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        // Never empty: it always holds the initial position.
        self.line.position()
    }

    pub fn initial(&self) -> &Position {
        &self.initial
    }

    pub fn chess960(&self) -> bool {
        self.chess960
    }

    pub fn moves(&self) -> &[Move] {
        self.line.moves()
    }

    /// Number of half-moves played.
    pub fn ply(&self) -> usize {
        self.line.moves().len()
    }

    /// Keys of the positions before the current one, oldest first: the
    /// repetition history the engine and `Position::outcome` take.
    pub fn history(&self) -> Vec<u64> {
        let positions = self.line.positions();
        positions[..positions.len() - 1]
            .iter()
            .map(Position::key)
            .collect()
    }

    /// The game's outcome by the rules, if it is over on the board.
    pub fn outcome(&self) -> Option<Outcome> {
        self.position().outcome(&self.history())
    }

    /// The moves in SAN, each with the position it was played from.
    pub fn san_moves(&self) -> Vec<String> {
        self.line.played().map(|(m, pos)| pos.san(m)).collect()
    }

    /// The initial FEN, or None for the standard start position.
    pub fn initial_fen(&self) -> Option<String> {
        let fen = self.initial.to_fen(CastlingNotation::XFen);
        (fen != crate::chess::STARTPOS || self.chess960).then_some(fen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_growing_lists_and_takebacks() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        assert_eq!(r.sync("").unwrap(), 0);
        assert_eq!(r.sync("e2e4 e7e5").unwrap(), 2);
        assert_eq!(r.sync("e2e4 e7e5 g1f3").unwrap(), 1);
        assert_eq!(r.ply(), 3);
        // Takeback: the list shrinks.
        assert_eq!(r.sync("e2e4 e7e5").unwrap(), 0);
        assert_eq!(r.ply(), 2);
        assert_eq!(r.sync("e2e4 c7c5").unwrap(), 1);
        assert_eq!(r.san_moves(), ["e4", "c5"]);
        assert_eq!(r.history().len(), 2);
    }

    #[test]
    fn illegal_server_move_leaves_record_unchanged() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync("e2e4").unwrap();
        let before = r.position().clone();
        let err = r.sync("e2e4 e7e5 e1e3").unwrap_err();
        assert!(
            matches!(err, RecordError::IllegalMove { index: 2, .. }),
            "{err}"
        );
        assert_eq!(r.position(), &before);
        assert_eq!(r.ply(), 1);
        assert!(r.sync("e2e4 xyz").is_err());
        assert!(GameRecord::new("not a fen", false).is_err());
    }

    #[test]
    fn castling_forms_and_chess960() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync("e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1g1").unwrap();
        let mut s = GameRecord::new("startpos", false).unwrap();
        s.sync("e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1h1").unwrap();
        assert_eq!(r.position(), s.position());
        assert_eq!(r.san_moves().last().map(String::as_str), Some("O-O"));

        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let mut c = GameRecord::new(fen, true).unwrap();
        c.sync("g1h1").unwrap_err();
        assert_eq!(
            c.initial_fen().as_deref(),
            Some("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w KQkq - 2 9")
        );
    }

    #[test]
    fn repetition_is_seen_from_the_move_list() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync("g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8").unwrap();
        assert_eq!(r.outcome(), Some(Outcome::Repetition));
    }
}
