//! The games' results, newest last, kept in `engine.state_dir/results.json`
//! (the last [`KEPT`]): the status page's table of the last results with
//! their rating changes, and its rating chart per speed. Fed by the
//! daemon from each `gameFinish`.

use super::state;
use crate::lichess::model::{GameInfo, GameStatus};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// The state file's name.
pub const FILE: &str = "results.json";
/// Results kept (the chart's reach).
pub const KEPT: usize = 500;

/// One finished game, from our side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameResult {
    pub id: String,
    /// When it finished (Unix seconds).
    pub at: u64,
    pub opponent: String,
    pub opponent_rating: Option<u32>,
    pub speed: String,
    pub rated: bool,
    /// `win`, `loss` or `draw`.
    pub result: String,
    /// Our rating before the game, and its change.
    pub rating: Option<u32>,
    pub rating_diff: Option<i32>,
}

/// The results, and where they are kept.
#[derive(Debug, Default)]
pub struct Results {
    entries: VecDeque<GameResult>,
    file: Option<PathBuf>,
}

impl Results {
    /// The results a previous run kept in `state_dir`.
    pub fn load(state_dir: Option<&Path>) -> Results {
        let file = state::path(state_dir, FILE);
        let entries = file
            .as_deref()
            .and_then(state::load::<VecDeque<GameResult>>)
            .unwrap_or_default();
        Results { entries, file }
    }

    /// A game finished (`info`, from `gameFinish`, at `now`); an aborted
    /// game, one seen already or one without our colour is not a result.
    pub fn record(&mut self, info: &GameInfo, now: u64) {
        let Some(us) = info.color else {
            return;
        };
        if matches!(info.status, Some(GameStatus::Aborted) | None)
            || self.entries.iter().any(|r| r.id == info.game_id)
        {
            return;
        }
        let result = match info.winner {
            Some(w) if w == us => "win",
            Some(_) => "loss",
            None => "draw",
        };
        let opponent = info.opponent.as_ref();
        self.entries.push_back(GameResult {
            id: info.game_id.clone(),
            at: now,
            opponent: opponent.map(|o| o.username.clone()).unwrap_or_default(),
            opponent_rating: opponent.and_then(|o| o.rating),
            speed: info
                .speed
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            rated: info.rated,
            result: result.to_owned(),
            rating: info.rating,
            rating_diff: info.rating_diff,
        });
        while self.entries.len() > KEPT {
            self.entries.pop_front();
        }
        if let Some(file) = &self.file {
            state::save(file, &self.entries);
        }
    }

    /// The last `n`, newest first.
    pub fn recent(&self, n: usize) -> Vec<&GameResult> {
        self.entries.iter().rev().take(n).collect()
    }

    /// Our rating after each rated game, by speed, oldest first.
    pub fn ratings(&self) -> BTreeMap<String, Vec<(u64, u32)>> {
        let mut out: BTreeMap<String, Vec<(u64, u32)>> = BTreeMap::new();
        for r in self.entries.iter().filter(|r| r.rated) {
            if let Some(rating) = r.rating {
                let after = rating.saturating_add_signed(r.rating_diff.unwrap_or(0));
                out.entry(r.speed.clone()).or_default().push((r.at, after));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(id: &str, winner: Option<&str>, diff: i32) -> GameInfo {
        serde_json::from_value(serde_json::json!({
            "gameId": id, "fullId": format!("{id}abcd"), "color": "white",
            "status": {"id": 31, "name": "resign"}, "speed": "blitz", "rated": true,
            "rating": 1500, "ratingDiff": diff, "winner": winner,
            "opponent": {"id": "bob", "username": "Bob", "rating": 1600},
        }))
        .unwrap()
    }

    #[test]
    fn results_are_kept_once_each_and_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = Results::load(Some(dir.path()));
        results.record(&finish("aaaaaaaa", Some("white"), 8), 100);
        results.record(&finish("aaaaaaaa", Some("white"), 8), 101);
        results.record(&finish("bbbbbbbb", Some("black"), -6), 200);
        let again = Results::load(Some(dir.path()));
        let recent = again.recent(50);
        assert_eq!(recent.len(), 2);
        assert_eq!(
            (recent[0].id.as_str(), recent[0].result.as_str()),
            ("bbbbbbbb", "loss")
        );
        assert_eq!(recent[1].result, "win");
        assert_eq!(again.ratings()["blitz"], vec![(100, 1508), (200, 1494)]);
    }
}
