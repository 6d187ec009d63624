//! Arena tournaments on the daemon's loop: sends the requests
//! [`Tournaments`](crate::bot::policy::arenas::Tournaments) asks for (each in
//! its own task, the answer coming back on a channel), keeps the arenas'
//! slots free of challenges, notices arena games, withdraws at a stop and
//! keeps the run-time arenas for a restart.

use super::{Daemon, Inbox, Phase};
use crate::bot::policy::arenas::{Action, Failure, Note, Origin, Outcome, SavedArena, Tournaments};
use crate::bot::store::state;
use crate::config::ArenaEntry;
use crate::config::{Config, GameKind};
use crate::lichess::Error as ClientError;
use crate::lichess::client::Client;
use crate::lichess::model::{ArenaTournament, GameInfo, GameStatus};
use std::time::Duration;
use tokio::time::Instant;

/// An answer about an arena, back on the loop.
pub type Answered = (String, Outcome);

/// The arenas a previous run handed over.
pub(super) fn load(dir: Option<&std::path::Path>) -> Vec<(ArenaEntry, Origin)> {
    state::path(dir, crate::bot::policy::arenas::STATE_FILE)
        .as_deref()
        .and_then(state::load::<Vec<SavedArena>>)
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s.entry, s.origin))
        .collect()
}

/// The arena tournaments: the plan (what to ask Lichess, the slots
/// kept), where the run-time ones are kept, and withdraws under way (a
/// stop waits for them).
pub(super) struct Arenas {
    pub(super) plan: Tournaments,
    pub(super) file: Option<std::path::PathBuf>,
    pub(super) withdrawing: usize,
}

impl Arenas {
    /// The configured arenas and those a previous run joined.
    pub(super) fn new(config: &Config, state_dir: Option<&std::path::Path>) -> Arenas {
        Arenas {
            plan: Tournaments::new(&config.tournaments, load(state_dir)),
            file: crate::bot::store::state::path(state_dir, crate::bot::policy::arenas::STATE_FILE),
            withdrawing: 0,
        }
    }
}

impl Daemon {
    /// Housekeeping for the arenas: the slots they keep, the requests due
    /// (a pairing only with a slot free for it), the state file.
    pub(super) fn tournaments_tick(&mut self) {
        self.slots.keep(self.arenas.plan.kept_slots());
        if self.phase == Phase::Running {
            let free = self.slots.in_use() < self.slots.total();
            for action in self.arenas.plan.due(Instant::now(), free) {
                self.send_tournament(action);
            }
        }
        self.save_tournaments();
    }

    fn save_tournaments(&mut self) {
        if let Some(list) = self.arenas.plan.to_save()
            && let Some(file) = &self.arenas.file
        {
            // It may hold arena passwords: the service user's alone.
            state::save_private(file, &list);
        }
    }

    fn send_tournament(&mut self, action: Action) {
        let client = self.client.clone();
        let tx = self.inbox_tx.clone();
        if matches!(action, Action::Withdraw(_)) {
            self.arenas.withdrawing += 1;
        }
        tokio::spawn(async move {
            let (id, outcome) = run(&client, action).await;
            let _ = tx.send(Inbox::Tournament((id, outcome)));
        });
    }

    /// Why the bot cannot play the games of arena `t` (its variant, or no
    /// engine for it at its speed), if it cannot: lila refuses to abort
    /// an arena game, so such an arena is not joined.
    fn arena_unplayable(&self, t: &ArenaTournament) -> Option<String> {
        let Some(variant) = t.variant_key() else {
            return Some(format!(
                "its variant {} is unknown to kaissa",
                t.variant.as_deref().unwrap_or("-")
            ));
        };
        let speed = t.speed()?;
        // Its opponents may be humans or bots: one engine for either will do.
        let mut why = None;
        for against_bot in [false, true] {
            let kind = GameKind {
                variant,
                speed,
                against_bot,
                rated: t.rated,
            };
            match self.engines.player(kind) {
                Ok(_) => return None,
                Err(e) => why = Some(e),
            }
        }
        why.map(|e| {
            format!(
                "its {} {} games cannot be played: {e}",
                variant.as_str(),
                speed.as_str()
            )
        })
    }

    /// An answer came back.
    pub(super) fn on_tournament_answer(&mut self, (id, outcome): Answered) {
        if let Outcome::Withdrawn(result) = &outcome {
            self.arenas.withdrawing = self.arenas.withdrawing.saturating_sub(1);
            match result {
                Ok(()) => tracing::info!(tournament = %id, "withdrew from the arena"),
                Err(e) => {
                    tracing::warn!(tournament = %id, "withdrawing from the arena failed: {e:?}")
                }
            }
        }
        let outcome = match outcome {
            Outcome::Checked(Ok(t)) => match self.arena_unplayable(&t) {
                // Before joining (or while we are not in it): refused.
                Some(why) if !self.arenas.plan.get(&id).is_some_and(|a| a.joined) => {
                    Outcome::Checked(Err(Failure::Refused(why)))
                }
                _ => Outcome::Checked(Ok(t)),
            },
            other => other,
        };
        for note in self.arenas.plan.outcome(&id, outcome, Instant::now()) {
            log(
                &note,
                self.arenas.plan.get(&id).map_or("", |a| a.name.as_str()),
            );
        }
        self.slots.keep(self.arenas.plan.kept_slots());
        self.save_tournaments();
    }

    /// `gameStart` of an arena game: the arena's slot becomes the game's.
    pub(super) fn tournament_game_started(&mut self, info: &GameInfo) {
        let Some(tournament) = &info.tournament_id else {
            return;
        };
        if self.phase != Phase::Running && self.arenas.plan.get(tournament).is_none() {
            // Stopping: an arena we left (or never knew) is not taken up.
            return;
        }
        if self.arenas.plan.game_started(tournament, &info.game_id) {
            tracing::info!(tournament = %tournament, game = %info.game_id, "a game of an arena joined elsewhere: playing in it until it ends");
        }
        self.slots.keep(self.arenas.plan.kept_slots());
        self.save_tournaments();
    }

    /// `gameFinish` of an arena game; a pairing we did not start is a
    /// missed one (Lichess pauses us in the arena).
    pub(super) fn tournament_game_finished(&mut self, info: &GameInfo) {
        let Some(tournament) = &info.tournament_id else {
            return;
        };
        let missed = info.status == Some(GameStatus::NoStart)
            && info.color.is_some()
            && info.winner.is_some()
            && info.winner != info.color;
        if missed {
            tracing::warn!(tournament = %tournament, game = %info.game_id, "missed an arena pairing (no first move in time): Lichess pauses us; joining again");
        }
        self.arenas
            .plan
            .game_over(tournament, &info.game_id, missed);
        self.slots.keep(self.arenas.plan.kept_slots());
    }

    /// `kaissa ctl tournament join`.
    pub(super) fn join_tournament(&mut self, entry: &ArenaEntry) {
        tracing::info!(tournament = %entry.id, team = entry.team.as_deref().unwrap_or("-"), "joining the arena (control socket)");
        self.arenas.plan.add(entry, Origin::Ctl);
        self.tournaments_tick();
    }

    /// `kaissa ctl tournament leave`: whether we were in it.
    pub(super) fn leave_tournament(&mut self, id: &str) -> bool {
        let Some(action) = self.arenas.plan.remove(id) else {
            return false;
        };
        tracing::info!(tournament = %id, "leaving the arena (control socket)");
        self.send_tournament(action);
        self.slots.keep(self.arenas.plan.kept_slots());
        self.save_tournaments();
        true
    }

    /// A stop (not a restart): withdraw from every arena, if so set.
    pub(super) fn leave_tournaments(&mut self) {
        if !self.config.tournaments.leave_at_shutdown || self.arenas.plan.is_empty() {
            return;
        }
        for action in self.arenas.plan.leave_all() {
            self.send_tournament(action);
        }
        self.slots.keep(0);
        self.save_tournaments();
    }
}

/// Sends one request.
async fn run(client: &Client, action: Action) -> (String, Outcome) {
    match action {
        Action::Check(id) => {
            let result = client.tournament(&id).await.map_err(failure);
            (id, Outcome::Checked(result))
        }
        Action::JoinTeam { id, team, password } => {
            let result = client
                .join_team(&team, password.as_deref())
                .await
                .map_err(failure);
            if result.is_ok() {
                tracing::info!(tournament = %id, team = %team, "joined the team");
            }
            (id, Outcome::TeamJoined(result))
        }
        Action::Join {
            id,
            team,
            password,
            pair_me_asap,
        } => {
            let result = client
                .join_tournament(&id, team.as_deref(), password.as_deref(), pair_me_asap)
                .await
                .map_err(failure);
            (
                id,
                Outcome::Joined {
                    pair_me_asap,
                    result,
                },
            )
        }
        Action::Withdraw(id) => {
            let result = client.withdraw_tournament(&id).await.map_err(failure);
            (id, Outcome::Withdrawn(result))
        }
    }
}

/// lila's "You are joining too many tournaments" (its limit on first
/// joins: 8 credits an hour, 30 a day, a user's arena costing 2) says
/// nothing of its length: tried again after this.
const TOO_MANY_TOURNAMENTS_FOR: Duration = Duration::from_secs(600);

/// What a failed request means for the arena. lila answers a join it
/// refuses with a 400 and one of `TournamentApi.JoinResult`'s errors:
/// the passing ones (a pause not over, too many joins, "for some
/// reason") are tried again; the others (a wrong entry code, the team, the
/// entry conditions, a ban) are final.
fn failure(e: ClientError) -> Failure {
    let message = match &e {
        ClientError::Status { message, .. } => message.to_ascii_lowercase(),
        _ => String::new(),
    };
    match &e {
        ClientError::NotFound { .. } => Failure::Gone,
        ClientError::RateLimited {
            limit,
            retry_after,
            pause,
            ..
        } => Failure::Limited {
            why: "rate limited (HTTP 429)".to_owned(),
            after: limit
                .as_ref()
                .and_then(|l| l.seconds)
                .map(Duration::from_secs)
                .or(*retry_after)
                .unwrap_or(*pause)
                .max(Duration::from_secs(1)),
        },
        ClientError::Forbidden { .. } | ClientError::Unauthorized { .. } => {
            Failure::Refused(e.to_string())
        }
        _ if message.contains("no longer exists") => Failure::Gone,
        _ if message.contains("pause is not over") => {
            Failure::Paused("paused by Lichess (a withdraw or a missed pairing)".to_owned())
        }
        _ if message.contains("too many tournaments") => Failure::Limited {
            why: "joining too many tournaments".to_owned(),
            after: TOO_MANY_TOURNAMENTS_FOR,
        },
        _ if message.contains("for some reason") => Failure::Transient(e.to_string()),
        _ if e.is_transient() => Failure::Transient(e.to_string()),
        _ if e.status().is_some_and(|s| (400..500).contains(&s)) => Failure::Refused(e.to_string()),
        _ => Failure::Transient(e.to_string()),
    }
}

fn log(note: &Note, name: &str) {
    match note {
        Note::Joined {
            id,
            pair_me_asap: true,
        } => tracing::info!(tournament = %id, name, "arena: waiting for a pairing"),
        Note::Joined { id, .. } => {
            tracing::info!(tournament = %id, name, "arena joined; it has not started")
        }
        Note::Started(id) => tracing::info!(tournament = %id, name, "arena started"),
        Note::Finished(id) => tracing::info!(tournament = %id, name, "arena over"),
        Note::Gone(id) => tracing::warn!(tournament = %id, "no such arena on Lichess: forgotten"),
        Note::Refused { id, why } => {
            tracing::error!(tournament = %id, name, "cannot play in the arena: {why}")
        }
        Note::PausedByLichess(id) => {
            tracing::warn!(tournament = %id, name, "Lichess paused us in the arena: joining again")
        }
        Note::Held { id, why, after } => tracing::warn!(
            tournament = %id,
            name,
            retry_in_s = after.as_secs(),
            "arena: {why}; joining again later"
        ),
        Note::Failed { id, why } => {
            tracing::warn!(tournament = %id, "arena request failed (tried again in 30 s): {why}")
        }
    }
}
