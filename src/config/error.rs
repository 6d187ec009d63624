//! What can go wrong while loading the configuration or the token, and
//! the translation of the loader's errors into ones that name the key.

use std::path::PathBuf;

use crate::lichess::TokenError;

use super::token::{TOKEN_CREDENTIAL, TOKEN_ENV};

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

pub(super) fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// Turns the loader's errors into ones that name the key.
pub(super) fn translate(error: config::ConfigError, origin: Option<&str>) -> ConfigError {
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
        // `challenge.variants`, `engines.NAME.variants[2]`: the last name.
        let base = key.split('[').next().unwrap_or(key);
        let expected = match base.rsplit('.').next().unwrap_or(base) {
            "variants" => {
                "standard, chess960, fromPosition, crazyhouse, antichess, atomic, horde, \
                 kingOfTheHill, racingKings, threeCheck"
            }
            "speeds" => "bullet, blitz, rapid, classical, correspondence",
            "colors" => "white, black",
            "pgn_comments" => "eval, clock, depth, pv",
            "pgn_file" => "game, opponent, all",
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
