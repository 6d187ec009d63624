//! `[sources]`: the move sources asked before the search (opening books,
//! Syzygy tables, Lichess's online tablebase and cloud evaluation), their
//! defaults and bounds, and opening them at start (a file that cannot be
//! used is an error naming its key).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid};
use super::validate::check_range;
use crate::engine::book::{self, Book, Books, Selection};
use crate::engine::sources::Sources;
use crate::engine::tablebase::Tablebases;
use crate::lichess::online::{Online, OnlineOptions};

/// `[sources]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesConfig {
    /// Polyglot books, asked in order. Unset: Debian's gnuchess-book if it
    /// is installed; empty: no book.
    pub book_files: Option<Vec<PathBuf>>,
    /// `weighted` (at random by weight) or `best` (the heaviest move).
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
    /// The longest an online source is waited for.
    pub online_timeout_ms: u64,
    /// Online sources are asked only with at least this much on our clock.
    pub online_min_clock_secs: u64,
}

impl Default for SourcesConfig {
    fn default() -> SourcesConfig {
        SourcesConfig {
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
            online_timeout_ms: 2000,
            online_min_clock_secs: 20,
        }
    }
}

impl SourcesConfig {
    /// The rules a single value cannot express.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if Selection::parse(&self.book_selection).is_none() {
            return Err(invalid(
                "sources.book_selection",
                format!("{:?}: use \"weighted\" or \"best\"", self.book_selection),
            ));
        }
        check_range("sources.book_depth", self.book_depth.into(), 0, 1000)?;
        match reqwest::Url::parse(&self.online_tablebase_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => {
                return Err(invalid(
                    "sources.online_tablebase_url",
                    format!("{:?} is not an http(s) URL", self.online_tablebase_url),
                ));
            }
        }
        check_range(
            "sources.online_tablebase_pieces",
            self.online_tablebase_pieces.into(),
            3,
            7,
        )?;
        check_range(
            "sources.cloud_eval_moves",
            self.cloud_eval_moves.into(),
            0,
            1000,
        )?;
        check_range(
            "sources.cloud_eval_min_depth",
            self.cloud_eval_min_depth.into(),
            0,
            100,
        )?;
        check_range(
            "sources.online_timeout_ms",
            self.online_timeout_ms,
            100,
            10_000,
        )?;
        check_range(
            "sources.online_min_clock_secs",
            self.online_min_clock_secs,
            0,
            3600,
        )
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

    /// Opens the books and tables (errors name the key).
    pub fn open(&self) -> Result<Sources, ConfigError> {
        let mut books = Vec::new();
        for path in self.book_paths() {
            books
                .push(Book::open(&path).map_err(|e| invalid("sources.book_files", e.to_string()))?);
        }
        let books = (!books.is_empty() && self.book_depth > 0).then(|| Books {
            books,
            selection: Selection::parse(&self.book_selection).unwrap_or(Selection::Weighted),
            max_plies: 2 * self.book_depth,
        });
        let tablebases = if self.syzygy_path.trim().is_empty() {
            None
        } else {
            let tables = Tablebases::open(&self.syzygy_path)
                .map_err(|e| invalid("sources.syzygy_path", e.to_string()))?;
            Some(Arc::new(tables))
        };
        Ok(Sources { books, tablebases })
    }

    /// The online sources, if any is on.
    pub fn online(&self, lichess_url: &str) -> Result<Option<Online>, ConfigError> {
        if !self.online_tablebase && !self.cloud_eval {
            return Ok(None);
        }
        let options = OnlineOptions {
            tablebase_url: self
                .online_tablebase
                .then(|| self.online_tablebase_url.clone()),
            tablebase_pieces: self.online_tablebase_pieces,
            cloud_eval_url: self.cloud_eval.then(|| lichess_url.to_owned()),
            cloud_eval_plies: 2 * self.cloud_eval_moves,
            cloud_eval_min_depth: self.cloud_eval_min_depth,
            timeout: Duration::from_millis(self.online_timeout_ms),
            min_clock: Duration::from_secs(self.online_min_clock_secs),
        };
        Online::new(options)
            .map(Some)
            .map_err(|e| invalid("sources", format!("cannot create the HTTP client: {e}")))
    }
}
