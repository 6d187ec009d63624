//! Our own challenges (matchmaking): idle long enough, the daemon
//! challenges an online bot chosen by the [`Matchmaker`]; our pending
//! challenge holds a slot, and is cancelled when an incoming challenge
//! needs it or after its timeout. Each challenge is paid for from the
//! [`budget`](crate::bot::policy::budget) first.

use super::{Daemon, GameEntry, Phase};
use crate::bot::policy::budget;
use crate::bot::policy::matchmaker::{DEFAULT_RATING, Outcome, Search};
use crate::bot::store::state::unix_now;
use crate::lichess::client::{ChallengeKeepAlive, Client, CreateChallenge, is_valid_id};
use crate::lichess::model::{Account, Challenge, OnlineBot, perf_rating};
use crate::lichess::{Endpoint, Error as ClientError};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Bots listed by `/api/bot/online`, at most.
const ONLINE_BOTS: u32 = 512;
/// `GET /api/users/status` takes this many ids at most: the candidates
/// nearest our rating are asked about.
const STATUS_IDS: usize = 100;

/// What a matchmaking request came to.
#[derive(Debug)]
pub enum MatchEvent {
    /// The bots online and our account (for our rating).
    Found(Box<Result<(Vec<OnlineBot>, Account), ClientError>>),
    /// Our challenge to `opponent` was created (or not), with the stream
    /// that keeps it open.
    Created {
        opponent: String,
        result: Box<Result<(Challenge, ChallengeKeepAlive), ClientError>>,
    },
}

impl Daemon {
    /// Withdraws our pending matchmaking challenge to free its slot; whether
    /// there was one.
    pub(super) fn cancel_our_challenge(&mut self, why: &str) -> bool {
        let Some(pending) = self.matchmaker.pending().cloned() else {
            return false;
        };
        if self.games.get(&pending.id).is_none_or(|e| e.task.is_some()) {
            return false;
        }
        tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: {why}; cancelling our challenge");
        self.games.remove(&pending.id);
        self.matchmaker
            .settled(&pending.id, Outcome::Withdrawn, unix_now());
        spawn_cancel(&self.client, pending.id);
        true
    }

    /// Matchmaking's turn: cancel a challenge of ours that waited too long,
    /// or look for an opponent when idle.
    pub(super) fn matchmaking(&mut self) {
        let now = unix_now();
        // Before anything else: a challenge sent before matchmaking was
        // turned off (or the last of a plan) still times out.
        if let Some(pending) = self.matchmaker.timed_out().cloned() {
            tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: no answer in time; cancelling our challenge");
            self.games.remove(&pending.id);
            self.matchmaker
                .settled(&pending.id, Outcome::Declined("timeout"), now);
            spawn_cancel(&self.client, pending.id);
            self.idle_since = Instant::now();
        }
        if !self.matchmaker.enabled() && !self.matchmaker.has_planned() {
            return;
        }
        let busy = !self.games.is_empty()
            || !self.queue.is_empty()
            || self.parking.waiting.values().any(|p| p.due)
            || self.matchmaker.busy()
            || self.no_free_slot();
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
        // A planned game's opponent may be a human: a human's price.
        let cost = if self.matchmaker.has_planned() {
            budget::HUMAN_COST
        } else {
            budget::BOT_COST
        };
        let wait = self.budget.wait(now, cost);
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
        if let Some((opponent, offer)) = self.matchmaker.next_planned() {
            self.budget.spend(now, cost);
            spawn_create(&self.client, opponent, offer, &self.inbox_tx);
            return;
        }
        if self.matchmaker.due(self.idle_since) {
            tracing::info!(
                idle_s = self.idle_since.elapsed().as_secs(),
                "matchmaking: idle; looking for a bot online"
            );
            if let Some(search) = self.matchmaker.search() {
                spawn_search(&self.client, search, &self.inbox_tx);
            }
        }
    }

    pub(super) fn on_bots_found(
        &mut self,
        found: Result<(Vec<OnlineBot>, Account), ClientError>,
        now: u64,
    ) {
        match found {
            Ok((bots, account)) => {
                super::set_ratings(&account);
                let busy = !self.games.is_empty() || !self.queue.is_empty() || self.no_free_slot();
                if busy || self.phase != Phase::Running || self.quota.reached(now) {
                    self.idle_since = Instant::now();
                    self.matchmaker.failed();
                    return;
                }
                if self.budget.wait(now, budget::BOT_COST) > 0 {
                    self.matchmaker.failed();
                    return;
                }
                match self.matchmaker.found(&bots, &account, now) {
                    Some((opponent, offer)) => {
                        self.budget.spend(now, budget::BOT_COST);
                        spawn_create(&self.client, opponent, offer, &self.inbox_tx);
                    }
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
            spawn_cancel(&self.client, id);
            return;
        }
        if self.games.contains_key(&id) {
            // Accepted, and its game started, before we heard it was
            // created: never cancelled (Lichess would abort the game).
            tracing::info!(challenge = %id, opponent = %opponent, "matchmaking: challenge sent and already accepted");
            drop(keep_alive);
            self.matchmaker.created(id.clone(), opponent, None);
            self.matchmaker.settled(&id, Outcome::Accepted, unix_now());
            return;
        }
        // Our challenge holds a slot until it is answered; an
        // incoming challenge that needs it cancels ours.
        let Some(slot) = self.slots.try_reserve() else {
            tracing::info!(challenge = %id, "matchmaking: no slot left for our challenge; cancelling it");
            self.matchmaker.not_sent();
            self.idle_since = Instant::now();
            spawn_cancel(&self.client, id);
            return;
        };
        tracing::info!(challenge = %id, opponent = %opponent, "matchmaking: challenge sent; waiting for an answer");
        let mut entry = GameEntry::new(Some(slot));
        entry.opponent = Some(opponent.to_lowercase());
        // Matchmaking challenges bots; a planned game's opponent is known
        // once its game reads the players.
        entry.bot = !self.matchmaker.creating_planned();
        entry.outgoing = true;
        self.games.insert(id.clone(), entry);
        let challenge = id.clone();
        let task = tokio::spawn(async move {
            let done = keep_alive.done().await;
            tracing::debug!(challenge = %challenge, done = done.as_deref().unwrap_or("-"), "our challenge's stream ended");
        });
        self.matchmaker
            .created(id, opponent, Some(task.abort_handle()));
    }

    /// Whether every slot challenges may take is in use (an arena's game
    /// or a `kaissa ctl` challenge may hold one that `games` does not
    /// list): a challenge of ours would be cancelled as soon as created.
    fn no_free_slot(&self) -> bool {
        self.slots.in_use() >= self.slots.capacity()
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
            self.decline_queued(Challenge::from_bot, "daily bot quota");
        } else if e.status() == Some(429) || e.is_transient() {
            tracing::warn!("matchmaking: challenge not sent: {e}");
            self.matchmaker.not_sent();
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

/// Asks for what `search` names: the bots online (who of those nearest
/// our rating is playing now, when Lichess says) and our account.
fn spawn_search<M: From<MatchEvent> + Send + 'static>(
    client: &Client,
    search: Search,
    tx: &mpsc::UnboundedSender<M>,
) {
    let client = client.clone();
    let tx = tx.clone();
    tokio::spawn(async move {
        let result = async {
            let account = match search.account {
                Some(account) => account,
                None => client.account().await?,
            };
            let mut bots = client.online_bots(ONLINE_BOTS).await?;
            // Who is in a game now: not challenged (a challenge would
            // wait, or be declined). Unknown if the question fails.
            // Asked of those nearest our rating.
            let ours = perf_rating(&account.perfs, search.perf).unwrap_or(DEFAULT_RATING);
            let mut near: Vec<&OnlineBot> = bots.iter().collect();
            near.sort_by_key(|b| {
                perf_rating(&b.perfs, search.perf).map_or(u32::MAX, |r| r.abs_diff(ours))
            });
            let ids: Vec<String> = near.iter().take(STATUS_IDS).map(|b| b.id.clone()).collect();
            match client.users_status(&ids).await {
                Ok(status) => {
                    for bot in &mut bots {
                        bot.playing = status
                            .iter()
                            .any(|s| s.playing && s.id.eq_ignore_ascii_case(&bot.id));
                    }
                }
                Err(e) => tracing::debug!("matchmaking: who is playing is unknown: {e}"),
            }
            Ok((bots, account))
        }
        .await;
        let _ = tx.send(M::from(MatchEvent::Found(Box::new(result))));
    });
}

/// Sends our challenge `offer` to `opponent`, kept open by its stream.
fn spawn_create<M: From<MatchEvent> + Send + 'static>(
    client: &Client,
    opponent: String,
    offer: CreateChallenge,
    tx: &mpsc::UnboundedSender<M>,
) {
    let client = client.clone();
    let tx = tx.clone();
    tokio::spawn(async move {
        let result = Box::new(client.create_challenge_kept(&opponent, &offer).await);
        let _ = tx.send(M::from(MatchEvent::Created { opponent, result }));
    });
}

/// Withdraws our challenge `id` in the background.
pub(super) fn spawn_cancel(client: &Client, id: String) {
    let client = client.clone();
    tokio::spawn(async move {
        match client.cancel_challenge(&id).await {
            Ok(()) => tracing::info!(challenge = %id, "our challenge cancelled"),
            Err(e) => tracing::warn!(challenge = %id, "cannot cancel our challenge: {e}"),
        }
    });
}
