//! Stopping: a [`Stop`] request moves the daemon through its shutdown
//! phases.
//!
//! [`Stop::Finish`] and [`Stop::Resign`] withdraw from the arena
//! tournaments (`tournaments.leave_at_shutdown`; a restart keeps them).
//! [`Stop::Finish`] stops accepting challenges (new ones are declined
//! with `later`), keeps the event stream open for `gameFinish`, and waits
//! for the running games to end; `bot.shutdown_deadline_secs` bounds that
//! wait. [`Stop::Resign`], or the deadline, asks every remaining game to
//! resign (or abort, where it still can) and exits once they ended or
//! after [`RESIGN_GRACE`]. [`Stop::HandOver`] (a restart) asks every game
//! task to save its hash table and stop without a word to Lichess; the
//! daemon exits once they stopped or after [`HANDOVER_GRACE`], and the
//! next run resumes the games (see `games`: reconciling).

use super::outgoing::spawn_cancel;
use super::{Daemon, HANDOVER_GRACE, Phase, RESIGN_GRACE, Stop};
use crate::bot::game::GameCommand;
use tokio::time::Instant;

impl Daemon {
    /// Whether shutdown is complete.
    pub(super) fn done(&self) -> bool {
        match self.phase {
            Phase::Running => false,
            Phase::Draining { .. } => self.games.is_empty() && self.arenas.withdrawing == 0,
            Phase::Resigning { exit_by } => {
                (self.running_games() == 0 && self.arenas.withdrawing == 0)
                    || Instant::now() >= exit_by
            }
            Phase::HandingOver { exit_by } => {
                self.running_games() == 0 || Instant::now() >= exit_by
            }
        }
    }

    pub(super) fn on_stop(&mut self, stop: Stop) {
        match stop {
            // Nothing more will be accepted: the waiting challenges go,
            // and our own pending challenge. A restart leaves the waiting
            // ones to the next run (Lichess resends them).
            Stop::Finish | Stop::Resign => {
                self.decline_queued(|_| true, "shutting down");
                self.cancel_our_challenges();
                self.leave_tournaments();
            }
            Stop::HandOver => {
                self.cancel_our_challenges();
            }
            Stop::No => {}
        }
        match (stop, self.phase) {
            (Stop::No, _) | (_, Phase::Resigning { .. }) => {}
            (Stop::Resign, _) => {
                tracing::info!("second signal: resigning the games in progress");
                self.resign_all();
            }
            (Stop::HandOver, Phase::HandingOver { .. }) => {}
            (Stop::HandOver, _) => self.hand_over_all(),
            (Stop::Finish, Phase::Running) => {
                self.park_correspondence();
                let deadline = Instant::now() + self.config.bot.shutdown_deadline();
                tracing::info!(
                    games = self.running_games(),
                    deadline_s = self.config.bot.shutdown_deadline().as_secs(),
                    "shutting down: new challenges declined, running games finish (a second signal resigns them)"
                );
                self.service
                    .stopping(self.config.bot.shutdown_deadline() + RESIGN_GRACE);
                self.phase = Phase::Draining { deadline };
            }
            (Stop::Finish, _) => {}
        }
        self.update_status();
    }

    /// Withdraws our challenges not answered yet: matchmaking's and those
    /// of `kaissa ctl challenge`, whose game would start in the shutdown.
    fn cancel_our_challenges(&mut self) {
        self.cancel_our_challenge("shutting down");
        let ours: Vec<String> = self
            .games
            .iter()
            .filter(|(_, e)| e.outgoing && e.task.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in ours {
            tracing::info!(challenge = %id, "shutting down: cancelling our challenge");
            self.games.remove(&id);
            spawn_cancel(&self.client, id);
        }
    }

    /// Asks every game task to stop for the next run.
    pub(super) fn hand_over_all(&mut self) {
        self.service.stopping(HANDOVER_GRACE);
        tracing::info!(
            games = self.running_games(),
            "restarting: the games in progress are left for the next run"
        );
        // Accepted challenges that have not started yet start in the next
        // run (Lichess replays them as gameStart).
        self.games.retain(|_, entry| entry.task.is_some());
        for entry in self.games.values() {
            if let Some(task) = &entry.task {
                task.send(GameCommand::HandOver);
            }
        }
        self.phase = Phase::HandingOver {
            exit_by: Instant::now() + HANDOVER_GRACE,
        };
    }

    /// The correspondence games in play park as soon as they wait for
    /// the opponent: the next run takes them up (days on their clocks).
    fn park_correspondence(&self) {
        for entry in self.games.values() {
            if entry.correspondence()
                && let Some(task) = &entry.task
            {
                task.send(GameCommand::ParkNow);
            }
        }
    }

    pub(super) fn resign_all(&mut self) {
        self.service.stopping(RESIGN_GRACE);
        // Accepted challenges that have not started yet are let go.
        self.games.retain(|_, entry| entry.task.is_some());
        for entry in self.games.values() {
            // A correspondence game is left for the next run: days on its
            // clock are no reason to resign it.
            let command = if entry.correspondence() {
                GameCommand::HandOver
            } else {
                GameCommand::Resign
            };
            if let Some(task) = &entry.task {
                task.send(command);
            }
        }
        self.phase = Phase::Resigning {
            exit_by: Instant::now() + RESIGN_GRACE,
        };
    }
}
