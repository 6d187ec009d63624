//! The daily quota of games against bots. Lichess caps bot-vs-bot games
//! (100 a rolling day) and says so with a 429 whose body names
//! `bot.vsBot.day`: a quota on games, not a request rate. kaissa counts
//! the bot games it starts over the last 24 hours (`bot.bot_games_per_day`)
//! and remembers a 429's reset time; while the quota is reached, bot
//! challenges are declined `later` and matchmaking waits. Kept in
//! `engine.state_dir/bot-games.json` so a restart does not forget it.

use super::state;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A rolling day, in seconds.
pub const DAY: u64 = 86_400;
/// The state file's name.
pub const FILE: &str = "bot-games.json";

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
    games: Vec<u64>,
    /// Lichess said the quota is reached until then.
    #[serde(default)]
    blocked_until: Option<u64>,
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

    /// Games against bots started in the day before `now`.
    pub fn count(&self, now: u64) -> usize {
        self.saved.games.iter().filter(|&&t| t + DAY > now).count()
    }

    /// Whether no more bot games can be started at `now`.
    pub fn reached(&self, now: u64) -> bool {
        self.saved.blocked_until.is_some_and(|until| until > now)
            || self.count(now) >= self.per_day as usize
    }

    /// Seconds until a bot game can be started again (0: now).
    pub fn resets_in(&self, now: u64) -> u64 {
        if self.per_day == 0 {
            return DAY;
        }
        let blocked = self
            .saved
            .blocked_until
            .map_or(0, |until| until.saturating_sub(now));
        // The quota frees when enough of the oldest games leave the day:
        // with n counted and a quota of q, the (n - q + 1)-th oldest.
        let recent: Vec<u64> = self
            .saved
            .games
            .iter()
            .copied()
            .filter(|&t| t + DAY > now)
            .collect();
        let counted = recent
            .len()
            .checked_sub(self.per_day as usize)
            .and_then(|i| recent.get(i))
            .map_or(0, |t| (t + DAY).saturating_sub(now));
        blocked.max(counted)
    }

    /// A game against a bot started at `now`.
    pub fn game_started(&mut self, now: u64) {
        self.saved.games.retain(|&t| t + DAY > now);
        self.saved.games.push(now);
        self.save();
    }

    /// Lichess answered `bot.vsBot.day`: reached for `seconds` (when the
    /// body says), else until our own count frees a game, else a day.
    pub fn hit(&mut self, now: u64, seconds: Option<u64>) {
        let wait = match seconds.filter(|&s| s > 0) {
            Some(s) => s.min(DAY + 60),
            None => {
                // Our count says when the oldest game leaves the day.
                let oldest = self.saved.games.iter().copied().find(|&t| t + DAY > now);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_rolling_day() {
        let mut q = BotQuota::load(None, 2);
        q.game_started(1000);
        assert!(!q.reached(1000));
        assert_eq!(q.resets_in(1000), 0);
        q.game_started(2000);
        assert!(q.reached(2000));
        assert_eq!(q.resets_in(2000), DAY - 1000);
        assert!(q.reached(1000 + DAY - 1));
        assert!(!q.reached(1000 + DAY));
    }

    #[test]
    fn a_429_blocks_for_its_seconds_or_our_count() {
        let mut q = BotQuota::load(None, 100);
        q.hit(500, Some(60));
        assert!(q.reached(559));
        assert!(!q.reached(560));
        q.game_started(1000);
        q.hit(2000, None);
        assert!(q.reached(2000));
        assert_eq!(q.resets_in(2000), DAY - 1000);
        let mut fresh = BotQuota::load(None, 100);
        fresh.hit(0, None);
        assert_eq!(fresh.resets_in(0), DAY);
    }

    #[test]
    fn kept_in_the_state_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = BotQuota::load(Some(dir.path()), 1);
        q.game_started(1000);
        let again = BotQuota::load(Some(dir.path()), 1);
        assert!(again.reached(1001));
        std::fs::write(dir.path().join(FILE), "garbage").unwrap();
        assert!(!BotQuota::load(Some(dir.path()), 1).reached(1001));
    }
}
