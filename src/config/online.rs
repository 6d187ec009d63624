//! The online sources' keys of `[sources]`: Lichess's tablebase server
//! (standard chess up to 8 pieces, atomic, antichess), its cloud
//! evaluation, its opening explorer (masters, Lichess's games by speed and
//! rating band, or one player's) and ChessDB; their rules, and the client
//! that asks them ([`SourcesConfig::online`]).

use std::time::Duration;

use super::error::{ConfigError, invalid};
use super::sources::SourcesConfig;
use super::validate::{check_range, is_user_id};
use crate::lichess::online::{
    ChessDbOptions, ExplorerDb, ExplorerOptions, ExplorerSort, Online, OnlineOptions,
};

/// The rating bands of Lichess's explorer.
const EXPLORER_RATINGS: [u32; 9] = [0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500];
/// The speeds of Lichess's explorer.
const EXPLORER_SPEEDS: [&str; 6] = [
    "ultraBullet",
    "bullet",
    "blitz",
    "rapid",
    "classical",
    "correspondence",
];

/// An http(s) URL, or an error naming `key`.
fn check_url(key: &str, url: &str) -> Result<(), ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        _ => Err(invalid(key, format!("{url:?} is not an http(s) URL"))),
    }
}

impl SourcesConfig {
    /// The online keys' rules.
    pub(super) fn validate_online(&self) -> Result<(), ConfigError> {
        check_url("sources.online_tablebase_url", &self.online_tablebase_url)?;
        check_url("sources.explorer_url", &self.explorer_url)?;
        check_url("sources.chessdb_url", &self.chessdb_url)?;
        check_range(
            "sources.online_tablebase_pieces",
            self.online_tablebase_pieces.into(),
            3,
            8,
        )?;
        for (key, value, max) in [
            ("sources.cloud_eval_moves", self.cloud_eval_moves, 1000),
            (
                "sources.cloud_eval_min_depth",
                self.cloud_eval_min_depth,
                100,
            ),
            ("sources.explorer_moves", self.explorer_moves, 1000),
            (
                "sources.explorer_min_games",
                self.explorer_min_games,
                1_000_000,
            ),
            ("sources.chessdb_moves", self.chessdb_moves, 1000),
            ("sources.chessdb_min_depth", self.chessdb_min_depth, 100),
        ] {
            check_range(key, value.into(), 0, max)?;
        }
        self.explorer_db()?;
        explorer_sort(&self.explorer_sort)?;
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

    /// The explorer's database, or an error naming its key.
    fn explorer_db(&self) -> Result<ExplorerDb, ConfigError> {
        Ok(match self.explorer_db.as_str() {
            "masters" => ExplorerDb::Masters,
            "lichess" => {
                if let Some(bad) = self
                    .explorer_speeds
                    .iter()
                    .find(|s| !EXPLORER_SPEEDS.contains(&s.as_str()))
                {
                    return Err(invalid(
                        "sources.explorer_speeds",
                        format!("{bad:?}: use {}", EXPLORER_SPEEDS.join(", ")),
                    ));
                }
                if let Some(bad) = self
                    .explorer_ratings
                    .iter()
                    .find(|r| !EXPLORER_RATINGS.contains(r))
                {
                    return Err(invalid(
                        "sources.explorer_ratings",
                        format!(
                            "{bad} is not a rating band of the explorer: use {:?}",
                            EXPLORER_RATINGS
                        ),
                    ));
                }
                ExplorerDb::Lichess {
                    speeds: self.explorer_speeds.clone(),
                    ratings: self.explorer_ratings.clone(),
                }
            }
            "player" => {
                if !is_user_id(&self.explorer_player) {
                    return Err(invalid(
                        "sources.explorer_player",
                        format!(
                            "{:?} is not a Lichess username (explorer_db = \"player\" needs one)",
                            self.explorer_player
                        ),
                    ));
                }
                ExplorerDb::Player {
                    name: self.explorer_player.clone(),
                }
            }
            other => {
                return Err(invalid(
                    "sources.explorer_db",
                    format!("{other:?}: use \"masters\", \"lichess\" or \"player\""),
                ));
            }
        })
    }

    /// The online sources, if any is on.
    pub fn online(&self, lichess_url: &str) -> Result<Option<Online>, ConfigError> {
        if !self.online_tablebase && !self.cloud_eval && !self.explorer && !self.chessdb {
            return Ok(None);
        }
        let explorer = match self.explorer {
            true => Some(ExplorerOptions {
                url: self.explorer_url.clone(),
                db: self.explorer_db()?,
                min_games: self.explorer_min_games,
                sort: explorer_sort(&self.explorer_sort)?,
                plies: 2 * self.explorer_moves,
            }),
            false => None,
        };
        let options = OnlineOptions {
            tablebase_url: self
                .online_tablebase
                .then(|| self.online_tablebase_url.clone()),
            tablebase_pieces: self.online_tablebase_pieces,
            tablebase_variants: self.online_tablebase_variants,
            cloud_eval_url: self.cloud_eval.then(|| lichess_url.to_owned()),
            cloud_eval_plies: 2 * self.cloud_eval_moves,
            cloud_eval_min_depth: self.cloud_eval_min_depth,
            explorer,
            chessdb: self.chessdb.then(|| ChessDbOptions {
                url: self.chessdb_url.clone(),
                plies: 2 * self.chessdb_moves,
                min_depth: self.chessdb_min_depth,
                tablebase: self.chessdb_tablebase,
            }),
            timeout: Duration::from_millis(self.online_timeout_ms),
            min_clock: Duration::from_secs(self.online_min_clock_secs),
        };
        Online::new(options)
            .map(Some)
            .map_err(|e| invalid("sources", format!("cannot create the HTTP client: {e}")))
    }
}

/// `explorer_sort`'s value, or an error naming the key.
fn explorer_sort(text: &str) -> Result<ExplorerSort, ConfigError> {
    match text {
        "games" => Ok(ExplorerSort::Games),
        "score" => Ok(ExplorerSort::Score),
        other => Err(invalid(
            "sources.explorer_sort",
            format!("{other:?}: use \"games\" or \"score\""),
        )),
    }
}
