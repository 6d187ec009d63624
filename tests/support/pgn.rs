//! Reading back the PGNs the bot writes: a file's games apart, a game's
//! moves with the comment after each, a clock as `[%clk]` writes it, and
//! the opening a game of standard chess reached by the data set's names
//! (worked out with shakmaty, apart from kaissa's own board).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Position};

/// The games of a PGN file, each from its `[Event` to the blank line that
/// ends its moves.
pub fn games(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text.match_indices("[Event ").map(|(i, _)| i).collect();
    starts.push(text.len());
    starts.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// The value of a game's tag `name`.
pub fn tag<'a>(game: &'a str, name: &str) -> Option<&'a str> {
    let start = format!("[{name} \"");
    game.lines()
        .find_map(|l| l.strip_prefix(start.as_str()))
        .and_then(|rest| rest.strip_suffix("\"]"))
}

/// A game's moves in SAN, each with the comment after it (the text
/// between the braces, trimmed, lines joined).
pub fn movetext(game: &str) -> Vec<(String, Option<String>)> {
    let body = game
        .split("\n\n")
        .nth(1)
        .unwrap_or_default()
        .replace('\n', " ");
    let mut moves: Vec<(String, Option<String>)> = Vec::new();
    let mut rest = body.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '{' {
            let end = rest.find('}').expect("an open comment");
            let comment = rest[1..end].trim().to_owned();
            let last = moves.last_mut().expect("a comment after a move");
            assert!(last.1.is_none(), "two comments after {}", last.0);
            last.1 = Some(comment);
            rest = &rest[end + 1..];
        } else if c == ' ' {
            rest = &rest[1..];
        } else {
            let end = rest.find([' ', '{']).unwrap_or(rest.len());
            let token = &rest[..end];
            let number = token.ends_with('.');
            let result = ["1-0", "0-1", "1/2-1/2", "*"].contains(&token);
            if !number && !result {
                moves.push((token.to_owned(), None));
            }
            rest = &rest[end..];
        }
    }
    moves
}

/// `[%clk h:mm:ss]` of a clock in milliseconds.
pub fn clk(ms: i64) -> String {
    let s = Duration::from_millis(ms.max(0) as u64).as_secs();
    format!("[%clk {}:{:02}:{:02}]", s / 3600, s / 60 % 60, s % 60)
}

/// The ECO code and name of the last position of the game `moves` (UCI,
/// from the start position) that data/openings.tsv names.
pub fn opening_of(moves: &[String]) -> Option<(String, String)> {
    let key = |pos: &Chess| pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/openings.tsv");
    let data = std::fs::read_to_string(path).unwrap();
    let mut named = HashMap::new();
    for line in data.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        let mut pos = Chess::default();
        for san in fields[2].split_whitespace().filter(|t| !t.ends_with('.')) {
            let m = san.parse::<San>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
        }
        named.insert(key(&pos), (fields[0].to_owned(), fields[1].to_owned()));
    }
    let mut pos = Chess::default();
    let mut found = None;
    for uci in moves {
        let m = uci.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(m);
        found = named.get(&key(&pos)).cloned().or(found);
    }
    found
}
