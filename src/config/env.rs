//! Environment overrides: `KAISSA_<SECTION>__<KEY>`, lists
//! comma-separated.

use std::collections::HashMap;

use super::error::ConfigError;

/// Prefix of the environment overrides.
pub const ENV_PREFIX: &str = "KAISSA";

/// The sections, to catch `KAISSA_BOT_CONCURRENCY` (one underscore).
const SECTIONS: [&str; 10] = [
    "lichess",
    "engine",
    "engines",
    "challenge",
    "bot",
    "matchmaking",
    "chat",
    "web",
    "sources",
    "tournaments",
];
/// Keys whose environment value is a comma-separated list.
const LIST_KEYS: [&str; 16] = [
    "bot.pgn_comments",
    "challenge.variants",
    "challenge.speeds",
    "challenge.queue_first",
    "challenge.humans.variants",
    "challenge.humans.speeds",
    "challenge.bots.variants",
    "challenge.bots.speeds",
    "challenge.block_list",
    "challenge.allow_list",
    "challenge.online_block_lists",
    "matchmaking.time_controls",
    "matchmaking.variants",
    "sources.book_files",
    "sources.explorer_speeds",
    "sources.explorer_ratings",
];

/// The process environment as UTF-8 pairs; an override that is not UTF-8
/// is an error, any other such variable is skipped.
pub(super) fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
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
    Ok(env)
}

pub(super) type EnvSplit = (HashMap<String, String>, Vec<(String, Vec<String>)>);

/// Keeps the `KAISSA_<SECTION>__<KEY>` variables, with the list keys
/// parsed apart: the loader would read `123` as a number, not a list.
pub(super) fn split_env<I>(env: I) -> Result<EnvSplit, ConfigError>
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
