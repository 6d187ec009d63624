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
//!
//! The parts: `sections` (the sections, their defaults and small
//! accessors), `engines` (`[engines.NAME]`: external UCI engines and the
//! games each plays), `sources` (`[sources]`: books, tables, online sources,
//! and opening them), `online` (the online sources' keys of `[sources]`
//! and their client), `terms` (`[challenge.humans]` and
//! `[challenge.bots]`: the games each kind of challenger may ask for),
//! `tournaments` (`[tournaments]`: the arenas joined), `env` (the environment overrides), `validate` (the rules
//! across values), `token` (finding the token) and `error` (every
//! mistake, named by its key). The challenge rules that use
//! `[challenge]` are the policy's, in `bot::policy::challenge`.

mod engines;
mod env;
mod error;
mod online;
mod sections;
mod sources;
mod summary;
mod terms;
mod token;
mod tournaments;
mod validate;

#[cfg(test)]
mod tests;

pub use engines::{
    ExternalEngineConfig, GameKind, Opponents, RatedFilter, UciValue, built_in_plays, engine_for,
};
pub use env::ENV_PREFIX;
pub use error::ConfigError;
pub use sections::{
    AcceptedSpeed, BotConfig, ChallengeConfig, ChatConfig, Config, EngineConfig, LichessConfig,
    MatchmakingConfig, PgnComment, PgnFile, PlayableVariant, QueueGroup, QueueOrder, Selection,
    WebConfig, parse_challenge_time, parse_time_control,
};
pub use sources::{BookConfig, GameBook, SourcesConfig};
pub use summary::cgroup_memory_max_mib;
pub use terms::{ChallengeTerms, Challenger};
pub use token::{LoadedToken, TOKEN_CREDENTIAL, TOKEN_ENV, TokenSource};
pub use tournaments::{ArenaEntry, TournamentsConfig, is_tournament_id};
pub use validate::is_user_id;

/// The most a move overhead may be, `[engine]`'s or an external
/// engine's, in ms.
pub const MOVE_OVERHEAD_MAX_MS: u64 = 10_000;

use std::path::Path;

use env::{process_env, split_env};
use error::translate;

impl Config {
    /// Loads the defaults, then `path` (TOML) if given, then the `KAISSA_*`
    /// environment, and validates the result.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_with_env(path, process_env()?)
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
}
