//! The budget of challenges we create. lila limits each account to 25
//! credits a minute and 200 a day (`challenge.create.user`); a challenge
//! to a bot costs 1, to a human 5 (nothing when they follow us, which we
//! cannot know, so 5). kaissa spends a challenge's credits when it sends
//! it and sends none the budget cannot pay for: matchmaking waits, a
//! `kaissa ctl challenge` is refused with the wait. Kept in
//! `engine.state_dir/challenges-sent.json` so a restart does not forget.
//! (A 429 to a creation, from spending elsewhere, closes the creation
//! gate as any 429 does.)

use crate::bot::store::state;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The state file's name.
pub const FILE: &str = "challenges-sent.json";
/// lila's windows: (seconds, credits).
pub const WINDOWS: [(u64, u32); 2] = [(60, 25), (86_400, 200)];
/// The credits of a challenge to a bot.
pub const BOT_COST: u32 = 1;
/// The credits of a challenge to a human (or to someone unknown).
pub const HUMAN_COST: u32 = 5;

/// The credits spent over the last day, and where they are kept.
#[derive(Debug)]
pub struct ChallengeBudget {
    saved: Saved,
    file: Option<PathBuf>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Saved {
    /// Challenges sent: (Unix seconds, credits), oldest first.
    #[serde(default)]
    sent: Vec<(u64, u32)>,
}

impl ChallengeBudget {
    /// The budget, read from the state directory if there is one.
    pub fn load(state_dir: Option<&Path>) -> ChallengeBudget {
        let file = state::path(state_dir, FILE);
        let mut saved: Saved = file.as_deref().and_then(state::load).unwrap_or_default();
        saved.sent.sort_unstable();
        ChallengeBudget { saved, file }
    }

    /// Credits spent in the window of `secs` before `now`.
    pub fn spent(&self, now: u64, secs: u64) -> u32 {
        self.saved
            .sent
            .iter()
            .filter(|&&(at, _)| at + secs > now)
            .map(|&(_, cost)| cost)
            .sum()
    }

    /// Seconds until a challenge of `cost` credits can be sent (0: now).
    pub fn wait(&self, now: u64, cost: u32) -> u64 {
        WINDOWS
            .iter()
            .map(|&(secs, credits)| {
                let mut over = (self.spent(now, secs) + cost).saturating_sub(credits);
                // The oldest spendings leave the window first.
                let mut wait = 0;
                for &(at, spent) in self.saved.sent.iter().filter(|&&(at, _)| at + secs > now) {
                    if over == 0 {
                        break;
                    }
                    over = over.saturating_sub(spent);
                    wait = at + secs - now;
                }
                wait
            })
            .max()
            .unwrap_or(0)
    }

    /// A challenge of `cost` credits sent at `now`.
    pub fn spend(&mut self, now: u64, cost: u32) {
        let day = WINDOWS[1].0;
        self.saved.sent.retain(|&(at, _)| at + day > now);
        self.saved.sent.push((now, cost));
        if let Some(file) = &self.file {
            state::save(file, &self.saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_holds_25_credits() {
        let mut b = ChallengeBudget::load(None);
        for i in 0..25 {
            assert_eq!(b.wait(1000 + i, BOT_COST), 0);
            b.spend(1000 + i, BOT_COST);
        }
        // The 26th waits for the first to leave the minute.
        assert_eq!(b.wait(1030, BOT_COST), 30);
        assert_eq!(b.wait(1060, BOT_COST), 0);
        // A human costs 5: five must leave first.
        assert_eq!(b.wait(1060, HUMAN_COST), 4);
        assert_eq!(b.spent(1030, 60), 25);
    }

    #[test]
    fn a_day_holds_200_credits() {
        let mut b = ChallengeBudget::load(None);
        // 40 humans over the day: 200 credits, a minute apart.
        for i in 0..40 {
            b.spend(i * 120, HUMAN_COST);
        }
        let now = 40 * 120;
        assert_eq!(b.spent(now, 86_400), 200);
        assert_eq!(b.wait(now, BOT_COST), 86_400 - now);
        assert_eq!(b.wait(86_400, BOT_COST), 0, "the first left the day");
        assert_eq!(b.wait(86_400, HUMAN_COST), 0);
        assert_eq!(b.wait(86_400, HUMAN_COST + 1), 120);
    }

    #[test]
    fn kept_in_the_state_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = ChallengeBudget::load(Some(dir.path()));
        b.spend(5000, 25);
        let again = ChallengeBudget::load(Some(dir.path()));
        assert_eq!(again.wait(5001, BOT_COST), 59);
        std::fs::write(dir.path().join(FILE), "{").unwrap();
        assert_eq!(ChallengeBudget::load(Some(dir.path())).wait(5001, 1), 0);
    }
}
