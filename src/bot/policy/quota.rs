//! The daily quota of games against bots. Lichess caps the games between
//! two bots (100 a rolling day today; its maintainers said it may drop)
//! and says so with a 429 whose body names `bot.vsBot.day`: a quota on
//! games, not a request rate. kaissa counts every game between two bots
//! it plays, as lila does, whoever started it (an accepted challenge, our
//! matchmaking, an arena, `kaissa ctl`), each game once; the cap is
//! `bot.bot_games_per_day`, or less when a 429's message says Lichess's is
//! lower ("You played 64 games against other bots today"), learned for a
//! week. It remembers a 429's reset time; while the quota is reached, bot
//! challenges are declined `later` and matchmaking waits. Kept in
//! `engine.state_dir/bot-games.json` so a restart does not forget it.

use crate::bot::store::state;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A rolling day, in seconds.
pub const DAY: u64 = 86_400;
/// The state file's name.
pub const FILE: &str = "bot-games.json";
/// How long a cap learned from Lichess's answer holds.
pub const LEARNED_FOR: u64 = 7 * DAY;

/// The quota, its count and where it is kept.
#[derive(Debug)]
pub struct BotQuota {
    per_day: u32,
    saved: Saved,
    file: Option<PathBuf>,
}

/// What the file holds (Unix seconds).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Saved {
    /// Starts of our games against bots, oldest first.
    #[serde(default)]
    games: Vec<Counted>,
    /// Lichess said the quota is reached until then.
    #[serde(default)]
    blocked_until: Option<u64>,
    /// The cap Lichess's 429 named, and when.
    #[serde(default)]
    learned: Option<(u32, u64)>,
}

/// A game counted: when it started, and its id (files of older versions
/// hold the time alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum Counted {
    Game { at: u64, id: String },
    At(u64),
}

impl Counted {
    fn at(&self) -> u64 {
        match self {
            Counted::Game { at, .. } | Counted::At(at) => *at,
        }
    }

    fn is(&self, game: &str) -> bool {
        matches!(self, Counted::Game { id, .. } if id == game)
    }
}

impl BotQuota {
    /// The quota of `per_day` games, read from the state directory if there
    /// is one.
    pub fn load(state_dir: Option<&Path>, per_day: u32) -> BotQuota {
        let file = state::path(state_dir, FILE);
        let saved = file.as_deref().and_then(state::load).unwrap_or_default();
        BotQuota {
            per_day,
            saved,
            file,
        }
    }

    /// The cap at `now`: the configured one, or Lichess's if it said it
    /// is lower in the last week.
    pub fn per_day(&self, now: u64) -> u32 {
        match self.saved.learned {
            Some((cap, at)) if at + LEARNED_FOR > now => self.per_day.min(cap),
            _ => self.per_day,
        }
    }

    /// The start times of the games in the day before `now`.
    fn recent(&self, now: u64) -> impl Iterator<Item = u64> + '_ {
        self.saved
            .games
            .iter()
            .map(Counted::at)
            .filter(move |&t| t + DAY > now)
    }

    /// Games against bots started in the day before `now`.
    pub fn count(&self, now: u64) -> usize {
        self.recent(now).count()
    }

    /// Whether no more bot games can be started at `now`.
    pub fn reached(&self, now: u64) -> bool {
        self.saved.blocked_until.is_some_and(|until| until > now)
            || self.count(now) >= self.per_day(now) as usize
    }

    /// Seconds until a bot game can be started again (0: now).
    pub fn resets_in(&self, now: u64) -> u64 {
        let per_day = self.per_day(now) as usize;
        if per_day == 0 {
            return DAY;
        }
        let blocked = self
            .saved
            .blocked_until
            .map_or(0, |until| until.saturating_sub(now));
        // The quota frees when enough of the oldest games leave the day:
        // with n counted and a quota of q, the (n - q + 1)-th oldest.
        let mut recent: Vec<u64> = self.recent(now).collect();
        recent.sort_unstable();
        let counted = recent
            .len()
            .checked_sub(per_day)
            .and_then(|i| recent.get(i))
            .map_or(0, |t| (t + DAY).saturating_sub(now));
        blocked.max(counted)
    }

    /// Game `id` against a bot, started at `at`, seen at `now`: counted
    /// once (a game seen again after a reconnect or a restart is not).
    pub fn game_started(&mut self, now: u64, id: &str, at: u64) {
        let at = at.min(now);
        if at + DAY <= now || self.saved.games.iter().any(|g| g.is(id)) {
            return;
        }
        self.saved.games.retain(|g| g.at() + DAY > now);
        self.saved.games.push(Counted::Game {
            at,
            id: id.to_owned(),
        });
        self.save();
    }

    /// Lichess answered `bot.vsBot.day` with `message`: reached for
    /// `seconds` (when the body says), else until our own count frees a
    /// game, else a day. The cap the message names is learned.
    pub fn hit(&mut self, now: u64, seconds: Option<u64>, message: &str) {
        if let Some(cap) = named_cap(message) {
            if cap < self.per_day && self.saved.learned.is_none_or(|(c, _)| c != cap) {
                tracing::warn!(
                    lichess = cap,
                    configured = self.per_day,
                    "Lichess's daily cap on bot games is lower than bot.bot_games_per_day: \
                     keeping to it for a week"
                );
            }
            self.saved.learned = Some((cap, now));
        }
        let wait = match seconds.filter(|&s| s > 0) {
            Some(s) => s.min(DAY + 60),
            None => {
                // Our count says when the oldest game leaves the day.
                let oldest = self.recent(now).min();
                oldest.map_or(DAY, |t| (t + DAY).saturating_sub(now).max(1))
            }
        };
        self.saved.blocked_until = Some(now + wait);
        self.save();
    }

    fn save(&self) {
        if let Some(file) = &self.file {
            state::save(file, &self.saved);
        }
    }
}

/// The cap in lila's message: "You played 100 games against other bots
/// today, ...".
fn named_cap(message: &str) -> Option<u32> {
    let (before, _) = message.split_once(" games against other bots")?;
    before.rsplit(' ').next()?.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP_100: &str = "You played 100 games against other bots today, please wait before challenging another bot.";

    #[test]
    fn counts_a_rolling_day() {
        let mut q = BotQuota::load(None, 2);
        q.game_started(1000, "game0001", 1000);
        assert!(!q.reached(1000));
        assert_eq!(q.resets_in(1000), 0);
        q.game_started(2000, "game0002", 2000);
        assert!(q.reached(2000));
        assert_eq!(q.resets_in(2000), DAY - 1000);
        assert!(q.reached(1000 + DAY - 1));
        assert!(!q.reached(1000 + DAY));
    }

    #[test]
    fn a_game_counts_once_from_its_start() {
        let mut q = BotQuota::load(None, 100);
        q.game_started(1000, "game0001", 990);
        q.game_started(1500, "game0001", 990);
        assert_eq!(q.count(1500), 1, "seen again after a reconnect");
        // Resumed after a restart, started over a day ago: not counted.
        q.game_started(DAY + 2000, "game0002", 1000);
        assert_eq!(q.count(DAY + 2000), 0);
        // The time of its start, not of our seeing it.
        q.game_started(DAY + 2000, "game0003", DAY + 100);
        assert_eq!(q.resets_in(DAY + 2000), 0);
        assert_eq!(q.count(2 * DAY + 99), 1);
        assert_eq!(q.count(2 * DAY + 100), 0);
    }

    #[test]
    fn a_429_blocks_for_its_seconds_or_our_count() {
        let mut q = BotQuota::load(None, 100);
        q.hit(500, Some(60), "");
        assert!(q.reached(559));
        assert!(!q.reached(560));
        q.game_started(1000, "game0001", 1000);
        q.hit(2000, None, CAP_100);
        assert!(q.reached(2000));
        assert_eq!(q.resets_in(2000), DAY - 1000);
        let mut fresh = BotQuota::load(None, 100);
        fresh.hit(0, None, "");
        assert_eq!(fresh.resets_in(0), DAY);
    }

    #[test]
    fn the_cap_is_learned_from_lichess_for_a_week() {
        let mut q = BotQuota::load(None, 100);
        assert_eq!(named_cap(CAP_100), Some(100));
        assert_eq!(named_cap("Too many requests"), None);
        q.hit(1000, Some(10), &CAP_100.replace("100", "64"));
        assert_eq!(q.per_day(1000), 64);
        for i in 0..64 {
            q.game_started(2000, &format!("g{i}"), 2000);
        }
        assert!(q.reached(2000), "64 reach Lichess's cap");
        assert_eq!(q.per_day(1000 + LEARNED_FOR), 100, "forgotten after a week");
        // A cap set lower than Lichess's stays the operator's.
        let mut low = BotQuota::load(None, 20);
        low.hit(1000, Some(10), CAP_100);
        assert_eq!(low.per_day(1000), 20);
    }

    #[test]
    fn kept_in_the_state_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = BotQuota::load(Some(dir.path()), 1);
        q.game_started(1000, "game0001", 1000);
        let again = BotQuota::load(Some(dir.path()), 1);
        assert!(again.reached(1001));
        std::fs::write(dir.path().join(FILE), "garbage").unwrap();
        assert!(!BotQuota::load(Some(dir.path()), 1).reached(1001));
        // A file of an older version: the times alone.
        std::fs::write(dir.path().join(FILE), r#"{"games":[1000,1200]}"#).unwrap();
        let old = BotQuota::load(Some(dir.path()), 100);
        assert_eq!(old.count(1300), 2);
    }
}
