//! `[sources]`: the move sources asked before the search (opening books,
//! Syzygy tables, Lichess's online tablebase and cloud evaluation), their
//! defaults and bounds, and opening them at start (a file that cannot be
//! used is an error naming its key).
//!
//! The books: each `[sources.books.NAME]` is one Polyglot file with the
//! games it is asked in (variants, speeds, our colour) and how its moves
//! are played (selection, depth, lightest move); the files of the older
//! `book_files` key come after them as the book `book_files`, for
//! standard chess and games from a position, with `book_selection` and
//! `book_depth`. A game asks the books that admit it, by name, then
//! `book_files`: the first with a legal move for the position answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid};
use super::sections::{AcceptedSpeed, PlayableVariant};
use super::validate::{check_name, check_range};
use crate::engine::book::{self, Book, PlayedBook, Selection};
use crate::engine::sources::Sources;
use crate::engine::tablebase::Tablebases;
use crate::lichess::model::{Color, Speed, VariantKey};

/// The name the `book_files` book goes by.
const BOOK_FILES: &str = "book_files";

/// `[sources]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesConfig {
    /// `[sources.books.NAME]`: books with their own games and rules,
    /// asked by name, before `book_files`.
    pub books: BTreeMap<String, BookConfig>,
    /// Polyglot books for standard chess and games from a position, asked
    /// in order after `books`. Unset: Debian's gnuchess-book if it is
    /// installed; empty: no book.
    pub book_files: Option<Vec<PathBuf>>,
    /// `weighted` (at random by weight), `best` (the heaviest move) or
    /// `uniform` (any at the same odds).
    pub book_selection: String,
    /// Book moves during the first this many moves of a game (0: none).
    pub book_depth: u32,
    /// Syzygy table directories, separated by `:`; empty: no tables.
    pub syzygy_path: String,
    /// Ask Lichess's tablebase server when no local table covers the
    /// position.
    pub online_tablebase: bool,
    pub online_tablebase_url: String,
    /// The most pieces (kings included) the server is asked about.
    pub online_tablebase_pieces: u32,
    /// Ask Lichess's cloud evaluation as an online book.
    pub cloud_eval: bool,
    /// During the first this many moves of a game.
    pub cloud_eval_moves: u32,
    /// Only evaluations at least this deep are played.
    pub cloud_eval_min_depth: u32,
    /// Also ask the tablebase server in atomic and antichess games.
    pub online_tablebase_variants: bool,
    /// Lichess's opening explorer as an online book (see `config::online`).
    pub explorer: bool,
    pub explorer_url: String,
    /// `masters`, `lichess` or `player`.
    pub explorer_db: String,
    /// For `lichess`: the speeds and rating bands counted.
    pub explorer_speeds: Vec<String>,
    pub explorer_ratings: Vec<u32>,
    /// For `player`: whose games.
    pub explorer_player: String,
    pub explorer_min_games: u32,
    /// `games` (the most played) or `score` (the best scoring).
    pub explorer_sort: String,
    pub explorer_moves: u32,
    /// ChessDB as an online book, and in endings as a tablebase.
    pub chessdb: bool,
    pub chessdb_url: String,
    pub chessdb_moves: u32,
    pub chessdb_min_depth: u32,
    pub chessdb_tablebase: bool,
    /// The longest an online source is waited for.
    pub online_timeout_ms: u64,
    /// Online sources are asked only with at least this much on our clock.
    pub online_min_clock_secs: u64,
}

impl Default for SourcesConfig {
    fn default() -> SourcesConfig {
        SourcesConfig {
            books: BTreeMap::new(),
            book_files: None,
            book_selection: "weighted".to_owned(),
            book_depth: 20,
            syzygy_path: String::new(),
            online_tablebase: false,
            online_tablebase_url: "https://tablebase.lichess.org".to_owned(),
            online_tablebase_pieces: 7,
            cloud_eval: false,
            cloud_eval_moves: 20,
            cloud_eval_min_depth: 20,
            online_tablebase_variants: true,
            explorer: false,
            explorer_url: "https://explorer.lichess.ovh".to_owned(),
            explorer_db: "masters".to_owned(),
            explorer_speeds: vec![
                "blitz".to_owned(),
                "rapid".to_owned(),
                "classical".to_owned(),
            ],
            explorer_ratings: vec![2200, 2500],
            explorer_player: String::new(),
            explorer_min_games: 10,
            explorer_sort: "games".to_owned(),
            explorer_moves: 15,
            chessdb: false,
            chessdb_url: "https://www.chessdb.cn/cdb.php".to_owned(),
            chessdb_moves: 20,
            chessdb_min_depth: 20,
            chessdb_tablebase: false,
            online_timeout_ms: 2000,
            online_min_clock_secs: 20,
        }
    }
}

/// One `[sources.books.NAME]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BookConfig {
    /// The Polyglot file.
    pub file: PathBuf,
    /// The variants whose games ask it.
    pub variants: Vec<PlayableVariant>,
    /// The speeds; empty: every speed.
    pub speeds: Vec<AcceptedSpeed>,
    /// Our colours; empty: both.
    pub colors: Vec<Color>,
    /// `weighted`, `best` or `uniform`, as `book_selection`.
    pub selection: String,
    /// Book moves during the first this many moves of a game (0: none).
    pub depth: u32,
    /// Moves of a lower weight are left out (0: none).
    pub min_weight: u32,
}

impl Default for BookConfig {
    fn default() -> BookConfig {
        BookConfig {
            file: PathBuf::new(),
            variants: vec![PlayableVariant::Standard],
            speeds: Vec::new(),
            colors: Vec::new(),
            selection: "weighted".to_owned(),
            depth: 20,
            min_weight: 0,
        }
    }
}

/// A book opened for the bot's games: its name, the games it is asked in
/// (empty speeds or colours: all) and how its moves are played.
#[derive(Debug)]
pub struct GameBook {
    pub name: String,
    pub variants: Vec<VariantKey>,
    pub speeds: Vec<Speed>,
    pub colors: Vec<Color>,
    pub played: PlayedBook,
}

impl GameBook {
    /// Whether a game of `variant` and `speed` in which we play `us` asks
    /// this book.
    pub fn admits(&self, variant: VariantKey, speed: Speed, us: Color) -> bool {
        self.variants.contains(&variant)
            && (self.speeds.is_empty() || self.speeds.contains(&speed))
            && (self.colors.is_empty() || self.colors.contains(&us))
    }
}

/// `selection` (the value of `key`) as a selection.
fn selection(key: &str, selection: &str) -> Result<Selection, ConfigError> {
    Selection::parse(selection).ok_or_else(|| {
        invalid(
            key,
            format!("{selection:?}: use \"weighted\", \"best\" or \"uniform\""),
        )
    })
}

impl SourcesConfig {
    /// The rules a single value cannot express.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        selection("sources.book_selection", &self.book_selection)?;
        check_range("sources.book_depth", self.book_depth.into(), 0, 1000)?;
        for (name, b) in &self.books {
            let key = |k: &str| format!("sources.books.{name}.{k}");
            check_name(&format!("sources.books.{name}"), name, "a book")?;
            if b.file.as_os_str().is_empty() {
                return Err(invalid(&key("file"), "is missing: the book's .bin file"));
            }
            if b.variants.is_empty() {
                return Err(invalid(
                    &key("variants"),
                    "is empty: no game would ask the book",
                ));
            }
            selection(&key("selection"), &b.selection)?;
            check_range(&key("depth"), b.depth.into(), 0, 1000)?;
            check_range(&key("min_weight"), b.min_weight.into(), 0, u16::MAX.into())?;
        }
        self.validate_online()
    }

    /// The book files to open: the configured ones, or the default book
    /// if the key is unset and it is installed.
    pub fn book_paths(&self) -> Vec<PathBuf> {
        match &self.book_files {
            Some(files) => files.clone(),
            None => {
                let default = Path::new(book::DEFAULT_BOOK);
                if default.is_file() {
                    vec![default.to_owned()]
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// Opens the books, in the order they are asked: `[sources.books.NAME]`
    /// by name, then the files of `book_files`. A book of depth 0 is
    /// opened (a file that cannot be read is an error naming its key) but
    /// left out.
    pub fn open_books(&self) -> Result<Vec<GameBook>, ConfigError> {
        let open =
            |path: &Path, key: &str| Book::open(path).map_err(|e| invalid(key, e.to_string()));
        let mut books = Vec::new();
        for (name, b) in &self.books {
            let key = format!("sources.books.{name}");
            books.push(GameBook {
                name: name.clone(),
                variants: b.variants.iter().map(|v| v.key()).collect(),
                speeds: b.speeds.iter().map(|s| s.speed()).collect(),
                colors: b.colors.clone(),
                played: PlayedBook {
                    book: open(&b.file, &format!("{key}.file"))?,
                    selection: selection(&format!("{key}.selection"), &b.selection)?,
                    max_plies: 2 * b.depth,
                    min_weight: u16::try_from(b.min_weight).unwrap_or(u16::MAX),
                },
            });
        }
        for path in self.book_paths() {
            books.push(GameBook {
                name: BOOK_FILES.to_owned(),
                variants: vec![VariantKey::Standard, VariantKey::FromPosition],
                speeds: Vec::new(),
                colors: Vec::new(),
                played: PlayedBook {
                    book: open(&path, "sources.book_files")?,
                    selection: selection("sources.book_selection", &self.book_selection)?,
                    max_plies: 2 * self.book_depth,
                    min_weight: 0,
                },
            });
        }
        books.retain(|b| b.played.max_plies > 0);
        Ok(books)
    }

    /// Opens the tables (errors name the key); the bot's books are
    /// [`open_books`](Self::open_books)'.
    pub fn open(&self) -> Result<Sources, ConfigError> {
        let tablebases = if self.syzygy_path.trim().is_empty() {
            None
        } else {
            let tables = Tablebases::open(&self.syzygy_path)
                .map_err(|e| invalid("sources.syzygy_path", e.to_string()))?;
            Some(Arc::new(tables))
        };
        Ok(Sources {
            books: Vec::new(),
            tablebases,
        })
    }
}
