//! The opening a game of standard chess went through, by name and ECO
//! code, for the PGN's `ECO` and `Opening` tags. The names are
//! lichess-org/chess-openings' (`data/openings.tsv`, compiled in; see
//! `data/README.md`), matched as Lichess does: by position, so that a
//! transposition counts, the game's last position that has a name giving
//! it. Only games from the standard start position have one.

use super::standard::GameRecord;
use crate::chess::Position;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The data set: a header line, then `eco`, `name` and `pgn` (SAN with
/// move numbers) separated by tabs.
const OPENINGS: &str = include_str!("../../../data/openings.tsv");

/// A named opening.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Opening {
    pub eco: &'static str,
    pub name: &'static str,
}

/// The openings by the key of the position their moves reach, and the
/// longest line's plies (no later position can have a name).
struct Table {
    by_key: HashMap<u64, Opening>,
    max_ply: usize,
}

/// The table, built from the data set on first use.
fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_key = HashMap::new();
        let mut max_ply = 0;
        for line in OPENINGS.lines().skip(1) {
            let mut fields = line.split('\t');
            let (Some(eco), Some(name), Some(pgn)) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Some((key, plies)) = key_after(pgn) else {
                // Not in this build's data: a line the tests would catch.
                continue;
            };
            max_ply = max_ply.max(plies);
            // One line a position: the data set's lint refuses two.
            by_key.insert(key, Opening { eco, name });
        }
        Table { by_key, max_ply }
    })
}

/// The key of the position after the SAN moves of `pgn` (move numbers
/// skipped) and their number, if they are all legal.
fn key_after(pgn: &str) -> Option<(u64, usize)> {
    let mut pos = Position::startpos();
    let mut plies = 0;
    for token in pgn.split_whitespace() {
        if token.ends_with('.') {
            continue;
        }
        let m = pos.parse_san(token).ok()?;
        pos = pos.play(m);
        plies += 1;
    }
    Some((pos.key(), plies))
}

/// The opening of `record`: the name of the last named position of its
/// first moves. None for Chess960 and games from another position.
pub fn opening(record: &GameRecord) -> Option<Opening> {
    if record.chess960() || record.initial_fen().is_some() {
        return None;
    }
    let table = table();
    let mut keys = record.history();
    keys.push(record.position().key());
    // keys[0] is the start position, which has no name.
    keys.iter()
        .take(table.max_ply + 1)
        .rev()
        .find_map(|key| table.by_key.get(key).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opening_after(moves: &str) -> Option<Opening> {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync(moves).unwrap();
        opening(&r)
    }

    #[test]
    fn every_line_of_the_data_set_is_legal() {
        let bad: Vec<&str> = OPENINGS
            .lines()
            .skip(1)
            .filter(|l| l.split('\t').nth(2).and_then(key_after).is_none())
            .collect();
        assert!(bad.is_empty(), "{bad:?}");
        // A position each: no line hides another.
        assert_eq!(table().by_key.len(), OPENINGS.lines().count() - 1);
    }

    #[test]
    fn the_last_named_position_names_the_game() {
        assert_eq!(opening_after(""), None);
        assert_eq!(
            opening_after("e2e4 e7e5 g1f3 b8c6 f1b5"),
            Some(Opening {
                eco: "C60",
                name: "Ruy Lopez"
            })
        );
        // Moves past the book keep the last name.
        let later = opening_after("e2e4 e7e5 g1f3 b8c6 f1b5 h7h6 h2h3 h6h5 h3h4");
        assert_eq!(later.map(|o| o.eco), Some("C60"));
        assert!(later.is_some_and(|o| o.name.starts_with("Ruy Lopez")));
    }

    #[test]
    fn a_transposition_finds_the_opening() {
        // The Queen's Gambit Declined reached from the English.
        let direct = opening_after("d2d4 d7d5 c2c4 e7e6");
        let transposed = opening_after("c2c4 e7e6 d2d4 d7d5");
        assert!(direct.is_some_and(|o| o.name.starts_with("Queen's Gambit Declined")));
        assert_eq!(direct, transposed);
    }

    #[test]
    fn no_opening_for_chess960_or_another_start() {
        let r = GameRecord::new(crate::chess::STARTPOS, true).unwrap();
        assert_eq!(opening(&r), None);
        let mut r = GameRecord::new("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", false).unwrap();
        r.sync("e2e4").unwrap();
        assert_eq!(opening(&r), None);
        // "From position" at the start position is a standard game.
        let mut r = GameRecord::new(crate::chess::STARTPOS, false).unwrap();
        r.sync("e2e4 e7e5 g1f3 b8c6 f1b5").unwrap();
        assert_eq!(opening(&r).map(|o| o.eco), Some("C60"));
    }
}
