//! The token's scopes: which ones the configured features need, and which
//! a token lacks (Lichess's `POST /api/token/test` says what a token
//! has). `kaissa check` prints them; `kaissa run` logs them at start and
//! stops if the token cannot play at all.

use crate::config::Config;
use crate::lichess::model::TokenInfo;

/// A scope the configuration needs (any one of `scopes`: lila's
/// `Scoped(...)` lists the scopes an endpoint takes, and any one will do),
/// and what for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub scopes: &'static [&'static str],
    /// The feature that needs it, for the message.
    pub purpose: &'static str,
    /// Without it the bot cannot run at all.
    pub required: bool,
}

impl Need {
    /// The scopes for a message: `a` or `a or b`.
    pub fn names(&self) -> String {
        self.scopes.join(" or ")
    }
}

/// The scopes `config`'s features need. Creating challenges
/// (`Challenge.apiCreate`) and joining or leaving an arena
/// (`Tournament.apiJoin`, `apiWithdraw`) take `bot:play` as well as their
/// own scope in lila, so a bot token needs nothing more for them; joining
/// a team (`Team.join`) takes `team:write` only.
pub fn needed(config: &Config) -> Vec<Need> {
    let mut needs = vec![Need {
        scopes: &["bot:play"],
        purpose: "playing games and answering challenges",
        required: true,
    }];
    if config.matchmaking.enabled {
        needs.push(Need {
            scopes: &["bot:play", "challenge:write"],
            purpose: "matchmaking (creating challenges)",
            required: false,
        });
    }
    let arenas = &config.tournaments.arenas;
    if !arenas.is_empty() {
        needs.push(Need {
            scopes: &["bot:play", "tournament:write"],
            purpose: "joining the arenas of [tournaments]",
            required: false,
        });
    }
    if arenas.iter().any(|a| a.join_team) {
        needs.push(Need {
            scopes: &["team:write"],
            purpose: "joining the teams of [tournaments] (join_team)",
            required: false,
        });
    }
    needs
}

/// The needed scopes the token lacks (none of a need's scopes).
pub fn missing(token: &TokenInfo, config: &Config) -> Vec<Need> {
    needed(config)
        .into_iter()
        .filter(|n| !n.scopes.iter().any(|s| token.has_scope(s)))
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
        assert!(lacking[0].required && lacking[0].scopes == ["bot:play"]);
        // A bot token creates challenges and joins arenas; a team needs
        // its own scope.
        config.matchmaking.enabled = true;
        config.tournaments.arenas.push(crate::config::ArenaEntry {
            id: "hL7vMrFQ".to_owned(),
            team: Some("coders".to_owned()),
            join_team: true,
            ..Default::default()
        });
        let lacking: Vec<_> = missing(&token("bot:play"), &config)
            .into_iter()
            .map(|n| (n.names(), n.required))
            .collect();
        assert_eq!(lacking, [("team:write".to_owned(), false)]);
        assert_eq!(missing(&token("bot:play,team:write"), &config), []);
        // Without bot:play, the others are named with their alternative.
        let names: Vec<_> = missing(&token("challenge:write"), &config)
            .into_iter()
            .map(|n| n.names())
            .collect();
        assert_eq!(
            names,
            ["bot:play", "bot:play or tournament:write", "team:write"]
        );
    }
}
