//! The end of a game task: stop the engine, keep or delete the game's
//! hash file, say goodbye, write the PGN, and log the result; or, for a
//! game handed over to the next run, only save the hash file.

use super::Game;
use super::player::Player;
use crate::bot::board::Record;
use crate::bot::board::opening;
use crate::bot::chat;
use crate::bot::store::hashstore;
use crate::bot::store::pgn::{self, PgnHeaders};
use crate::lichess::model::{ChatRoom, Color, GameStatus};
use std::time::Duration;

/// The longest the goodbye may wait in the request queue.
const GOODBYE_WAIT: Duration = Duration::from_secs(3);

/// `YYYY.MM.DD` of a Unix time in milliseconds (civil-from-days).
fn pgn_date(unix_ms: u64) -> String {
    let days = (unix_ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}.{m:02}.{d:02}")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The PGN result and termination of a finished game, with the
/// termination names of Lichess's own PGN export.
pub(super) fn result_of(status: GameStatus, winner: Option<Color>) -> (&'static str, &'static str) {
    let result = match (status, winner) {
        (_, Some(Color::White)) => "1-0",
        (_, Some(Color::Black)) => "0-1",
        (GameStatus::Aborted | GameStatus::NoStart | GameStatus::Created, None) => "*",
        (GameStatus::Started, None) => "*",
        _ => "1/2-1/2",
    };
    let termination = match status {
        GameStatus::Outoftime | GameStatus::Timeout => "Time forfeit",
        GameStatus::Aborted | GameStatus::NoStart => "Abandoned",
        GameStatus::Cheat => "Rules infraction",
        GameStatus::InsufficientMaterialClaim => "Insufficient material",
        GameStatus::Started | GameStatus::Created => "Unterminated",
        // A status unknown to us counts as finished (see `is_ongoing`).
        GameStatus::UnknownFinish | GameStatus::Unknown => "Unknown",
        _ => "Normal",
    };
    (result, termination)
}

impl Game {
    pub(super) async fn wrap_up(mut self) {
        self.reader.stop();
        if self.search.thinking.take().is_some() {
            self.player.stop();
        }
        self.stop_pondering("game over");
        // A periodic save still writing would bring back a file deleted
        // now (the save after the last move, say).
        if let Some(saving) = self.hash.saving.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), saving).await;
        }
        if let (Some(dir), Some(path), Player::BuiltIn(engine)) = (
            &self.ctx.config.engine.state_dir,
            &self.hash.path,
            &mut self.player,
        ) {
            if self.status.is_ongoing() && self.moves_posted > 0 {
                // Not over (shutdown, or Lichess lost track of it) and we
                // played in it: keep the table for the run that resumes
                // the game. A game we never moved in leaves no file.
                let reply = engine.save_hash(path.clone());
                match tokio::time::timeout(Duration::from_secs(10), reply).await {
                    Ok(Ok(Ok(saved))) => {
                        tracing::info!(entries = saved.used, "hash table saved")
                    }
                    Ok(Ok(Err(e))) => tracing::warn!("hash table not saved: {e}"),
                    Ok(Err(_)) | Err(_) => {
                        tracing::warn!("hash table not saved: no answer")
                    }
                }
            } else if !self.status.is_ongoing() {
                hashstore::remove(dir, &self.id);
            }
        }
        let ply = self.record.as_ref().map_or(0, Record::ply);
        if self.handed_over && self.status.is_ongoing() {
            tracing::info!(plies = ply, "game handed over to the next run");
            return self.join_engine().await;
        }
        if self.lost_track() {
            tracing::warn!(
                plies = ply,
                "Lichess refused the game's stream mid-game: checking the games in progress"
            );
            return self.join_engine().await;
        }
        let (result, termination) = result_of(self.status, self.winner);
        tracing::info!(
            status = ?self.status,
            winner = self.winner.map(Color::as_str),
            result,
            plies = ply,
            ponder_hits = self.search.ponder_hits,
            ponder_misses = self.search.ponder_misses,
            "game end"
        );
        self.count_result();
        if let Some(dir) = self.ctx.config.bot.pgn_dir.clone()
            && let Some(pgn) = self.pgn(result, termination).await
        {
            let file = self.ctx.config.bot.pgn_file;
            let path = pgn::file_for(&dir, file, &self.id, &self.opponent_name());
            match pgn::save(path.clone(), file, pgn).await {
                Ok(()) => tracing::info!(path = %path.display(), "PGN written"),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "cannot write the PGN: {e}")
                }
            }
        }
        // The goodbye waits in the request queue (behind a rate-limit
        // pause, say): the PGN is written first, and the wait is bounded.
        if self.facts.is_some() {
            let opponent = self.opponent_name();
            let me = self.ctx.me.name.clone();
            let chat = &self.ctx.config.chat;
            let goodbye = async {
                for (room, template) in [
                    (ChatRoom::Player, &chat.goodbye),
                    (ChatRoom::Spectator, &chat.goodbye_spectator),
                ] {
                    let text = chat::fill_template(template, &me, &opponent);
                    if !text.trim().is_empty()
                        && let Err(e) = self.ctx.client.chat(&self.id, room, &text).await
                    {
                        tracing::warn!("goodbye failed: {e}");
                    }
                }
            };
            if tokio::time::timeout(GOODBYE_WAIT, goodbye).await.is_err() {
                tracing::info!("goodbye not sent: requests are paused");
            }
        }
        self.join_engine().await;
    }

    /// Lets the engine go: joining the built-in engine's thread blocks
    /// until its search has stopped; an external engine is told to quit,
    /// then killed, and reaped.
    pub(super) async fn join_engine(self) {
        match self.player {
            Player::BuiltIn(engine) => {
                let _ = tokio::task::spawn_blocking(move || drop(engine)).await;
            }
            Player::External(engine) => engine.quit().await,
        }
    }

    /// The game's result in the metrics: by speed, opponent kind and our
    /// result; a loss on time also on its own.
    fn count_result(&self) {
        let (Some(facts), Some(us)) = (self.facts.as_ref(), self.color) else {
            return;
        };
        if !self.status.is_ongoing() && self.status != GameStatus::Aborted {
            let ours = super::to_model(us);
            let result = match self.winner {
                Some(w) if w == ours => "win",
                Some(_) => "loss",
                None => "draw",
            };
            let opponent = if facts.opponent_bot { "bot" } else { "human" };
            let m = crate::metrics::metrics();
            m.inc(
                "kaissa_games_total",
                &[
                    ("speed", facts.speed.as_str()),
                    ("opponent", opponent),
                    ("result", result),
                ],
            );
            if result == "loss" && self.status == GameStatus::Outoftime {
                m.inc("kaissa_time_losses_total", &[]);
            }
        }
    }

    async fn pgn(&self, result: &str, termination: &str) -> Option<String> {
        let (facts, record) = (self.facts.as_ref()?, self.record.as_ref()?);
        // The openings' table is built on first use: off the runtime.
        let opening = match record.native() {
            Some(native) => {
                let native = native.clone();
                tokio::task::spawn_blocking(move || opening::opening(&native))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let headers = PgnHeaders {
            event: format!(
                "{} {} game",
                if facts.rated { "Rated" } else { "Casual" },
                facts.speed.as_str()
            ),
            site: format!("{}/{}", self.ctx.client.base_url(), self.id),
            date: pgn_date(facts.created_at.unwrap_or_else(now_ms)),
            white: facts.white.clone(),
            black: facts.black.clone(),
            white_elo: facts.white_rating,
            black_elo: facts.black_rating,
            result: result.to_owned(),
            time_control: match facts.clock {
                Some((initial, inc)) => format!("{}+{}", initial / 1000, inc / 1000),
                None => "-".to_owned(),
            },
            opening,
            termination: Some(termination.to_owned()),
        };
        let notes = pgn::Notes {
            engine: &self.judged.notes,
            clocks: &self.clocks,
            say: &self.ctx.config.bot.pgn_comments,
        };
        Some(pgn::write_pgn(&headers, &record.pgn_moves(), &notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(pgn_date(0), "1970.01.01");
        assert_eq!(pgn_date(951_782_400_000), "2000.02.29");
        assert_eq!(pgn_date(1_795_219_200_000), "2026.11.21");
    }

    #[test]
    fn results() {
        assert_eq!(
            result_of(GameStatus::Mate, Some(Color::White)),
            ("1-0", "Normal")
        );
        assert_eq!(
            result_of(GameStatus::Outoftime, Some(Color::Black)),
            ("0-1", "Time forfeit")
        );
        assert_eq!(result_of(GameStatus::Stalemate, None).0, "1/2-1/2");
        assert_eq!(result_of(GameStatus::Outoftime, None).0, "1/2-1/2");
        assert_eq!(result_of(GameStatus::Aborted, None), ("*", "Abandoned"));
        // A draw claimed after the opponent left is a timeout without a
        // winner, as in Lichess's export.
        assert_eq!(
            result_of(GameStatus::Timeout, None),
            ("1/2-1/2", "Time forfeit")
        );
        assert_eq!(
            result_of(GameStatus::InsufficientMaterialClaim, None),
            ("1/2-1/2", "Insufficient material")
        );
        assert_eq!(result_of(GameStatus::UnknownFinish, None).1, "Unknown");
        assert_eq!(
            result_of(GameStatus::Unknown, Some(Color::White)),
            ("1-0", "Unknown")
        );
        assert_eq!(result_of(GameStatus::Started, None), ("*", "Unterminated"));
    }
}
