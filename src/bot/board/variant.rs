//! `VariantRecord`: a game in one of Lichess's variants (crazyhouse,
//! antichess, atomic, horde, king of the hill, racing kings, three-check),
//! replayed with shakmaty's rules: the server's move list checked legal
//! (drops included), the side to move, repetition keys, whether a side can
//! still win on material, SAN for the PGN, and the variant's names for
//! Lichess, PGN and the `UCI_Variant` option of engines. It follows the
//! server's list as `GameRecord` does for standard chess (only new moves
//! played, rebuilt after a takeback, an illegal move an error that leaves
//! the record as it was). Also the position's Polyglot key and the legal
//! moves an opening book holds for it.

use super::line::Line;
use super::standard::RecordError;
use crate::chess::{Color, zobrist};
use crate::engine::book::{self, Book, BookChoice, BookMove, PlayedBook};
use crate::lichess::model::VariantKey;
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::variant::{Variant, VariantPosition};
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, CastlingSide, EnPassantMode, Move, Position, Role, Square};

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

    /// The moves in UCI as an engine without `UCI_Chess960` reads them:
    /// castling as the king's move to its square (e1g1), whichever way the
    /// server wrote it (lila writes king takes rook, e1h1, in every
    /// variant).
    pub fn uci_moves(&self) -> Vec<String> {
        let uci = |&m| UciMove::from_move(m, CastlingMode::Standard).to_string();
        self.line.moves().iter().map(uci).collect()
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

    /// The move `book` plays here (in UCI as posted), if the game is
    /// within its depth and it holds a legal move for the position.
    /// `random` in `0..1`.
    pub fn book_move(&self, book: &PlayedBook, random: f64) -> Option<BookChoice<String>> {
        let pos = self.position();
        let ply = 2 * (pos.fullmoves().get() - 1) + (pos.turn() == shakmaty::Color::Black) as u32;
        if ply >= book.max_plies {
            return None;
        }
        let choice = book.pick(ply, &book_moves(&book.book, pos), random)?;
        Some(BookChoice {
            mv: UciMove::from_move(choice.mv, CastlingMode::Standard).to_string(),
            weight: choice.weight,
            total: choice.total,
        })
    }
}

/// The Polyglot key of a variant position, as python-chess computes it
/// (`chess.polyglot.zobrist_hash` on a variant board): the pieces, the
/// castling rights, the en-passant file when a pawn of the side to move
/// stands beside the pawn that just stepped two squares (whether or not
/// it may legally take), and the side to move. Pockets, promoted pieces
/// and checks given are not hashed (shakmaty's own keys hash them).
pub fn polyglot_key(pos: &VariantPosition) -> u64 {
    let mut key = 0;
    for (sq, piece) in pos.board() {
        let piece = crate::chess::Piece {
            color: color(piece.color),
            role: role(piece.role),
        };
        key ^= zobrist::piece(piece, square(sq));
    }
    let mut rights = 0;
    for (bit, c, side) in [
        (1, shakmaty::Color::White, CastlingSide::KingSide),
        (2, shakmaty::Color::White, CastlingSide::QueenSide),
        (4, shakmaty::Color::Black, CastlingSide::KingSide),
        (8, shakmaty::Color::Black, CastlingSide::QueenSide),
    ] {
        if pos.castles().has(c, side) {
            rights |= bit;
        }
    }
    key ^= zobrist::castling(rights);
    if let Some(ep) = pos.ep_square(EnPassantMode::PseudoLegal) {
        key ^= zobrist::en_passant(ep.file().to_u32() as u8);
    }
    if pos.turn() == shakmaty::Color::White {
        key ^= zobrist::WHITE_TO_MOVE;
    }
    key
}

/// The legal moves `book` holds for `pos`, with their weights, in file
/// order ([`book::decode_bits`]; castling is written king-takes-rook, as
/// shakmaty's castling moves are). A book holds no drops; an entry that
/// is no legal move here is skipped.
fn book_moves(book: &Book, pos: &VariantPosition) -> Vec<BookMove<Move>> {
    let legal = pos.legal_moves();
    book.entries(polyglot_key(pos))
        .into_iter()
        .filter_map(|(raw, weight)| {
            let (from, to, promotion) = book::decode_bits(raw)?;
            let mv = legal.iter().copied().find(|m| {
                m.from().map(square) == Some(from)
                    && square(m.to()) == to
                    && m.promotion().map(role) == promotion
            })?;
            Some(BookMove { mv, weight })
        })
        .collect()
}

fn role(r: Role) -> crate::chess::Role {
    match r {
        Role::Pawn => crate::chess::Role::Pawn,
        Role::Knight => crate::chess::Role::Knight,
        Role::Bishop => crate::chess::Role::Bishop,
        Role::Rook => crate::chess::Role::Rook,
        Role::Queen => crate::chess::Role::Queen,
        Role::King => crate::chess::Role::King,
    }
}

fn square(sq: Square) -> crate::chess::Square {
    crate::chess::Square::new(sq.to_u32() as u8)
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
    fn castling_goes_to_the_engine_as_the_kings_move_however_lichess_wrote_it() {
        let opening = "e2e4 e7e5 g1f3 b8c6 f1c4 g8f6";
        for (written, sent) in [("e1h1", "e1g1"), ("e1g1", "e1g1")] {
            for key in [
                VariantKey::Crazyhouse,
                VariantKey::Atomic,
                VariantKey::ThreeCheck,
            ] {
                let mut r = VariantRecord::new(key, "startpos").unwrap();
                r.sync(&format!("{opening} {written} f8c5")).unwrap();
                let moves = r.uci_moves();
                assert_eq!(moves.len(), 8, "{key:?}");
                assert_eq!(moves[6], sent, "{key:?} {written}");
                assert_eq!(moves[7], "f8c5");
            }
        }
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

    fn after(key: VariantKey, fen: &str, moves: &str) -> VariantRecord {
        let mut r = VariantRecord::new(key, fen).unwrap();
        r.sync(moves).unwrap();
        r
    }

    #[test]
    fn variant_keys_are_python_chess_polyglot_keys() {
        // chess.polyglot.zobrist_hash(board) with python-chess 1.11.2 on
        // the variant's board (chess.variant.CrazyhouseBoard() and so on)
        // after these moves: pockets, promoted pieces and checks given are
        // not hashed; the en-passant file is when a pawn of the side to
        // move stands beside, legal capture or not.
        let cases = [
            (
                VariantKey::Crazyhouse,
                "startpos",
                "e2e4 d7d5 e4d5",
                0x2089_b309_bbaa_4db6,
            ),
            (
                VariantKey::Crazyhouse,
                "startpos",
                "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5 P@d4",
                0x40b3_5b09_e63b_fdb4,
            ),
            (
                VariantKey::ThreeCheck,
                "startpos",
                "e2e4 e7e5 f1c4 b8c6 c4f7",
                0x61a9_affc_bfc7_6870,
            ),
            (
                VariantKey::ThreeCheck,
                "7k/3p4/8/r3P2K/8/8/8/8 b - - 3+3 0 1",
                "d7d5",
                0x86b9_56ea_bb0c_69db,
            ),
            (VariantKey::Horde, "startpos", "", 0xa8a8_7818_3978_f15b),
            (
                VariantKey::Horde,
                "startpos",
                "d4d5 e7e5",
                0x57e9_76df_3966_ddb9,
            ),
            (
                VariantKey::RacingKings,
                "startpos",
                "",
                0xda1c_d414_1a24_0380,
            ),
            (VariantKey::Antichess, "startpos", "", 0x3d01_bbb3_c110_5375),
            (
                VariantKey::Atomic,
                "startpos",
                "e2e4 g8f6 e4e5 d7d5",
                0x2158_459f_f499_f8e3,
            ),
            (
                VariantKey::Atomic,
                "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
                "",
                0xfda2_39cc_692a_6053,
            ),
            (
                VariantKey::KingOfTheHill,
                "startpos",
                "",
                0x463b_9618_1691_fc9c,
            ),
        ];
        for (key, fen, moves, expected) in cases {
            let r = after(key, fen, moves);
            assert_eq!(
                polyglot_key(r.position()),
                expected,
                "{key:?} {fen} {moves}"
            );
        }
    }

    /// A book of `entries` (Polyglot move bits, weight) for the position
    /// of `r`.
    fn book_for(r: &VariantRecord, entries: &[(u16, u16)], min_weight: u16) -> PlayedBook {
        let key = polyglot_key(r.position());
        let data: Vec<u8> = entries
            .iter()
            .flat_map(|&(raw, w)| crate::engine::book::raw_entry(key, raw, w))
            .collect();
        PlayedBook {
            book: Book::from_bytes(std::path::Path::new("v.bin"), data).unwrap(),
            selection: crate::engine::book::Selection::Best,
            max_plies: 20,
            min_weight,
        }
    }

    /// Polyglot's bits for a move between two squares (0 = a1).
    fn raw(from: u16, to: u16) -> u16 {
        from << 6 | to
    }

    #[test]
    fn book_moves_are_legal_moves_of_the_variant_with_castling_as_lichess_writes_it() {
        // Atomic, both sides may castle: the book writes e1h1.
        let r = after(
            VariantKey::Atomic,
            "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
            "",
        );
        let book = book_for(&r, &[(raw(4, 7), 10), (raw(0, 1), 5)], 0);
        let c = r.book_move(&book, 0.5).unwrap();
        assert_eq!((c.mv.as_str(), c.weight, c.total), ("e1g1", 10, 15));
        // min_weight leaves castling out: a1b1 (5) only.
        let light = book_for(&r, &[(raw(4, 7), 4), (raw(0, 1), 5)], 5);
        assert_eq!(r.book_move(&light, 0.5).unwrap().mv, "a1b1");
        // Antichess: a capture is forced, so a book's quiet move is not
        // played (a broken book, or a key collision).
        let r = after(VariantKey::Antichess, "startpos", "e2e4 d7d5");
        let g1f3 = raw(6, 21);
        let e4d5 = raw(28, 35);
        assert_eq!(r.book_move(&book_for(&r, &[(g1f3, 9)], 0), 0.5), None);
        let c = r.book_move(&book_for(&r, &[(g1f3, 9), (e4d5, 1)], 0), 0.5);
        assert_eq!(c.map(|c| c.mv), Some("e4d5".to_owned()));
        // Past the depth (20 plies), nothing.
        let r = after(
            VariantKey::Crazyhouse,
            "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 11",
            "",
        );
        assert_eq!(r.book_move(&book_for(&r, &[(raw(0, 1), 5)], 0), 0.5), None);
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
