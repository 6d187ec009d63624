//! `[tournaments]`: the arena tournaments the bot joins on its own (the
//! standing entries), and how it plays in them. Joining,
//! pairing and leaving are the bot's work (`bot::policy::arenas`); this is
//! their description and its rules.

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, invalid};

/// `[tournaments]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TournamentsConfig {
    /// `[[tournaments.arenas]]`: arenas joined at start (and again after
    /// a pause), until they finish.
    pub arenas: Vec<ArenaEntry>,
    /// Retired: Lichess pairs the bots of an arena by itself, so the bot
    /// no longer asks again. Still read, so an old file loads; `kaissa
    /// check` and the start say it is ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_every_secs: Option<u64>,
    /// How often the state of each arena is read (start, end, a pause).
    pub check_every_secs: u64,
    /// Withdraw from every arena on a stop (a restart keeps them).
    pub leave_at_shutdown: bool,
    /// Offer and accept draws in arena games (the bot's usual rules then
    /// apply). Off: arena points come from wins.
    pub draws: bool,
}

impl Default for TournamentsConfig {
    fn default() -> TournamentsConfig {
        TournamentsConfig {
            arenas: Vec::new(),
            pair_every_secs: None,
            check_every_secs: 60,
            leave_at_shutdown: true,
            draws: false,
        }
    }
}

/// One `[[tournaments.arenas]]` entry (its `Debug` hides the password).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArenaEntry {
    /// The tournament id (the last part of its URL).
    pub id: String,
    /// The team to play for, in a team battle.
    pub team: Option<String>,
    /// The arena's password or the entry code its organizer gave.
    pub password: Option<String>,
    /// Join `team` first (needs the `team:write` scope); off: the bot
    /// must be a member already.
    pub join_team: bool,
}

impl std::fmt::Debug for ArenaEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArenaEntry")
            .field("id", &self.id)
            .field("team", &self.team)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("join_team", &self.join_team)
            .finish()
    }
}

impl TournamentsConfig {
    /// A warning for the retired keys that are set.
    pub fn retired_warning(&self) -> Option<String> {
        self.pair_every_secs.map(|_| {
            "tournaments.pair_every_secs is ignored: Lichess pairs the bots of an arena by \
             itself (remove the key)"
                .to_owned()
        })
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(10..=3600).contains(&self.check_every_secs) {
            return Err(invalid(
                "tournaments.check_every_secs",
                format!("{} is out of range 10..=3600", self.check_every_secs),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, arena) in self.arenas.iter().enumerate() {
            let key = |k: &str| format!("tournaments.arenas[{i}].{k}");
            if !is_tournament_id(&arena.id) {
                return Err(invalid(
                    &key("id"),
                    format!(
                        "{:?} is not a tournament id (8 letters and digits, as in lichess.org/tournament/ID)",
                        arena.id
                    ),
                ));
            }
            if !seen.insert(arena.id.as_str()) {
                return Err(invalid(&key("id"), format!("{} is listed twice", arena.id)));
            }
            if let Some(team) = &arena.team
                && !crate::lichess::client::is_valid_id(team)
            {
                return Err(invalid(
                    &key("team"),
                    format!("{team:?} is not a team id (as in lichess.org/team/ID)"),
                ));
            }
            if arena.join_team && arena.team.is_none() {
                return Err(invalid(&key("join_team"), "is on, but no team is given"));
            }
            if arena.password.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(&key("password"), "is empty"));
            }
        }
        Ok(())
    }
}

/// A Lichess arena id: 8 ASCII letters and digits.
pub fn is_tournament_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}
