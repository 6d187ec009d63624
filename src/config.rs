//! The daemon's configuration: loading, defaults, validation, and the
//! Lichess token.
//!
//! Sources, later ones winning: built-in defaults, the TOML file (every key
//! is documented with its default in `config/kaissa.toml`), then the
//! environment: `KAISSA_<SECTION>__<KEY>`, e.g. `KAISSA_BOT__CONCURRENCY=3`
//! or `KAISSA_CHALLENGE__VARIANTS=standard,chess960` (lists are
//! comma-separated).
//!
//! Every mistake names its key: an unknown key (`unknown key
//! challenge.min_bse`), a value of the wrong type (`challenge.min_base:
//! expected an integer, found string "abc"`), a rule broken
//! (`challenge.min_base: 600 is more than challenge.max_base (300)`).
//!
//! The token is not part of the configuration and never comes from the
//! command line: [`Config::token`] reads `LICHESS_BOT_TOKEN`, else the file
//! `lichess.token_file`, else `$CREDENTIALS_DIRECTORY/lichess-token`
//! (systemd `LoadCredential=`).

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::lichess::model::{Speed, TimeControl, VariantKey};
use crate::lichess::{ClientOptions, Token, TokenError};

/// Prefix of the environment overrides.
pub const ENV_PREFIX: &str = "KAISSA";
/// Environment variable holding the token.
pub const TOKEN_ENV: &str = "LICHESS_BOT_TOKEN";
/// Name of the systemd credential holding the token.
pub const TOKEN_CREDENTIAL: &str = "lichess-token";

/// The sections, to catch `KAISSA_BOT_CONCURRENCY` (one underscore).
const SECTIONS: [&str; 5] = ["lichess", "engine", "challenge", "bot", "chat"];
/// Keys whose environment value is a comma-separated list.
const LIST_KEYS: [&str; 4] = [
    "challenge.variants",
    "challenge.speeds",
    "challenge.block_list",
    "challenge.allow_list",
];

/// The longest chat line Lichess takes.
const MAX_CHAT_LEN: usize = 140;

/// What went wrong while loading the configuration or the token.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    /// A key that does not exist (a typo, or a key of another version).
    #[error("unknown key {key}")]
    UnknownKey { key: String },
    /// A value of the wrong type or breaking a rule.
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
    /// Any other problem reported by the loader.
    #[error("configuration: {0}")]
    Other(String),
    /// No token anywhere.
    #[error(
        "no Lichess token: set {TOKEN_ENV}, or lichess.token_file, or run under systemd with \
         LoadCredential={TOKEN_CREDENTIAL}:<file> (the token is never read from the command line)"
    )]
    NoToken,
    /// The token file could not be read.
    #[error("token file {}: {source}", path.display())]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The token found is not usable. `origin` says where it came from.
    #[error("token from {origin}: {error}")]
    BadToken { origin: String, error: TokenError },
}

fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub lichess: LichessConfig,
    pub engine: EngineConfig,
    pub challenge: ChallengeConfig,
    pub bot: BotConfig,
    pub chat: ChatConfig,
}

/// `[lichess]`: the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LichessConfig {
    /// Base URL of the server.
    pub url: String,
    /// File holding the token (used when `LICHESS_BOT_TOKEN` is unset).
    pub token_file: Option<PathBuf>,
    /// A stream with no byte (keep-alives included) for this long is dead.
    pub stream_timeout_secs: u64,
    /// How long every non-urgent request waits after an HTTP 429.
    pub rate_limit_pause_secs: u64,
}

impl Default for LichessConfig {
    fn default() -> LichessConfig {
        LichessConfig {
            url: "https://lichess.org".to_owned(),
            token_file: None,
            stream_timeout_secs: 20,
            rate_limit_pause_secs: 60,
        }
    }
}

impl LichessConfig {
    /// `stream_timeout_secs` as a duration.
    pub fn stream_timeout(&self) -> Duration {
        Duration::from_secs(self.stream_timeout_secs)
    }

    /// `rate_limit_pause_secs` as a duration.
    pub fn rate_limit_pause(&self) -> Duration {
        Duration::from_secs(self.rate_limit_pause_secs)
    }

    /// Options for [`crate::lichess::Client::new`].
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            base_url: self.url.clone(),
            rate_limit_pause: self.rate_limit_pause(),
            stream_silence_timeout: self.stream_timeout(),
            ..ClientOptions::default()
        }
    }
}

/// `[engine]`: the engine's resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Transposition table size in MiB, all games together: each game's
    /// engine gets `hash_mb / bot.concurrency` (at least 1).
    pub hash_mb: u32,
    /// The most search threads running at once, all games together.
    pub threads: u32,
    /// Subtracted from our clock for each move (network and lag).
    pub move_overhead_ms: u64,
    /// Think on the opponent's time.
    pub ponder: bool,
    /// Where the hash files are kept; none means not kept.
    pub state_dir: Option<PathBuf>,
    /// Stop each search at this depth (0: no limit). Weakens the bot, or
    /// keeps tests fast.
    pub max_depth: u32,
    /// Stop each search after about this many nodes (0: no limit).
    pub max_nodes: u64,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            hash_mb: 64,
            threads: 1,
            move_overhead_ms: 200,
            ponder: false,
            state_dir: None,
            max_depth: 0,
            max_nodes: 0,
        }
    }
}

impl EngineConfig {
    /// `move_overhead_ms` as a duration.
    pub fn move_overhead(&self) -> Duration {
        Duration::from_millis(self.move_overhead_ms)
    }

    /// The transposition table of one game's engine, in MiB.
    pub fn hash_mb_per_game(&self, concurrency: u32) -> usize {
        (self.hash_mb / concurrency.max(1)).max(1) as usize
    }
}

/// A variant the bot can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlayableVariant {
    Standard,
    Chess960,
    FromPosition,
}

impl PlayableVariant {
    /// The Lichess variant key.
    pub fn key(self) -> VariantKey {
        match self {
            PlayableVariant::Standard => VariantKey::Standard,
            PlayableVariant::Chess960 => VariantKey::Chess960,
            PlayableVariant::FromPosition => VariantKey::FromPosition,
        }
    }
}

/// A speed the bot can accept (bots cannot play ultraBullet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AcceptedSpeed {
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
}

impl AcceptedSpeed {
    /// The Lichess speed.
    pub fn speed(self) -> Speed {
        match self {
            AcceptedSpeed::Bullet => Speed::Bullet,
            AcceptedSpeed::Blitz => Speed::Blitz,
            AcceptedSpeed::Rapid => Speed::Rapid,
            AcceptedSpeed::Classical => Speed::Classical,
            AcceptedSpeed::Correspondence => Speed::Correspondence,
        }
    }
}

/// `[challenge]`: which challenges to accept. The policy itself lives in
/// the daemon; these are its inputs, with small helpers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChallengeConfig {
    /// Accepted variants; any other is declined.
    pub variants: Vec<PlayableVariant>,
    /// Accepted speeds.
    pub speeds: Vec<AcceptedSpeed>,
    /// Initial clock time bounds, seconds.
    pub min_base: u32,
    pub max_base: u32,
    /// Increment bounds, seconds.
    pub min_increment: u32,
    pub max_increment: u32,
    /// Accept games without a real-time clock (correspondence, unlimited).
    pub correspondence: bool,
    /// Accept rated games.
    pub rated: bool,
    /// Accept casual games.
    pub casual: bool,
    /// Accept challenges from bots.
    pub accept_bots: bool,
    /// Accept challenges from bots only.
    pub only_bots: bool,
    /// Challenger rating bounds (a challenger without rating passes).
    pub min_rating: u32,
    pub max_rating: u32,
    /// Users always declined (ids, any case).
    pub block_list: Vec<String>,
    /// When not empty, only these users are accepted (ids, any case).
    pub allow_list: Vec<String>,
}

impl Default for ChallengeConfig {
    fn default() -> ChallengeConfig {
        ChallengeConfig {
            variants: vec![
                PlayableVariant::Standard,
                PlayableVariant::Chess960,
                PlayableVariant::FromPosition,
            ],
            speeds: vec![
                AcceptedSpeed::Bullet,
                AcceptedSpeed::Blitz,
                AcceptedSpeed::Rapid,
                AcceptedSpeed::Classical,
                AcceptedSpeed::Correspondence,
            ],
            min_base: 0,
            max_base: 10800,
            min_increment: 0,
            max_increment: 180,
            correspondence: false,
            rated: true,
            casual: true,
            accept_bots: true,
            only_bots: false,
            min_rating: 0,
            max_rating: 4000,
            block_list: Vec::new(),
            allow_list: Vec::new(),
        }
    }
}

impl ChallengeConfig {
    /// Whether the variant is accepted.
    pub fn accepts_variant(&self, key: VariantKey) -> bool {
        self.variants.iter().any(|v| v.key() == key)
    }

    /// Whether the speed is accepted. Correspondence also needs
    /// `correspondence = true`.
    pub fn accepts_speed(&self, speed: Speed) -> bool {
        self.speeds.iter().any(|s| s.speed() == speed)
            && (speed != Speed::Correspondence || self.correspondence)
    }

    /// Whether the time control is within bounds: a clock within
    /// base/increment bounds, or no clock when `correspondence` is on.
    pub fn accepts_time_control(&self, time_control: &TimeControl) -> bool {
        match time_control {
            TimeControl::Clock {
                limit, increment, ..
            } => self.base_range().contains(limit) && self.increment_range().contains(increment),
            TimeControl::Correspondence { .. } | TimeControl::Unlimited => self.correspondence,
            TimeControl::Unknown => false,
        }
    }

    /// Whether rated (`true`) or casual (`false`) games are accepted.
    pub fn accepts_mode(&self, rated: bool) -> bool {
        if rated { self.rated } else { self.casual }
    }

    /// `min_base..=max_base`.
    pub fn base_range(&self) -> RangeInclusive<u32> {
        self.min_base..=self.max_base
    }

    /// `min_increment..=max_increment`.
    pub fn increment_range(&self) -> RangeInclusive<u32> {
        self.min_increment..=self.max_increment
    }

    /// `min_rating..=max_rating`.
    pub fn rating_range(&self) -> RangeInclusive<u32> {
        self.min_rating..=self.max_rating
    }

    /// Whether the user is on the block list.
    pub fn is_blocked(&self, user_id: &str) -> bool {
        self.block_list
            .iter()
            .any(|id| id.eq_ignore_ascii_case(user_id))
    }

    /// Whether the allow list lets the user in (an empty list lets anyone).
    pub fn is_allowed(&self, user_id: &str) -> bool {
        self.allow_list.is_empty()
            || self
                .allow_list
                .iter()
                .any(|id| id.eq_ignore_ascii_case(user_id))
    }
}

/// `[bot]`: how the daemon plays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BotConfig {
    /// Games played at once.
    pub concurrency: u32,
    /// Abort a game whose opponent has not made a first move after this.
    pub abort_time_secs: u64,
    /// A challenge we accepted whose game has not started after this
    /// gives its slot back.
    pub game_start_timeout_secs: u64,
    /// On shutdown, how long running games may go on before being
    /// resigned or aborted.
    pub shutdown_deadline_secs: u64,
    /// Where finished games are written as PGN; none means not written.
    pub pgn_dir: Option<PathBuf>,
    /// Accept a draw offer when the position is dead equal.
    pub accept_draw: bool,
    /// Offer a draw when the position is dead equal.
    pub offer_draw: bool,
    /// "Dead equal": the score stays within this many centipawns of 0...
    pub draw_score_cp: u32,
    /// ...for this many of our moves in a row.
    pub draw_moves: u32,
    /// Resign lost positions.
    pub resign_enabled: bool,
    /// "Lost": the score stays at or below minus this many centipawns...
    pub resign_score_cp: u32,
    /// ...for this many of our moves in a row.
    pub resign_moves: u32,
    /// Accept takeback requests.
    pub accept_takebacks: bool,
}

impl Default for BotConfig {
    fn default() -> BotConfig {
        BotConfig {
            concurrency: 1,
            abort_time_secs: 30,
            game_start_timeout_secs: 20,
            shutdown_deadline_secs: 300,
            pgn_dir: None,
            accept_draw: true,
            offer_draw: true,
            draw_score_cp: 10,
            draw_moves: 10,
            resign_enabled: true,
            resign_score_cp: 1000,
            resign_moves: 5,
            accept_takebacks: false,
        }
    }
}

impl BotConfig {
    /// `abort_time_secs` as a duration.
    pub fn abort_time(&self) -> Duration {
        Duration::from_secs(self.abort_time_secs)
    }

    /// `game_start_timeout_secs` as a duration.
    pub fn game_start_timeout(&self) -> Duration {
        Duration::from_secs(self.game_start_timeout_secs)
    }

    /// `shutdown_deadline_secs` as a duration.
    pub fn shutdown_deadline(&self) -> Duration {
        Duration::from_secs(self.shutdown_deadline_secs)
    }
}

/// `[chat]`: what the bot says. `{me}` and `{opponent}` are replaced by the
/// names; an empty message is not sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChatConfig {
    /// To the opponent when a game starts.
    pub greeting: String,
    /// To spectators when a game starts.
    pub greeting_spectator: String,
    /// To the opponent when a game ends.
    pub goodbye: String,
    /// To spectators when a game ends.
    pub goodbye_spectator: String,
}

impl Default for ChatConfig {
    fn default() -> ChatConfig {
        ChatConfig {
            greeting: "Hi {opponent}, I am {me}, a chess engine. Good luck!".to_owned(),
            greeting_spectator: "{me} plays {opponent}. Enjoy the game!".to_owned(),
            goodbye: "Good game, {opponent}!".to_owned(),
            goodbye_spectator: "Thanks for watching!".to_owned(),
        }
    }
}

impl ChatConfig {
    /// Fills `{me}` and `{opponent}` in, cutting to 140 characters.
    ///
    /// ```
    /// use kaissa::config::ChatConfig;
    /// assert_eq!(ChatConfig::render("gg {opponent}, {me} out", "kaissa", "bob"), "gg bob, kaissa out");
    /// ```
    pub fn render(template: &str, me: &str, opponent: &str) -> String {
        let text = template.replace("{me}", me).replace("{opponent}", opponent);
        text.chars().take(MAX_CHAT_LEN).collect()
    }
}

/// Where the token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `LICHESS_BOT_TOKEN`.
    Environment,
    /// `lichess.token_file`.
    File(PathBuf),
    /// `$CREDENTIALS_DIRECTORY/lichess-token`.
    Credential(PathBuf),
}

/// A token and what is worth knowing about it.
#[derive(Debug, Clone)]
pub struct LoadedToken {
    pub token: Token,
    pub source: TokenSource,
    /// Things to log at warn level (e.g. a token file others can read).
    pub warnings: Vec<String>,
}

impl Config {
    /// Loads the defaults, then `path` (TOML) if given, then the `KAISSA_*`
    /// environment, and validates the result.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        // Not `std::env::vars()`: it panics on a variable that is not UTF-8.
        let mut env = Vec::new();
        for (name, value) in std::env::vars_os() {
            let Ok(name) = name.into_string() else {
                continue;
            };
            match value.into_string() {
                Ok(value) => env.push((name, value)),
                Err(_) if name.starts_with(&format!("{ENV_PREFIX}_")) => {
                    return Err(ConfigError::Other(format!(
                        "environment variable {name} is not valid UTF-8"
                    )));
                }
                Err(_) => {}
            }
        }
        Config::load_with_env(path, env)
    }

    /// [`Config::load`] with the environment given as pairs, for tests and
    /// callers that manage the environment themselves.
    pub fn load_with_env<I>(path: Option<&Path>, env: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let mut builder = config::Config::builder();
        if let Some(path) = path {
            // Read it ourselves: clear I/O errors, and a file of any name.
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            let origin = path.display().to_string();
            builder = builder
                .add_source(config::File::from_str(&text, config::FileFormat::Toml).required(true));
            // Syntax errors are reported before anything else, with the path.
            builder
                .build_cloned()
                .map_err(|e| translate(e, Some(&origin)))?;
        }
        let (vars, lists) = split_env(env)?;
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .source(Some(vars)),
        );
        for (key, items) in lists {
            builder = builder
                .set_override(key.as_str(), items)
                .map_err(|e| translate(e, None))?;
        }
        let raw = builder.build().map_err(|e| translate(e, None))?;
        let config: Config = raw.try_deserialize().map_err(|e| translate(e, None))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the rules a single value cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let l = &self.lichess;
        match reqwest::Url::parse(&l.url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => {
                return Err(invalid(
                    "lichess.url",
                    format!("{:?} is not an http(s) URL", l.url),
                ));
            }
        }
        if l.stream_timeout_secs == 0 {
            return Err(invalid("lichess.stream_timeout_secs", "must be at least 1"));
        }
        if l.token_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Err(invalid("lichess.token_file", "is empty"));
        }

        let e = &self.engine;
        if !(1..=1 << 20).contains(&e.hash_mb) {
            return Err(invalid(
                "engine.hash_mb",
                format!("{} is out of range 1..=1048576", e.hash_mb),
            ));
        }
        if !(1..=1024).contains(&e.threads) {
            return Err(invalid(
                "engine.threads",
                format!("{} is out of range 1..=1024", e.threads),
            ));
        }

        let c = &self.challenge;
        check_order(
            "challenge.min_base",
            c.min_base,
            "challenge.max_base",
            c.max_base,
        )?;
        check_order(
            "challenge.min_increment",
            c.min_increment,
            "challenge.max_increment",
            c.max_increment,
        )?;
        check_order(
            "challenge.min_rating",
            c.min_rating,
            "challenge.max_rating",
            c.max_rating,
        )?;
        if c.only_bots && !c.accept_bots {
            return Err(invalid(
                "challenge.only_bots",
                "is true but challenge.accept_bots is false: nobody could play",
            ));
        }
        if !c.rated && !c.casual {
            return Err(invalid(
                "challenge.rated",
                "and challenge.casual are both false: nobody could play",
            ));
        }
        for (key, list) in [
            ("challenge.block_list", &c.block_list),
            ("challenge.allow_list", &c.allow_list),
        ] {
            if let Some(bad) = list.iter().find(|id| !is_user_id(id)) {
                return Err(invalid(key, format!("{bad:?} is not a Lichess username")));
            }
        }

        let b = &self.bot;
        if b.concurrency == 0 {
            return Err(invalid("bot.concurrency", "must be at least 1"));
        }
        if b.abort_time_secs == 0 {
            return Err(invalid("bot.abort_time_secs", "must be at least 1"));
        }
        if b.game_start_timeout_secs == 0 {
            return Err(invalid("bot.game_start_timeout_secs", "must be at least 1"));
        }
        if b.draw_moves == 0 {
            return Err(invalid("bot.draw_moves", "must be at least 1"));
        }
        if b.resign_moves == 0 {
            return Err(invalid("bot.resign_moves", "must be at least 1"));
        }

        let chat = &self.chat;
        for (key, template) in [
            ("chat.greeting", &chat.greeting),
            ("chat.greeting_spectator", &chat.greeting_spectator),
            ("chat.goodbye", &chat.goodbye),
            ("chat.goodbye_spectator", &chat.goodbye_spectator),
        ] {
            check_template(key, template)?;
        }
        Ok(())
    }

    /// The token from the process environment or files; logs where it came
    /// from and any warning (never the token).
    pub fn token(&self) -> Result<Token, ConfigError> {
        let loaded = self.load_token(&|name| std::env::var_os(name))?;
        for warning in &loaded.warnings {
            tracing::warn!("{warning}");
        }
        tracing::debug!(source = ?loaded.source, "lichess token loaded");
        Ok(loaded.token)
    }

    /// Finds the token: `LICHESS_BOT_TOKEN`, else `lichess.token_file`,
    /// else `$CREDENTIALS_DIRECTORY/lichess-token`. `env` reads a variable.
    pub fn load_token(
        &self,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<LoadedToken, ConfigError> {
        if let Some(value) = env(TOKEN_ENV).filter(|v| !v.is_empty()) {
            let value = value.into_string().map_err(|_| ConfigError::BadToken {
                origin: TOKEN_ENV.to_owned(),
                error: TokenError::InvalidCharacters,
            })?;
            let token = Token::new(value).map_err(|error| ConfigError::BadToken {
                origin: TOKEN_ENV.to_owned(),
                error,
            })?;
            return Ok(LoadedToken {
                token,
                source: TokenSource::Environment,
                warnings: Vec::new(),
            });
        }
        if let Some(path) = &self.lichess.token_file {
            let (token, warnings) = read_token_file(path)?;
            return Ok(LoadedToken {
                token,
                source: TokenSource::File(path.clone()),
                warnings,
            });
        }
        if let Some(dir) = env("CREDENTIALS_DIRECTORY").filter(|v| !v.is_empty()) {
            let path = PathBuf::from(dir).join(TOKEN_CREDENTIAL);
            if path.exists() {
                let (token, warnings) = read_token_file(&path)?;
                return Ok(LoadedToken {
                    token,
                    source: TokenSource::Credential(path),
                    warnings,
                });
            }
        }
        Err(ConfigError::NoToken)
    }
}

fn check_order(min_key: &str, min: u32, max_key: &str, max: u32) -> Result<(), ConfigError> {
    if min > max {
        Err(invalid(
            min_key,
            format!("{min} is more than {max_key} ({max})"),
        ))
    } else {
        Ok(())
    }
}

fn is_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 30
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_template(key: &str, template: &str) -> Result<(), ConfigError> {
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start..];
        let placeholder = after.find('}').map(|end| &after[..=end]);
        match placeholder {
            Some("{me}") | Some("{opponent}") => {}
            _ => {
                let shown: String = after.chars().take(20).collect();
                return Err(invalid(
                    key,
                    format!("unknown placeholder at {shown:?}: use {{me}} or {{opponent}}"),
                ));
            }
        }
        rest = &after[1..];
    }
    let len = template.chars().count();
    if len > MAX_CHAT_LEN {
        return Err(invalid(
            key,
            format!("is {len} characters long; Lichess takes {MAX_CHAT_LEN}"),
        ));
    }
    Ok(())
}

/// Reads a token file, with a warning when group or others can read it.
fn read_token_file(path: &Path) -> Result<(Token, Vec<String>), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    let token = Token::new(text).map_err(|error| ConfigError::BadToken {
        origin: path.display().to_string(),
        error,
    })?;
    let mut warnings = Vec::new();
    if let Some(mode) = loose_mode(path) {
        warnings.push(format!(
            "token file {} is readable by group or others (mode {mode:o}); chmod 600 it",
            path.display()
        ));
    }
    Ok((token, warnings))
}

/// The permission bits of a file that group or others can read.
#[cfg(unix)]
fn loose_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_mode(_path: &Path) -> Option<u32> {
    None
}

type EnvSplit = (HashMap<String, String>, Vec<(String, Vec<String>)>);

/// Keeps the `KAISSA_<SECTION>__<KEY>` variables, with the list keys
/// parsed apart: the loader would read `123` as a number, not a list.
fn split_env<I>(env: I) -> Result<EnvSplit, ConfigError>
where
    I: IntoIterator<Item = (String, String)>,
{
    let prefix = format!("{ENV_PREFIX}_");
    let mut vars = HashMap::new();
    let mut lists = Vec::new();
    for (name, value) in env {
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let rest = rest.to_ascii_lowercase();
        let Some((section, key)) = rest.split_once("__") else {
            if let Some(section) = SECTIONS.iter().find(|s| rest.starts_with(&format!("{s}_"))) {
                let key = &rest[section.len() + 1..];
                return Err(ConfigError::Other(format!(
                    "environment variable {name}: separate section and key with two \
                     underscores ({ENV_PREFIX}_{}__{})",
                    section.to_ascii_uppercase(),
                    key.to_ascii_uppercase()
                )));
            }
            // Not ours (e.g. KAISSA_LOG).
            continue;
        };
        let key = format!("{section}.{}", key.replace("__", "."));
        if LIST_KEYS.contains(&key.as_str()) {
            let items = value
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect();
            lists.push((key, items));
        } else {
            vars.insert(name, value);
        }
    }
    Ok((vars, lists))
}

/// Turns the loader's errors into ones that name the key.
fn translate(error: config::ConfigError, origin: Option<&str>) -> ConfigError {
    match error {
        config::ConfigError::FileParse { cause, .. } => ConfigError::Syntax {
            path: PathBuf::from(origin.unwrap_or("configuration file")),
            message: cause.to_string(),
        },
        config::ConfigError::Type {
            unexpected,
            expected,
            key,
            ..
        } => {
            let key = key.unwrap_or_else(|| "(top level)".to_owned());
            invalid(&key, format!("expected {expected}, found {unexpected}"))
        }
        config::ConfigError::At { error, key, .. } => {
            let key = key.unwrap_or_default();
            match *error {
                config::ConfigError::Message(message) => from_message(&message, &key),
                other => {
                    let inner = translate(other, origin);
                    match inner {
                        ConfigError::Invalid {
                            key: inner_key,
                            message,
                        } if !key.is_empty() => invalid(&join_key(&key, &inner_key), message),
                        ConfigError::UnknownKey { key: inner_key } => ConfigError::UnknownKey {
                            key: join_key(&key, &inner_key),
                        },
                        other => other,
                    }
                }
            }
        }
        config::ConfigError::Message(message) => from_message(&message, ""),
        config::ConfigError::NotFound(key) => invalid(&key, "missing"),
        other => ConfigError::Other(other.to_string()),
    }
}

fn join_key(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty() || inner == "(top level)") {
        (true, _) => inner.to_owned(),
        (false, true) => outer.to_owned(),
        (false, false) => format!("{outer}.{inner}"),
    }
}

/// serde's messages: "unknown field `x`, expected one of ..." and
/// "unknown variant `x`, expected one of ...".
fn from_message(message: &str, key: &str) -> ConfigError {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or_default();
        let full = join_key(key, field);
        if full == "lichess.token" {
            return invalid(
                "lichess.token",
                format!(
                    "the token is never read from the configuration; use {TOKEN_ENV} or \
                     lichess.token_file"
                ),
            );
        }
        return ConfigError::UnknownKey { key: full };
    }
    if let Some((_, value)) = message.split_once("does not have variant constructor ") {
        let base = key.split('[').next().unwrap_or(key);
        let expected = match base {
            "challenge.variants" => "standard, chess960, fromPosition",
            "challenge.speeds" => "bullet, blitz, rapid, classical, correspondence",
            _ => "see config/kaissa.toml",
        };
        return invalid(
            key,
            format!(
                "unknown value {:?}; expected one of: {expected}",
                value.trim()
            ),
        );
    }
    if key.is_empty() {
        ConfigError::Other(message.to_owned())
    } else {
        invalid(key, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::io::Write;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn load_str(toml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(toml.as_bytes()).unwrap();
        Config::load_with_env(Some(file.path()), env(vars))
    }

    fn error_text(result: Result<Config, ConfigError>) -> String {
        result.expect_err("expected an error").to_string()
    }

    #[test]
    fn defaults_without_file() {
        let config = Config::load_with_env(None, env(&[])).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.lichess.url, "https://lichess.org");
        assert_eq!(config.lichess.stream_timeout(), Duration::from_secs(20));
        assert_eq!(config.lichess.rate_limit_pause(), Duration::from_secs(60));
        assert_eq!(config.bot.concurrency, 1);
        config.validate().unwrap();
    }

    #[test]
    fn load_reads_the_process_environment() {
        // No KAISSA_<SECTION>__ variables are expected in a test run.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kaissa.toml");
        Config::load(Some(&path)).unwrap();
    }

    #[test]
    fn shipped_file_documents_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kaissa.toml");
        let config = Config::load_with_env(Some(&path), env(&[])).unwrap();
        assert_eq!(config, Config::default());
    }

    #[test]
    fn file_values_and_env_overrides() {
        let config = load_str(
            "[bot]\nconcurrency = 2\n[challenge]\nvariants = [\"standard\"]\nmin_base = 60\n",
            &[
                ("KAISSA_BOT__CONCURRENCY", "3"),
                ("KAISSA_ENGINE__PONDER", "true"),
                ("KAISSA_CHALLENGE__SPEEDS", "blitz, rapid"),
                ("KAISSA_CHALLENGE__BLOCK_LIST", "12345,Bob"),
                ("KAISSA_CHALLENGE__ALLOW_LIST", ""),
                ("KAISSA_LICHESS__URL", "http://127.0.0.1:9999"),
                ("KAISSA_CHAT__GOODBYE", "42"),
                ("KAISSA_LOG", "debug"),
                ("OTHER_BOT__CONCURRENCY", "9"),
            ],
        )
        .unwrap();
        assert_eq!(config.bot.concurrency, 3);
        assert!(config.engine.ponder);
        assert_eq!(config.challenge.min_base, 60);
        assert_eq!(config.challenge.variants, vec![PlayableVariant::Standard]);
        assert_eq!(
            config.challenge.speeds,
            vec![AcceptedSpeed::Blitz, AcceptedSpeed::Rapid]
        );
        assert_eq!(config.challenge.block_list, vec!["12345", "Bob"]);
        assert!(config.challenge.allow_list.is_empty());
        assert_eq!(config.lichess.url, "http://127.0.0.1:9999");
        assert_eq!(config.chat.goodbye, "42");
        assert!(config.challenge.is_blocked("bob"));
    }

    #[test]
    fn single_underscore_env_is_an_error() {
        let text = error_text(Config::load_with_env(
            None,
            env(&[("KAISSA_BOT_CONCURRENCY", "3")]),
        ));
        assert!(text.contains("KAISSA_BOT__CONCURRENCY"), "{text}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let text = error_text(load_str("[challenge]\nmin_bse = 3\n", &[]));
        assert_eq!(text, "unknown key challenge.min_bse");
        let text = error_text(load_str("colour = 3\n", &[]));
        assert_eq!(text, "unknown key colour");
        let text = error_text(load_str("[enigne]\nthreads = 3\n", &[]));
        assert_eq!(text, "unknown key enigne");
        let text = error_text(Config::load_with_env(
            None,
            env(&[("KAISSA_BOT__CONCURENCY", "3")]),
        ));
        assert_eq!(text, "unknown key bot.concurency");
    }

    #[test]
    fn token_in_config_is_refused_without_echo() {
        let text = error_text(load_str("[lichess]\ntoken = \"lip_secret123\"\n", &[]));
        assert!(text.starts_with("lichess.token:"), "{text}");
        assert!(!text.contains("lip_secret123"), "{text}");
    }

    #[test]
    fn bad_values_are_named() {
        let text = error_text(load_str("[challenge]\nmin_base = \"abc\"\n", &[]));
        assert!(text.starts_with("challenge.min_base: expected"), "{text}");
        let text = error_text(Config::load_with_env(
            None,
            env(&[("KAISSA_CHALLENGE__MIN_BASE", "abc")]),
        ));
        assert!(text.starts_with("challenge.min_base: expected"), "{text}");
        let text = error_text(load_str("[bot]\nconcurrency = -1\n", &[]));
        assert!(text.starts_with("bot.concurrency:"), "{text}");
        let text = error_text(load_str("[engine]\nponder = \"maybe\"\n", &[]));
        assert!(text.starts_with("engine.ponder:"), "{text}");
        let text = error_text(load_str("[challenge]\nvariants = [\"crazyhouse\"]\n", &[]));
        assert_eq!(
            text,
            "challenge.variants[0]: unknown value \"crazyhouse\"; expected one of: standard, \
             chess960, fromPosition"
        );
        let text = error_text(Config::load_with_env(
            None,
            env(&[("KAISSA_CHALLENGE__VARIANTS", "standard,atomic")]),
        ));
        assert!(
            text.starts_with("challenge.variants[1]: unknown value \"atomic\""),
            "{text}"
        );
        let text = error_text(load_str("[challenge]\nspeeds = [\"ultraBullet\"]\n", &[]));
        assert!(text.starts_with("challenge.speeds"), "{text}");
        let text = error_text(load_str("[bot]\nconcurrency = 3\nconcurrency = 4\n", &[]));
        assert!(text.contains("concurrency"), "{text}");
    }

    #[test]
    fn syntax_error_names_the_file() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"[bot\nconcurrency = 1\n").unwrap();
        let text = error_text(Config::load_with_env(Some(file.path()), env(&[])));
        assert!(
            text.starts_with(&file.path().display().to_string()),
            "{text}"
        );
    }

    #[test]
    fn missing_file_is_an_error() {
        let text = error_text(Config::load_with_env(
            Some(Path::new("/nonexistent/kaissa.toml")),
            env(&[]),
        ));
        assert!(text.starts_with("/nonexistent/kaissa.toml:"), "{text}");
    }

    #[test]
    fn validation_names_the_key() {
        let cases = [
            (
                "[challenge]\nmin_base = 600\nmax_base = 300\n",
                "challenge.min_base: 600 is more than challenge.max_base (300)",
            ),
            (
                "[challenge]\nmin_increment = 5\nmax_increment = 2\n",
                "challenge.min_increment:",
            ),
            (
                "[challenge]\nmin_rating = 2500\nmax_rating = 2000\n",
                "challenge.min_rating:",
            ),
            (
                "[bot]\nconcurrency = 0\n",
                "bot.concurrency: must be at least 1",
            ),
            ("[engine]\nthreads = 0\n", "engine.threads:"),
            ("[engine]\nhash_mb = 0\n", "engine.hash_mb:"),
            ("[lichess]\nurl = \"lichess.org\"\n", "lichess.url:"),
            (
                "[lichess]\nstream_timeout_secs = 0\n",
                "lichess.stream_timeout_secs:",
            ),
            (
                "[challenge]\naccept_bots = false\nonly_bots = true\n",
                "challenge.only_bots:",
            ),
            (
                "[challenge]\nrated = false\ncasual = false\n",
                "challenge.rated",
            ),
            (
                "[challenge]\nblock_list = [\"a b\"]\n",
                "challenge.block_list:",
            ),
            ("[chat]\ngreeting = \"hi {them}\"\n", "chat.greeting:"),
            ("[chat]\ngoodbye = \"{opponent\"\n", "chat.goodbye:"),
        ];
        for (toml, expected) in cases {
            let text = error_text(load_str(toml, &[]));
            assert!(text.starts_with(expected), "{toml:?} gave {text:?}");
        }
        let long = format!("[chat]\ngoodbye_spectator = \"{}\"\n", "x".repeat(141));
        let text = error_text(load_str(&long, &[]));
        assert!(text.starts_with("chat.goodbye_spectator:"), "{text}");
    }

    #[test]
    fn challenge_helpers() {
        let mut c = ChallengeConfig::default();
        assert!(c.accepts_variant(VariantKey::Chess960));
        assert!(!c.accepts_variant(VariantKey::Atomic));
        assert!(c.accepts_speed(Speed::Blitz));
        assert!(!c.accepts_speed(Speed::UltraBullet));
        assert!(!c.accepts_speed(Speed::Correspondence));
        assert!(!c.accepts_time_control(&TimeControl::Unlimited));
        c.correspondence = true;
        assert!(c.accepts_speed(Speed::Correspondence));
        assert!(c.accepts_time_control(&TimeControl::Unlimited));
        c.max_base = 300;
        let clock = |limit, increment| TimeControl::Clock {
            limit,
            increment,
            show: None,
        };
        assert!(c.accepts_time_control(&clock(300, 2)));
        assert!(!c.accepts_time_control(&clock(600, 2)));
        assert!(c.is_allowed("anyone"));
        c.allow_list = vec!["Alice".into()];
        assert!(c.is_allowed("alice"));
        assert!(!c.is_allowed("bob"));
        assert!(c.accepts_mode(true) && c.accepts_mode(false));
    }

    #[test]
    fn chat_render() {
        assert_eq!(
            ChatConfig::render("Hi {opponent}, I am {me}", "kaissa", "bob"),
            "Hi bob, I am kaissa"
        );
        let long = ChatConfig::render(&"{opponent}".repeat(20), "me", "abcdefghij");
        assert_eq!(long.chars().count(), 140);
    }

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn token_from_env_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_fromfile\n").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file.clone());
        let loaded = config
            .load_token(&|name| (name == TOKEN_ENV).then(|| OsString::from("lip_fromenv")))
            .unwrap();
        assert_eq!(loaded.source, TokenSource::Environment);
        assert_eq!(loaded.token, Token::new("lip_fromenv").unwrap());

        let loaded = config.load_token(&no_env).unwrap();
        assert_eq!(loaded.source, TokenSource::File(file));
        assert_eq!(loaded.token, Token::new("lip_fromfile").unwrap());
    }

    #[test]
    fn token_from_credentials_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TOKEN_CREDENTIAL), "lip_cred").unwrap();
        let dir_name = dir.path().as_os_str().to_owned();
        let loaded = Config::default()
            .load_token(&|name| (name == "CREDENTIALS_DIRECTORY").then(|| dir_name.clone()))
            .unwrap();
        assert_eq!(
            loaded.source,
            TokenSource::Credential(dir.path().join(TOKEN_CREDENTIAL))
        );
    }

    #[test]
    fn no_token_is_a_clear_error() {
        let error = Config::default().load_token(&no_env).unwrap_err();
        assert!(matches!(error, ConfigError::NoToken));
        assert!(error.to_string().contains(TOKEN_ENV));
        let mut config = Config::default();
        config.lichess.token_file = Some(PathBuf::from("/nonexistent/token"));
        let error = config.load_token(&no_env).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("token file /nonexistent/token")
        );
    }

    #[test]
    fn bad_token_error_does_not_echo_it() {
        let error = Config::default()
            .load_token(&|name| (name == TOKEN_ENV).then(|| OsString::from("lip secret")))
            .unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn loose_token_file_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_x").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file.clone());

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(config.load_token(&no_env).unwrap().warnings.is_empty());

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let loaded = config.load_token(&no_env).unwrap();
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("640"), "{:?}", loaded.warnings);
        assert!(!loaded.warnings[0].contains("lip_x"));
    }

    #[test]
    fn config_debug_has_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_hidden").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file);
        let loaded = config.load_token(&no_env).unwrap();
        let text = format!("{config:?} {loaded:?}");
        assert!(!text.contains("lip_hidden"), "{text}");
    }
}
