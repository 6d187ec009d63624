//! What the bot checks before it plays, written once: `kaissa check`
//! prints it and `kaissa run` logs it, so the two cannot drift.
//! [`local`]: the configuration's summary and warnings, and the move
//! sources opened (no network). [`engines`]: each external engine started
//! once, and what it plays. [`scopes()`]: the token's scopes against the
//! features configured. An error fails `kaissa check`; `kaissa run` stops
//! only for a token that cannot play at all (the rest is logged, and an
//! engine that cannot start has its games declined).

use std::sync::Arc;

use super::scopes;
use crate::bot::external::roster::Engines;
use crate::bot::game::lookup::MoveSources;
use crate::config::{Config, ConfigError, GameBook, cgroup_memory_max_mib};
use crate::lichess::model::TokenInfo;
use crate::lichess::online::{ExplorerDb, ExplorerSort};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// One line of the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    pub text: String,
}

impl Finding {
    fn info(text: impl Into<String>) -> Finding {
        Finding {
            level: Level::Info,
            text: text.into(),
        }
    }

    fn warning(text: impl Into<String>) -> Finding {
        Finding {
            level: Level::Warning,
            text: text.into(),
        }
    }

    fn error(text: impl Into<String>) -> Finding {
        Finding {
            level: Level::Error,
            text: text.into(),
        }
    }

    /// Printed by `kaissa check`: information on stdout, the rest on
    /// stderr with its level.
    pub fn print(&self) {
        match self.level {
            Level::Info => println!("{}", self.text),
            Level::Warning => eprintln!("warning: {}", self.text),
            Level::Error => eprintln!("error: {}", self.text),
        }
    }

    /// Logged by `kaissa run`.
    pub fn log(&self) {
        let text = self.text.trim_start();
        match self.level {
            Level::Info => tracing::info!("{text}"),
            Level::Warning => tracing::warn!("{text}"),
            Level::Error => tracing::error!("{text}"),
        }
    }
}

/// Who runs the checks: the memory the configuration can take is compared
/// with the service's cgroup limit; run by hand, `kaissa check` compares
/// it with the shipped unit's, the daemon with nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Check,
    Run,
}

/// The configuration's summary and warnings, and the move sources it
/// names, opened (a book or a table that cannot be read is an error).
pub fn local(config: &Config, caller: Caller) -> Result<(Vec<Finding>, MoveSources), ConfigError> {
    let mut found = vec![Finding::info("configuration: ok")];
    found.extend(
        config
            .summary()
            .into_iter()
            .map(|l| Finding::info(format!("  {l}"))),
    );
    let limit = cgroup_memory_max_mib();
    let memory = match (caller, limit) {
        (Caller::Check, _) | (Caller::Run, Some(_)) => config.memory_warning(limit),
        (Caller::Run, None) => None,
    };
    let warnings = [
        config.sharing_warning(),
        config.tournaments.retired_warning(),
        memory,
    ];
    found.extend(warnings.into_iter().flatten().map(Finding::warning));
    let sources = MoveSources {
        books: config.sources.open_books()?,
        local: config.sources.open()?,
        online: config.sources.online(&config.lichess.url)?,
    };
    found.extend(describe_sources(&sources).into_iter().map(Finding::info));
    Ok((found, sources))
}

/// Each external engine, started once: its name, what it plays, or why
/// it cannot be used (an error: its games would be declined).
pub async fn engines(engines: &Arc<Engines>) -> Vec<Finding> {
    let mut found: Vec<Finding> = engines
        .describe()
        .await
        .into_iter()
        .map(Finding::info)
        .collect();
    if engines.any_broken() {
        found.push(Finding::error(
            "an external engine cannot be used (see above): its games are declined",
        ));
    }
    found
}

/// The token's scopes, and those the configured features need that it
/// lacks: `bot:play` is an error, another a warning naming the feature.
pub fn scopes(info: &TokenInfo, config: &Config) -> Vec<Finding> {
    let mut found = vec![Finding::info(format!(
        "token scopes: {}",
        info.scopes.as_deref().unwrap_or("none")
    ))];
    for need in scopes::missing(info, config) {
        if need.required {
            found.push(Finding::error(format!(
                "the token lacks the {} scope, needed for {}; create a token with it",
                need.names(),
                need.purpose
            )));
        } else {
            found.push(Finding::warning(format!(
                "the token lacks the {} scope, needed for {}",
                need.names(),
                need.purpose
            )));
        }
    }
    found
}

/// A book, the games it is asked in and how it plays: `book NAME: FILE
/// (N entries; variants standard, fromPosition; speeds all; colours
/// both; weighted selection, first 20 moves, min weight 0)`.
fn describe_book(b: &GameBook) -> String {
    let list = |items: Vec<&str>, all: &str| {
        if items.is_empty() {
            all.to_owned()
        } else {
            items.join(", ")
        }
    };
    let p = &b.played;
    format!(
        "book {}: {} ({} entries; variants {}; speeds {}; colours {}; {} selection, first {} moves, min weight {})",
        b.name,
        p.book.path().display(),
        p.book.len(),
        list(b.variants.iter().map(|v| v.as_str()).collect(), "none"),
        list(b.speeds.iter().map(|s| s.as_str()).collect(), "all"),
        list(b.colors.iter().map(|c| c.as_str()).collect(), "both"),
        p.selection.as_str(),
        p.max_plies / 2,
        p.min_weight
    )
}

/// One line per move source.
fn describe_sources(sources: &MoveSources) -> Vec<String> {
    let mut lines = Vec::new();
    if sources.books.is_empty() {
        lines.push("book: none".to_owned());
    }
    for b in &sources.books {
        lines.push(describe_book(b));
    }
    match &sources.local.tablebases {
        Some(t) => lines.push(format!(
            "tablebases: {} files, up to {} pieces",
            t.files(),
            t.max_pieces()
        )),
        None => lines.push("tablebases: none".to_owned()),
    }
    if let Some(o) = &sources.online {
        let o = &o.options;
        let mut on = Vec::new();
        if let Some(url) = &o.tablebase_url {
            on.push(format!(
                "tablebase {url} (up to {} pieces)",
                o.tablebase_pieces
            ));
        }
        if o.tablebase_url.is_some() && o.tablebase_variants {
            on.push("tablebase for atomic and antichess".to_owned());
        }
        if let Some(e) = &o.explorer {
            let games = match &e.db {
                ExplorerDb::Masters => "masters' games".to_owned(),
                ExplorerDb::Lichess { speeds, ratings } => format!(
                    "Lichess games ({}; ratings {})",
                    speeds.join(" "),
                    ratings
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                ExplorerDb::Player { name } => format!("{name}'s games"),
            };
            let sort = match e.sort {
                ExplorerSort::Games => "most played",
                ExplorerSort::Score => "best score",
            };
            on.push(format!(
                "explorer {} ({games}, first {} moves, {sort}, >= {} games)",
                e.url,
                e.plies / 2,
                e.min_games
            ));
        }
        if let Some(c) = &o.chessdb {
            on.push(format!(
                "chessdb {} (first {} moves, depth >= {}{})",
                c.url,
                c.plies / 2,
                c.min_depth,
                if c.tablebase {
                    "; endings of 7 pieces"
                } else {
                    ""
                }
            ));
        }
        if o.cloud_eval_url.is_some() {
            on.push(format!(
                "cloud eval (first {} moves, depth >= {})",
                o.cloud_eval_plies / 2,
                o.cloud_eval_min_depth
            ));
        }
        lines.push(format!(
            "online sources: {} (timeout {} ms, with >= {} s on the clock)",
            on.join(", "),
            o.timeout.as_millis(),
            o.min_clock.as_secs()
        ));
    } else {
        lines.push("online sources: off".to_owned());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token as `POST /api/token/test` describes it.
    fn token(scopes: &str) -> TokenInfo {
        serde_json::from_value(serde_json::json!({"userId": "bot", "scopes": scopes})).unwrap()
    }

    #[test]
    fn a_token_without_bot_play_is_an_error_a_missing_feature_scope_a_warning() {
        let mut config = Config::default();
        config.matchmaking.enabled = true;
        let found = scopes(&token("challenge:read"), &config);
        let levels: Vec<Level> = found.iter().map(|f| f.level).collect();
        assert_eq!(
            levels,
            [Level::Info, Level::Error, Level::Warning],
            "{found:?}"
        );
        assert!(found[1].text.contains("bot:play"), "{found:?}");
        assert!(found[2].text.contains("matchmaking"), "{found:?}");
        let found = scopes(&token("bot:play"), &config);
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn the_configuration_and_its_sources_are_summed_up() {
        let mut config = Config::default();
        // No book: the machine's installed one must not matter.
        config.sources.book_files = Some(Vec::new());
        let (found, _) = local(&config, Caller::Run).unwrap();
        assert!(found.iter().any(|f| f.text == "book: none"), "{found:?}");
        assert_eq!(found[0].text, "configuration: ok");
        assert!(
            found.iter().any(|f| f.text == "tablebases: none"),
            "{found:?}"
        );
        assert!(found.iter().all(|f| f.level != Level::Error), "{found:?}");
    }
}
