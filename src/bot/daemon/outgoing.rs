//! Our own challenges (matchmaking): idle long enough, the daemon
//! challenges an online bot chosen by the [`Matchmaker`]; our pending
//! challenge holds a slot, and is cancelled when an incoming challenge
//! needs it or after its timeout. Each challenge is paid for from the
//! [`budget`](crate::bot::budget) first.

use super::{Daemon, GameEntry, Phase};
use crate::bot::budget;
use crate::bot::matchmaking::{self, MatchEvent};
use crate::bot::state::unix_now;
use crate::lichess::client::{ChallengeKeepAlive, is_valid_id};
use crate::lichess::model::{Account, Challenge, OnlineBot};
use crate::lichess::{Endpoint, Error as ClientError};
use tokio::time::Instant;

impl Daemon {
    /// Withdraws our pending matchmaking challenge to free its slot; whether
    /// there was one.
    pub(super) fn cancel_our_challenge(&mut self) -> bool {
        let Some(pending) = self.matchmaker.pending().cloned() else {
            return false;
        };
        if self.games.get(&pending.id).is_none_or(|e| e.task.is_some()) {
            return false;
        }
        tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: an incoming challenge comes first; cancelling ours");
        self.games.remove(&pending.id);
        self.matchmaker.settled(&pending.id, None, unix_now());
        matchmaking::spawn_cancel(&self.client, pending.id);
        true
    }

    /// Matchmaking's turn: cancel a challenge of ours that waited too long,
    /// or look for an opponent when idle.
    pub(super) fn matchmaking(&mut self) {
        if !self.matchmaker.enabled() {
            return;
        }
        let now = unix_now();
        if let Some(pending) = self.matchmaker.timed_out().cloned() {
            tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: no answer in time; cancelling our challenge");
            self.games.remove(&pending.id);
            self.matchmaker.settled(&pending.id, Some("timeout"), now);
            matchmaking::spawn_cancel(&self.client, pending.id);
            self.idle_since = Instant::now();
        }
        let busy = !self.games.is_empty()
            || !self.queue.is_empty()
            || self.parked.values().any(|p| p.due)
            || self.matchmaker.busy();
        if busy || self.phase != Phase::Running {
            self.idle_since = Instant::now();
            return;
        }
        let paused = [Endpoint::OnlineBots, Endpoint::ChallengeCreate]
            .into_iter()
            .any(|e| self.client.rate_limited_for(e).is_some());
        if self.quota.reached(now) || paused {
            return;
        }
        let wait = self.budget.wait(now, budget::BOT_COST);
        if wait > 0 {
            if !std::mem::replace(&mut self.budget_said, true) {
                tracing::info!(
                    wait_s = wait,
                    minute = self.budget.spent(now, 60),
                    day = self.budget.spent(now, budget::WINDOWS[1].0),
                    "matchmaking: Lichess's limit on challenges we create is reached; waiting"
                );
            }
            return;
        }
        self.budget_said = false;
        if self.matchmaker.due(self.idle_since) {
            tracing::info!(
                idle_s = self.idle_since.elapsed().as_secs(),
                "matchmaking: idle; looking for a bot online"
            );
            self.matchmaker.search(&self.client, &self.inbox_tx);
        }
    }

    pub(super) fn on_bots_found(
        &mut self,
        found: Result<(Vec<OnlineBot>, Account), ClientError>,
        now: u64,
    ) {
        match found {
            Ok((bots, account)) => {
                let busy = !self.games.is_empty() || !self.queue.is_empty();
                if busy || self.phase != Phase::Running || self.quota.reached(now) {
                    self.matchmaker.failed();
                    return;
                }
                if self.budget.wait(now, budget::BOT_COST) > 0 {
                    self.matchmaker.failed();
                    return;
                }
                match self
                    .matchmaker
                    .found(&bots, &account, &self.client, &self.inbox_tx, now)
                {
                    Some(_) => self.budget.spend(now, budget::BOT_COST),
                    None => self.idle_since = Instant::now(),
                }
            }
            Err(e) => {
                tracing::warn!("matchmaking: cannot list the bots online: {e}");
                self.matchmaker.failed();
                self.idle_since = Instant::now();
            }
        }
    }

    pub(super) fn on_match_event(&mut self, event: MatchEvent) {
        let now = unix_now();
        match event {
            MatchEvent::Found(found) => self.on_bots_found(*found, now),
            MatchEvent::Created { opponent, result } => match *result {
                Ok((challenge, keep_alive)) => {
                    self.on_challenge_created(opponent, challenge, keep_alive)
                }
                Err(e) => self.on_challenge_not_created(&opponent, &e, now),
            },
        }
    }

    /// Our matchmaking challenge was created: it holds a slot until it is
    /// answered (an incoming challenge that needs the slot cancels it).
    pub(super) fn on_challenge_created(
        &mut self,
        opponent: String,
        challenge: Challenge,
        keep_alive: ChallengeKeepAlive,
    ) {
        let id = challenge.id.clone();
        if !is_valid_id(&id) {
            self.matchmaker.failed();
            return;
        }
        if self.phase != Phase::Running {
            // Created while shutting down: withdrawn at once.
            self.matchmaker.failed();
            matchmaking::spawn_cancel(&self.client, id);
            return;
        }
        // Our challenge holds a slot until it is answered; an
        // incoming challenge that needs it cancels ours.
        let slot = if self.games.contains_key(&id) {
            None
        } else {
            self.slots.try_reserve()
        };
        let Some(slot) = slot else {
            tracing::info!(challenge = %id, "matchmaking: no slot left for our challenge; cancelling it");
            self.matchmaker.failed();
            matchmaking::spawn_cancel(&self.client, id);
            return;
        };
        tracing::info!(challenge = %id, opponent = %opponent, "matchmaking: challenge sent; waiting for an answer");
        let mut entry = GameEntry::new(Some(slot));
        entry.opponent = Some(opponent.to_lowercase());
        entry.bot = true;
        entry.outgoing = true;
        self.games.insert(id.clone(), entry);
        self.matchmaker.created(id, opponent, keep_alive);
    }

    pub(super) fn on_challenge_not_created(&mut self, opponent: &str, e: &ClientError, now: u64) {
        self.idle_since = Instant::now();
        if let Some(wait) = e.bot_vs_bot_daily_limit() {
            self.quota
                .hit(now, Some(wait.as_secs()), e.message().unwrap_or_default());
            tracing::warn!(
                resets_in_s = self.quota.resets_in(now),
                "matchmaking: daily bot-game quota reached; stopped until it resets"
            );
            self.matchmaker.failed();
            self.decline_queued(|c| c.challenger.is_bot(), "daily bot quota");
        } else if e.status() == Some(429) || e.is_transient() {
            tracing::warn!("matchmaking: challenge not sent: {e}");
            self.matchmaker.failed();
        } else if let Some(limit) = e.refused_by_limit() {
            // The opponent's own limit (its bot games for the day): it is
            // skipped for as long as Lichess says.
            let reason = format!("limit {}", limit.key.as_deref().unwrap_or("unknown"));
            tracing::info!(opponent = %opponent, "matchmaking: challenge refused: {e}");
            self.matchmaker
                .refused(opponent, &reason, limit.seconds, now);
        } else if e.is_form_error() {
            // Our challenge's settings, not the opponent: nobody is skipped.
            tracing::error!(
                "matchmaking: Lichess refused the settings of our challenge ({e}); \
                 check matchmaking.time_controls and matchmaking.variants"
            );
            self.matchmaker.failed();
        } else {
            tracing::warn!(opponent = %opponent, "matchmaking: challenge refused: {e}");
            self.matchmaker.refused(opponent, "refused", None, now);
        }
    }
}
