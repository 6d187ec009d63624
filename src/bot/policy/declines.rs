//! What matchmaking learns from the bots that decline it: a decline's
//! reason says what to avoid ([`lesson`]): the time control or the variant
//! offered (that bot gets other offers), the bot for a while (`later`,
//! `generic`, no answer), or the bot for long (`noBot`, or too many
//! declines in a row). [`Cooldowns`] keeps it all, by user id, in
//! `engine.state_dir/declined.json`.

use crate::bot::store::state;
use crate::config::MatchmakingConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The state file's name.
pub const FILE: &str = "declined.json";

/// A bot that declined us, until when (Unix seconds), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    pub until: u64,
    pub reason: String,
}

/// What one decline teaches, by its reason (Lichess's decline reasons;
/// `timeout` when the bot did not answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lesson {
    /// Not this time control with this bot, for `offer_cooldown_secs`.
    NotThisTime,
    /// Not this variant with this bot, for `offer_cooldown_secs`.
    NotThisVariant,
    /// Not this bot, for `later_cooldown_secs`: busy or unwilling now.
    Later,
    /// Not this bot, for `block_secs`: it does not play bots.
    Never,
    /// Not this bot, for `decline_cooldown_secs`.
    NotNow,
}

/// The lesson of a decline reason, in any case (Lichess's events carry
/// the key in lower case: `toofast`, `timecontrol`, `nobot`).
pub fn lesson(reason: &str) -> Lesson {
    match reason.to_ascii_lowercase().as_str() {
        "timecontrol" | "toofast" | "tooslow" => Lesson::NotThisTime,
        "variant" | "standard" => Lesson::NotThisVariant,
        "later" | "generic" => Lesson::Later,
        "nobot" => Lesson::Never,
        _ => Lesson::NotNow,
    }
}

/// The aspects of an offer a bot may decline: its time control
/// (`time 180+2`, `time 3d`) and its variant (`variant chess960`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aspects {
    pub time: String,
    pub variant: String,
}

/// Everything remembered, as kept on disk.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Remembered {
    /// Bots not challenged at all until then.
    #[serde(default)]
    skips: BTreeMap<String, Skip>,
    /// Aspects not offered to a bot until then.
    #[serde(default)]
    offers: BTreeMap<String, BTreeMap<String, u64>>,
    /// Declines in a row, by bot (a game ends the run).
    #[serde(default)]
    streaks: BTreeMap<String, u32>,
}

/// The file as written now, or as written before the offers and streaks
/// were kept (a map of skips).
#[derive(Deserialize)]
#[serde(untagged)]
enum OnDisk {
    Before(BTreeMap<String, Skip>),
    Now(Remembered),
}

/// Bots (or offers to them) to leave alone for a while, by user id.
#[derive(Debug, Default)]
pub struct Cooldowns {
    remembered: Remembered,
    file: Option<PathBuf>,
}

impl Cooldowns {
    /// Read from the state directory, if there is one.
    pub fn load(state_dir: Option<&Path>) -> Cooldowns {
        let file = state::path(state_dir, FILE);
        let remembered = match file.as_deref().and_then(state::load) {
            Some(OnDisk::Now(r)) => r,
            Some(OnDisk::Before(skips)) => Remembered {
                skips,
                ..Remembered::default()
            },
            None => Remembered::default(),
        };
        Cooldowns { remembered, file }
    }

    /// Skip `user` until `until` (Unix seconds), for `reason`.
    pub fn skip(&mut self, user: &str, until: u64, reason: &str, now: u64) {
        self.forget_past(now);
        self.remembered.skips.insert(
            user.to_lowercase(),
            Skip {
                until,
                reason: reason.to_owned(),
            },
        );
        self.save();
    }

    /// Why `user` is skipped at `now`, if it is.
    pub fn skipped(&self, user: &str, now: u64) -> Option<&Skip> {
        self.remembered
            .skips
            .get(&user.to_lowercase())
            .filter(|s| s.until > now)
    }

    /// Whether an offer with these aspects may go to `user` at `now`.
    pub fn offer_skipped(&self, user: &str, aspects: &Aspects, now: u64) -> bool {
        self.remembered
            .offers
            .get(&user.to_lowercase())
            .is_some_and(|skipped| {
                [&aspects.time, &aspects.variant]
                    .iter()
                    .any(|a| skipped.get(a.as_str()).is_some_and(|&until| until > now))
            })
    }

    /// Our offer to `user` was declined for `reason`: what is avoided
    /// now, and for how long, as `config` says. Returns the lesson, and
    /// the declines in a row when they reached `block_after_declines`
    /// (the bot is then blocked for `block_secs`).
    pub fn declined(
        &mut self,
        user: &str,
        reason: &str,
        aspects: &Aspects,
        config: &MatchmakingConfig,
        now: u64,
    ) -> (Lesson, Option<u32>) {
        let key = user.to_lowercase();
        let streak = self.remembered.streaks.entry(key.clone()).or_default();
        *streak += 1;
        let in_a_row = *streak;
        let limit = config.block_after_declines;
        if limit > 0 && in_a_row >= limit {
            self.remembered.streaks.remove(&key);
            let why = format!("{in_a_row} declines in a row (the last: {reason})");
            self.skip(user, now + config.block_secs, &why, now);
            return (lesson(reason), Some(in_a_row));
        }
        let lesson = lesson(reason);
        let aspect = match lesson {
            Lesson::NotThisTime => Some(&aspects.time),
            Lesson::NotThisVariant => Some(&aspects.variant),
            _ => None,
        };
        match (aspect, lesson) {
            (Some(aspect), _) => {
                self.forget_past(now);
                self.remembered
                    .offers
                    .entry(key)
                    .or_default()
                    .insert(aspect.clone(), now + config.offer_cooldown_secs);
                self.save();
            }
            (None, Lesson::Later) => self.skip(user, now + config.later_cooldown_secs, reason, now),
            (None, Lesson::Never) => self.skip(user, now + config.block_secs, reason, now),
            (None, _) => self.skip(user, now + config.decline_cooldown_secs, reason, now),
        }
        (lesson, None)
    }

    /// A game against `user` started: its run of declines ends.
    pub fn played(&mut self, user: &str) {
        if self
            .remembered
            .streaks
            .remove(&user.to_lowercase())
            .is_some()
        {
            self.save();
        }
    }

    /// The declines in a row of `user`.
    pub fn streak(&self, user: &str) -> u32 {
        self.remembered
            .streaks
            .get(&user.to_lowercase())
            .copied()
            .unwrap_or(0)
    }

    fn forget_past(&mut self, now: u64) {
        let r = &mut self.remembered;
        r.skips.retain(|_, s| s.until > now);
        for offers in r.offers.values_mut() {
            offers.retain(|_, &mut until| until > now);
        }
        r.offers.retain(|_, offers| !offers.is_empty());
    }

    fn save(&self) {
        if let Some(file) = &self.file {
            state::save(file, &self.remembered);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aspects(time: &str, variant: &str) -> Aspects {
        Aspects {
            time: format!("time {time}"),
            variant: format!("variant {variant}"),
        }
    }

    #[test]
    fn a_reason_steers_what_is_avoided() {
        let config = MatchmakingConfig::default();
        let mut cd = Cooldowns::default();
        let blitz = aspects("180+2", "standard");
        // Our clock declined: that clock is not offered to that bot for a
        // day, another clock is, and another bot gets this one.
        let (lesson, blocked) = cd.declined("Robo", "tooFast", &blitz, &config, 1000);
        assert_eq!((lesson, blocked), (Lesson::NotThisTime, None));
        assert!(cd.offer_skipped("robo", &blitz, 1000));
        assert!(!cd.offer_skipped("robo", &aspects("600+5", "standard"), 1000));
        assert!(!cd.offer_skipped("other", &blitz, 1000));
        assert!(cd.skipped("robo", 1000).is_none());
        assert!(!cd.offer_skipped("robo", &blitz, 1000 + 86_400));
        // The variant: every clock in that variant is avoided.
        cd.declined(
            "Robo",
            "variant",
            &aspects("60+1", "chess960"),
            &config,
            2000,
        );
        assert!(cd.offer_skipped("robo", &aspects("600+5", "chess960"), 2000));
        // `later`: the bot for four hours; no answer: for an hour.
        let mut cd = Cooldowns::default();
        assert_eq!(
            cd.declined("A", "later", &blitz, &config, 0).0,
            Lesson::Later
        );
        assert!(cd.skipped("a", 4 * 3600 - 1).is_some());
        assert!(cd.skipped("a", 4 * 3600).is_none());
        assert_eq!(
            cd.declined("B", "timeout", &blitz, &config, 0).0,
            Lesson::NotNow
        );
        assert!(cd.skipped("b", 3599).is_some() && cd.skipped("b", 3600).is_none());
        assert_eq!(
            cd.declined("C", "nobot", &blitz, &config, 0).0,
            Lesson::Never
        );
        assert_eq!(super::lesson("timecontrol"), Lesson::NotThisTime);
        assert!(cd.skipped("c", 7 * 86_400 - 1).is_some());
    }

    #[test]
    fn declines_in_a_row_block_the_bot_and_a_game_ends_the_run() {
        let config = MatchmakingConfig {
            block_after_declines: 3,
            block_secs: 10_000,
            ..MatchmakingConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let mut cd = Cooldowns::load(Some(dir.path()));
        let offer = aspects("180+2", "standard");
        cd.declined("Picky", "tooFast", &offer, &config, 100);
        cd.declined("Picky", "tooSlow", &offer, &config, 200);
        assert_eq!(cd.streak("picky"), 2);
        cd.played("picky");
        assert_eq!(cd.streak("picky"), 0);
        for t in [300, 400] {
            assert_eq!(cd.declined("Picky", "tooFast", &offer, &config, t).1, None);
        }
        // Kept across restarts.
        let mut again = Cooldowns::load(Some(dir.path()));
        assert_eq!(again.streak("picky"), 2);
        assert!(again.offer_skipped("picky", &offer, 500));
        assert_eq!(
            again
                .declined("Picky", "timeControl", &offer, &config, 500)
                .1,
            Some(3)
        );
        let skip = again.skipped("picky", 500).unwrap();
        assert_eq!(skip.until, 10_500);
        assert!(skip.reason.starts_with("3 declines in a row"), "{skip:?}");
        assert_eq!(again.streak("picky"), 0);
    }

    #[test]
    fn the_older_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            r#"{"slowbot": {"until": 500, "reason": "timeout"}}"#,
        )
        .unwrap();
        let cd = Cooldowns::load(Some(dir.path()));
        assert_eq!(cd.skipped("slowbot", 400).unwrap().reason, "timeout");
    }
}
