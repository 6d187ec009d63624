//! `VariantRecord`: a game in one of Lichess's variants (crazyhouse,
//! antichess, atomic, horde, king of the hill, racing kings, three-check),
//! replayed with shakmaty's rules: the server's move list checked legal
//! (drops included), the side to move, repetition keys, whether a side can
//! still win on material, SAN for the PGN, and the variant's names for
//! Lichess, PGN and the `UCI_Variant` option of engines. It follows the
//! server's list as `GameRecord` does for standard chess (only new moves
//! played, rebuilt after a takeback, an illegal move an error that leaves
//! the record as it was).

use super::line::Line;
use super::standard::RecordError;
use crate::chess::Color;
use crate::lichess::model::VariantKey;
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::variant::{Variant, VariantPosition};
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, EnPassantMode, Move, Position};

/// The shakmaty variant of a Lichess variant key; None for standard chess
/// and its set-ups (kaissa's own rules play those) and unknown keys.
pub fn shakmaty_variant(key: VariantKey) -> Option<Variant> {
    Some(match key {
        VariantKey::Crazyhouse => Variant::Crazyhouse,
        VariantKey::Antichess => Variant::Antichess,
        VariantKey::Atomic => Variant::Atomic,
        VariantKey::Horde => Variant::Horde,
        VariantKey::KingOfTheHill => Variant::KingOfTheHill,
        VariantKey::RacingKings => Variant::RacingKings,
        VariantKey::ThreeCheck => Variant::ThreeCheck,
        VariantKey::Standard
        | VariantKey::Chess960
        | VariantKey::FromPosition
        | VariantKey::Unknown => return None,
    })
}

/// The value of a UCI engine's `UCI_Variant` option for a Lichess
/// variant (Fairy-Stockfish's and Multi-Variant Stockfish's names); None
/// for standard chess and its set-ups.
pub fn uci_variant(key: VariantKey) -> Option<&'static str> {
    shakmaty_variant(key).map(Variant::uci)
}

/// The PGN `Variant` tag Lichess writes.
pub fn pgn_name(key: VariantKey) -> Option<&'static str> {
    Some(match key {
        VariantKey::Crazyhouse => "Crazyhouse",
        VariantKey::Antichess => "Antichess",
        VariantKey::Atomic => "Atomic",
        VariantKey::Horde => "Horde",
        VariantKey::KingOfTheHill => "King of the Hill",
        VariantKey::RacingKings => "Racing Kings",
        VariantKey::ThreeCheck => "Three-check",
        VariantKey::Chess960 => "Chess960",
        VariantKey::Standard | VariantKey::FromPosition | VariantKey::Unknown => return None,
    })
}

fn color(c: shakmaty::Color) -> Color {
    match c {
        shakmaty::Color::White => Color::White,
        shakmaty::Color::Black => Color::Black,
    }
}

fn shak(c: Color) -> shakmaty::Color {
    match c {
        Color::White => shakmaty::Color::White,
        Color::Black => shakmaty::Color::Black,
    }
}

/// The moves of a variant game and the positions they lead to.
#[derive(Clone, Debug)]
pub struct VariantRecord {
    key: VariantKey,
    /// The initial FEN as Lichess gave it; None for the variant's own
    /// start ("startpos").
    initial_fen: Option<String>,
    /// The moves as the server wrote them (UCI, drops as `P@e4`).
    line: Line<VariantPosition, Move>,
}

impl VariantRecord {
    /// A record of a `key` game starting at `initial_fen` ("startpos", or
    /// empty, for the variant's own start position).
    pub fn new(key: VariantKey, initial_fen: &str) -> Result<VariantRecord, RecordError> {
        let variant = shakmaty_variant(key).ok_or_else(|| {
            RecordError::VariantSetup(format!("{} is not a variant of its own", key.as_str()))
        })?;
        let text = initial_fen.trim();
        let (initial, initial_fen) = if text.is_empty() || text == "startpos" {
            (VariantPosition::new(variant), None)
        } else {
            let invalid = RecordError::VariantSetup;
            let fen: Fen = text.parse().map_err(|e| invalid(format!("{e}")))?;
            // Lichess sets up positions with more material than a game
            // could reach; anything else wrong is refused.
            let pos = match VariantPosition::from_setup(
                variant,
                fen.into_setup(),
                CastlingMode::Standard,
            ) {
                Ok(pos) => pos,
                Err(e) => e
                    .ignore_too_much_material()
                    .map_err(|e| invalid(e.to_string()))?,
            };
            (pos, Some(text.to_owned()))
        };
        Ok(VariantRecord {
            key,
            initial_fen,
            line: Line::new(initial),
        })
    }

    /// Brings the record in line with the server's space-separated UCI
    /// move list. Returns how many moves are new. On error the record is
    /// unchanged.
    pub fn sync(&mut self, moves: &str) -> Result<usize, RecordError> {
        self.line.sync(moves, |pos, text| {
            let m = parse(pos, text)?;
            let mut after = pos.clone();
            after.play_unchecked(m);
            Ok((m, after))
        })
    }

    fn position(&self) -> &VariantPosition {
        self.line.position()
    }

    pub fn variant(&self) -> VariantKey {
        self.key
    }

    /// Number of half-moves played.
    pub fn ply(&self) -> usize {
        self.line.moves().len()
    }

    /// The position now, as a FEN (pockets and check counts included).
    pub fn fen(&self) -> String {
        Fen::from_position(self.position(), EnPassantMode::Legal).to_string()
    }

    /// The side to move.
    pub fn turn(&self) -> Color {
        color(self.position().turn())
    }

    /// The side to move at the start.
    pub fn initial_turn(&self) -> Color {
        color(self.line.initial().turn())
    }

    /// The move number of the first move.
    pub fn initial_move_number(&self) -> u32 {
        self.line.initial().fullmoves().get()
    }

    /// The current position's key (pockets and check counts included).
    pub fn key(&self) -> u64 {
        let key: Zobrist64 = self.position().zobrist_hash(EnPassantMode::Legal);
        key.0
    }

    /// Whether `side` has the material to win (a lone king cannot, in
    /// the variants where that is so; in antichess, anything can).
    pub fn can_win(&self, side: Color) -> bool {
        !self.position().has_insufficient_material(shak(side))
    }

    /// Whether the game is over on the board.
    pub fn is_over(&self) -> bool {
        self.position().is_game_over()
    }

    /// The moves as the server wrote them.
    pub fn uci_moves(&self) -> &[String] {
        self.line.texts()
    }

    /// The initial FEN, None for the variant's own start.
    pub fn initial_fen(&self) -> Option<&str> {
        self.initial_fen.as_deref()
    }

    /// `text` as a legal move in the current position, in the UCI form to
    /// send to Lichess; None if it is not legal.
    pub fn legal_uci(&self, text: &str) -> Option<String> {
        let m = parse(self.position(), text).ok()?;
        Some(UciMove::from_move(m, CastlingMode::Standard).to_string())
    }

    /// The SAN of a legal move in the current position.
    pub fn san(&self, text: &str) -> Option<String> {
        let m = parse(self.position(), text).ok()?;
        Some(san(self.position(), m))
    }

    /// Every legal move, in UCI.
    pub fn legal_ucis(&self) -> Vec<String> {
        self.position()
            .legal_moves()
            .iter()
            .map(|m| UciMove::from_move(*m, CastlingMode::Standard).to_string())
            .collect()
    }

    /// A legal move (the first shakmaty generates), for when no engine
    /// answers; None if the game is over.
    pub fn any_legal(&self) -> Option<String> {
        let moves = self.position().legal_moves();
        let m = moves.first()?;
        Some(UciMove::from_move(*m, CastlingMode::Standard).to_string())
    }

    /// The first `max` moves of a principal variation (UCI) in SAN, up to
    /// the first one that is not legal.
    pub fn pv_san(&self, pv: &[String], max: usize) -> String {
        let mut pos = self.position().clone();
        let mut out = Vec::new();
        for text in pv.iter().take(max) {
            let Ok(m) = parse(&pos, text) else { break };
            out.push(san(&pos, m));
            pos.play_unchecked(m);
        }
        out.join(" ")
    }

    /// The moves in SAN.
    pub fn san_moves(&self) -> Vec<String> {
        self.line.played().map(|(m, pos)| san(pos, m)).collect()
    }
}

/// The SAN of `m`, pawn drops written `P@e6` as Lichess and
/// python-chess write them (shakmaty writes `@e6`).
fn san(pos: &VariantPosition, m: Move) -> String {
    let text = San::from_move(pos, m).to_string();
    if text.starts_with('@') {
        format!("P{text}")
    } else {
        text
    }
}

/// A UCI move (king-to-rook castling accepted too) legal in `pos`.
fn parse(pos: &VariantPosition, text: &str) -> Result<Move, String> {
    let uci: UciMove = text.parse().map_err(|e| format!("{e}"))?;
    uci.to_move(pos).map_err(|e| format!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crazyhouse_drops_and_takebacks() {
        let mut r = VariantRecord::new(VariantKey::Crazyhouse, "startpos").unwrap();
        assert_eq!(r.sync("e2e4 d7d5 e4d5 d8d5").unwrap(), 4);
        // White holds a pawn: dropping it is legal.
        assert_eq!(r.legal_uci("P@e6"), Some("P@e6".to_owned()));
        assert_eq!(r.san("P@e6"), Some("P@e6".to_owned()));
        assert_eq!(r.sync("e2e4 d7d5 e4d5 d8d5 P@e6").unwrap(), 1);
        assert_eq!(r.turn(), Color::Black);
        // Black has no knight in hand.
        assert!(r.legal_uci("N@f3").is_none());
        let before = r.key();
        assert_eq!(r.sync("e2e4 d7d5 e4d5").unwrap(), 0);
        assert_eq!(r.ply(), 3);
        assert_ne!(r.key(), before);
        let err = r.sync("e2e4 d7d5 e4d5 N@f3").unwrap_err();
        assert!(
            matches!(err, RecordError::IllegalMove { index: 3, .. }),
            "{err}"
        );
        assert_eq!(r.ply(), 3, "an illegal move leaves the record as it was");
        assert_eq!(r.san_moves(), ["e4", "d5", "exd5"]);
    }

    #[test]
    fn each_variant_has_its_rules_and_names() {
        // Antichess: a capture is forced.
        let mut r = VariantRecord::new(VariantKey::Antichess, "startpos").unwrap();
        r.sync("e2e4 d7d5").unwrap();
        assert!(r.legal_uci("g1f3").is_none());
        assert!(r.legal_uci("e4d5").is_some());
        // Horde starts with White's pawns.
        let r = VariantRecord::new(VariantKey::Horde, "startpos").unwrap();
        assert!(r.legal_uci("e4e5").is_some());
        assert!(
            r.legal_uci("f4f5").is_none(),
            "f5 holds a pawn of the horde"
        );
        // Racing kings: no checks, kings race.
        let r = VariantRecord::new(VariantKey::RacingKings, "startpos").unwrap();
        assert!(r.legal_uci("h2h3").is_some());
        // King of the hill: the king in the centre ends the game.
        let mut r =
            VariantRecord::new(VariantKey::KingOfTheHill, "4k3/8/8/8/8/4K3/8/8 w - - 0 1").unwrap();
        assert!(!r.is_over());
        r.sync("e3e4").unwrap();
        assert!(r.is_over());
        // Atomic: a lone king cannot win.
        let r = VariantRecord::new(VariantKey::Atomic, "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1").unwrap();
        assert!(r.can_win(Color::White));
        assert!(!r.can_win(Color::Black));
        assert_eq!(uci_variant(VariantKey::ThreeCheck), Some("3check"));
        assert_eq!(uci_variant(VariantKey::Standard), None);
        assert_eq!(
            pgn_name(VariantKey::KingOfTheHill),
            Some("King of the Hill")
        );
        assert!(VariantRecord::new(VariantKey::Standard, "startpos").is_err());
        assert!(VariantRecord::new(VariantKey::Atomic, "not a fen").is_err());
    }

    #[test]
    fn principal_variations_stop_at_the_first_illegal_move() {
        let r = VariantRecord::new(VariantKey::ThreeCheck, "startpos").unwrap();
        let pv: Vec<String> = ["e2e4", "e7e5", "f1c4", "e1e1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(r.pv_san(&pv, 6), "e4 e5 Bc4");
        assert!(r.any_legal().is_some());
    }
}
