//! The token's scopes: which ones the configured features need, and which
//! a token lacks (Lichess's `POST /api/token/test` says what a token
//! has). `kaissa check` prints them; `kaissa run` logs them at start and
//! stops if the token cannot play at all.

use crate::config::Config;
use crate::lichess::model::TokenInfo;

/// A scope the configuration needs, and what for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub scope: &'static str,
    /// The feature that needs it, for the message.
    pub purpose: &'static str,
    /// Without it the bot cannot run at all.
    pub required: bool,
}

/// The scopes `config`'s features need.
pub fn needed(config: &Config) -> Vec<Need> {
    let mut needs = vec![Need {
        scope: "bot:play",
        purpose: "playing games and answering challenges",
        required: true,
    }];
    if config.matchmaking.enabled {
        needs.push(Need {
            scope: "challenge:write",
            purpose: "matchmaking (creating challenges)",
            required: false,
        });
    }
    let arenas = &config.tournaments.arenas;
    if !arenas.is_empty() {
        needs.push(Need {
            scope: "tournament:write",
            purpose: "joining the arenas of [tournaments]",
            required: false,
        });
    }
    if arenas.iter().any(|a| a.join_team) {
        needs.push(Need {
            scope: "team:write",
            purpose: "joining the teams of [tournaments] (join_team)",
            required: false,
        });
    }
    needs
}

/// The needed scopes the token lacks.
pub fn missing(token: &TokenInfo, config: &Config) -> Vec<Need> {
    needed(config)
        .into_iter()
        .filter(|n| !token.has_scope(n.scope))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(scopes: &str) -> TokenInfo {
        TokenInfo {
            user_id: Some("bot".to_owned()),
            scopes: Some(scopes.to_owned()),
            expires: None,
        }
    }

    #[test]
    fn what_is_missing_depends_on_the_features() {
        let mut config = Config::default();
        assert_eq!(missing(&token("bot:play"), &config), []);
        let lacking = missing(&token("challenge:read"), &config);
        assert_eq!(lacking.len(), 1);
        assert!(lacking[0].required && lacking[0].scope == "bot:play");
        config.matchmaking.enabled = true;
        let lacking: Vec<_> = missing(&token("bot:play"), &config)
            .into_iter()
            .map(|n| n.scope)
            .collect();
        assert_eq!(lacking, ["challenge:write"]);
        assert_eq!(missing(&token("bot:play,challenge:write"), &config), []);
        config.tournaments.arenas.push(crate::config::ArenaEntry {
            id: "hL7vMrFQ".to_owned(),
            team: Some("coders".to_owned()),
            join_team: true,
            ..Default::default()
        });
        let lacking: Vec<_> = missing(&token("bot:play,challenge:write"), &config)
            .into_iter()
            .map(|n| (n.scope, n.required))
            .collect();
        assert_eq!(
            lacking,
            [("tournament:write", false), ("team:write", false)]
        );
    }
}
