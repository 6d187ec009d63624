//! `[engines.NAME]`: external UCI engines (Fairy-Stockfish for Lichess's
//! variants, Stockfish, any UCI engine) and which games each plays. The
//! built-in engine plays every game no section claims, in the variants it
//! knows (standard, Chess960, from position); a section claims the games
//! of its `variants` that also match its `speeds`, `opponents` and
//! `rated` filters. Several sections claiming a game: the first by name
//! plays it. Choosing and probing the engines is the bot's work
//! (`bot::external::roster`); this is their description and its rules.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid};
use super::sections::{AcceptedSpeed, PlayableVariant};
use super::validate::check_name;
use crate::lichess::model::{Speed, VariantKey};

/// One `[engines.NAME]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExternalEngineConfig {
    /// The engine's executable.
    pub command: PathBuf,
    /// Its command-line arguments.
    pub args: Vec<String>,
    /// The directory it runs in; none: the daemon's.
    pub working_dir: Option<PathBuf>,
    /// UCI options sent after `uci` (`setoption name KEY value VALUE`).
    pub options: BTreeMap<String, UciValue>,
    /// Think on the opponent's time (`go ponder`/`ponderhit`).
    pub ponder: bool,
    /// Subtracted from our clock for each move (network and lag); unset:
    /// `engine.move_overhead_ms`, the built-in engine's.
    pub move_overhead_ms: Option<u64>,
    /// The variants it plays.
    pub variants: Vec<PlayableVariant>,
    /// The speeds it plays; empty: every speed.
    pub speeds: Vec<AcceptedSpeed>,
    /// Stop each search at this depth / after about this many nodes (0:
    /// no limit), besides the clock: weakens the engine, or keeps tests
    /// fast.
    pub max_depth: u32,
    pub max_nodes: u64,
    /// Against whom: `any`, `humans` or `bots`.
    pub opponents: Opponents,
    /// Which games: `any`, `rated` or `casual`.
    pub rated: RatedFilter,
}

impl Default for ExternalEngineConfig {
    fn default() -> ExternalEngineConfig {
        ExternalEngineConfig {
            command: PathBuf::new(),
            args: Vec::new(),
            working_dir: None,
            options: BTreeMap::new(),
            ponder: false,
            move_overhead_ms: None,
            variants: Vec::new(),
            speeds: Vec::new(),
            max_depth: 0,
            max_nodes: 0,
            opponents: Opponents::Any,
            rated: RatedFilter::Any,
        }
    }
}

/// A UCI option's value: TOML strings, integers and booleans are all
/// sent as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UciValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl std::fmt::Display for UciValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UciValue::Bool(b) => write!(f, "{b}"),
            UciValue::Int(i) => write!(f, "{i}"),
            UciValue::Text(s) => f.write_str(s),
        }
    }
}

/// Whom an engine plays, or a draw or resign rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Opponents {
    Any,
    Humans,
    Bots,
}

impl Opponents {
    /// Whether an opponent (a bot or not) is among these.
    pub fn admits(self, bot: bool) -> bool {
        match self {
            Opponents::Any => true,
            Opponents::Humans => !bot,
            Opponents::Bots => bot,
        }
    }
}

/// Which games an engine plays by mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RatedFilter {
    Any,
    Rated,
    Casual,
}

/// What decides who plays a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameKind {
    pub variant: VariantKey,
    pub speed: Speed,
    pub against_bot: bool,
    pub rated: bool,
}

impl ExternalEngineConfig {
    /// `move_overhead_ms` as a duration, else `default` (the built-in
    /// engine's).
    pub fn move_overhead(&self, default: Duration) -> Duration {
        self.move_overhead_ms.map_or(default, Duration::from_millis)
    }

    /// Whether this section claims games of `kind`.
    pub fn claims(&self, kind: GameKind) -> bool {
        self.variants.iter().any(|v| v.key() == kind.variant)
            && (self.speeds.is_empty() || self.speeds.iter().any(|s| s.speed() == kind.speed))
            && self.opponents.admits(kind.against_bot)
            && match self.rated {
                RatedFilter::Any => true,
                RatedFilter::Rated => kind.rated,
                RatedFilter::Casual => !kind.rated,
            }
    }

    /// Whether this section plays `variant` in some game.
    pub fn plays(&self, variant: PlayableVariant) -> bool {
        self.variants.contains(&variant)
    }
}

/// The variants the built-in engine plays.
pub fn built_in_plays(variant: PlayableVariant) -> bool {
    matches!(
        variant,
        PlayableVariant::Standard | PlayableVariant::Chess960 | PlayableVariant::FromPosition
    )
}

/// The section that plays games of `kind`, if any (the first by name).
pub fn engine_for(
    engines: &BTreeMap<String, ExternalEngineConfig>,
    kind: GameKind,
) -> Option<(&str, &ExternalEngineConfig)> {
    engines
        .iter()
        .find(|(_, e)| e.claims(kind))
        .map(|(name, e)| (name.as_str(), e))
}

/// The rules of each section: a command, a name the logs can carry, at
/// least one variant, an overhead in range.
pub(super) fn validate(
    engines: &BTreeMap<String, ExternalEngineConfig>,
) -> Result<(), ConfigError> {
    for (name, e) in engines {
        let key = |k: &str| format!("engines.{name}.{k}");
        check_name(&format!("engines.{name}"), name, "an engine")?;
        if e.command.as_os_str().is_empty() {
            return Err(invalid(
                &key("command"),
                "is missing: the engine's executable",
            ));
        }
        if e.variants.is_empty() {
            return Err(invalid(
                &key("variants"),
                "is empty: the engine would play nothing",
            ));
        }
        if let Some(ms) = e.move_overhead_ms
            && ms > super::MOVE_OVERHEAD_MAX_MS
        {
            return Err(invalid(
                &key("move_overhead_ms"),
                format!("{ms} is out of range 0..={}", super::MOVE_OVERHEAD_MAX_MS),
            ));
        }
        if e.working_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(invalid(&key("working_dir"), "is empty"));
        }
    }
    Ok(())
}

/// Every variant of `list` (the key `key`) has an engine: the built-in
/// one, or a section that plays it.
pub(super) fn check_served(
    key: &str,
    list: &[PlayableVariant],
    engines: &BTreeMap<String, ExternalEngineConfig>,
) -> Result<(), ConfigError> {
    for &v in list {
        if !built_in_plays(v) && !engines.values().any(|e| e.plays(v)) {
            return Err(invalid(
                key,
                format!(
                    "{} needs an engine: add it to the variants of an [engines.NAME] section \
                     (Fairy-Stockfish plays every Lichess variant)",
                    v.key().as_str()
                ),
            ));
        }
    }
    Ok(())
}
