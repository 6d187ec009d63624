//! Challenges to us: each is decided once, by the policy ([`decide`])
//! then the fair limits ([`fair`]): a per-opponent cap, the daily bot
//! quota, and the slots (some kept for humans). One that may play but
//! finds no slot waits in the [`ChallengeQueue`](crate::bot::policy::queue::ChallengeQueue),
//! and is accepted when a slot frees ([`Daemon::drain_queue`]); withdrawn
//! meanwhile (`challengeCanceled`), it leaves the queue.
//!
//! The answers (accept, decline) are sent by at most
//! [`MAX_ANSWERS_IN_FLIGHT`] tasks that report back; one that failed (a
//! 429, a timeout) is sent again later, after the rate-limit pause, up to
//! [`MAX_ANSWER_TRIES`] times.
//!
//! **The daily bot quota** ([`BotQuota`](crate::bot::policy::quota::BotQuota)):
//! a `bot.vsBot.day` 429 (or our own count) stops bot games until it
//! resets; everything else goes on.

use super::{
    ANSWER_RETRY, Answer, Answered, Daemon, GameEntry, Inbox, MAX_ANSWER_TRIES,
    MAX_ANSWERS_IN_FLIGHT, MAX_DECIDED, MAX_REMATCH_CHAINS, Phase,
};
use crate::bot::policy::challenge::{Decision, Fair, Load, decide, fair, may_take_slot};
use crate::bot::policy::queue::Pushed;
use crate::bot::store::state::unix_now;
use crate::config::GameKind;
use crate::lichess::client::is_valid_id;
use crate::lichess::model::{Challenge, Compat, DeclineReason, VariantKey};
use crate::lichess::{Endpoint, Error as ClientError};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// What the daemon keeps of the challenges made to it: the answers to
/// send and those on their way, the challenges decided (an event seen
/// again is not decided twice), and the rematch chains.
#[derive(Default)]
pub(super) struct Incoming {
    /// Answers waiting to be sent, and how many are being sent.
    pub(super) answers: VecDeque<Answer>,
    pub(super) in_flight: usize,
    /// Challenge ids already decided, and when.
    pub(super) decided: HashMap<String, Instant>,
    /// Games that were rematches, with the rematches in a row they made.
    pub(super) rematches: HashMap<String, u32>,
}

impl Daemon {
    /// Gives back the slots of accepted challenges whose game never
    /// started.
    pub(super) fn expire_accepts(&mut self) {
        let timeout = self.config.bot.game_start_timeout();
        self.games.retain(|id, entry| {
            let expired = entry.task.is_none()
                && entry.accepted_at.is_some_and(|at| at.elapsed() >= timeout);
            if expired {
                tracing::warn!(challenge = %id, "accepted challenge never started a game; slot released");
            }
            !expired
        });
    }

    pub(super) fn on_challenge(
        &mut self,
        challenge: &Challenge,
        compat: Option<&Compat>,
        shutting_down: bool,
    ) {
        if self.queue.contains(&challenge.id) {
            tracing::debug!(challenge = %challenge.id, "challenge already queued");
            return;
        }
        if self.incoming.decided.contains_key(&challenge.id) {
            tracing::debug!(challenge = %challenge.id, "challenge already decided");
            return;
        }
        if !is_valid_id(&challenge.id) {
            tracing::warn!("challenge with an invalid id ignored");
            return;
        }
        if self.incoming.decided.len() >= MAX_DECIDED {
            // The oldest decisions go first (the stream would only resend
            // challenges still open).
            if let Some(oldest) = self
                .incoming
                .decided
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone())
            {
                self.incoming.decided.remove(&oldest);
            }
        }
        self.incoming
            .decided
            .insert(challenge.id.clone(), Instant::now());
        let config = Arc::clone(&self.config);
        let policy = &config.challenge;
        let (reason, rule) = if shutting_down {
            (DeclineReason::Later, "shutting down")
        } else {
            match decide(challenge, compat, policy) {
                Decision::Decline(reason) => (reason, "policy"),
                Decision::Accept
                    if challenge.challenger_id().is_some_and(|id| self.blocked(id)) =>
                {
                    (DeclineReason::Generic, "block list")
                }
                Decision::Accept
                    if let Some(why) = challenge
                        .initial_fen
                        .as_deref()
                        .filter(|fen| *fen != "startpos")
                        .and_then(|fen| {
                            crate::bot::game::position_error(challenge.variant.key, Some(fen))
                        }) =>
                {
                    tracing::warn!(challenge = %challenge.id, "cannot play its position: {why}");
                    (DeclineReason::Standard, "position")
                }
                Decision::Accept if let Err(why) = self.engines.player(kind_of(challenge)) => {
                    tracing::warn!(challenge = %challenge.id, variant = challenge.variant.key.as_str(), "no engine can play it: {why}");
                    let reason = if challenge.variant.key == VariantKey::Standard {
                        DeclineReason::Generic
                    } else {
                        DeclineReason::Variant
                    };
                    (reason, "engine")
                }
                Decision::Accept => {
                    let mut verdict = fair(challenge, policy, self.load_for(challenge));
                    if verdict == Fair::Wait
                        && self.cancel_our_challenge("an incoming challenge comes first")
                    {
                        // Incoming challenges come first: ours gave way.
                        verdict = fair(challenge, policy, self.load_for(challenge));
                    }
                    match verdict {
                        Fair::Play => {
                            self.accept(challenge);
                            return;
                        }
                        Fair::Wait => match self.queue.push(challenge.clone()) {
                            Pushed::Queued(position) => {
                                self.queue_len.store(self.queue.len(), Ordering::Relaxed);
                                tracing::info!(
                                    challenge = %challenge.id,
                                    challenger = challenge.challenger_label(),
                                    bot = challenge.from_bot(),
                                    rating = challenge.challenger_rating(),
                                    position,
                                    waiting = self.queue.len(),
                                    "queued: every slot is taken"
                                );
                                return;
                            }
                            Pushed::Already => return,
                            Pushed::Full => (DeclineReason::Later, "queue full"),
                        },
                        Fair::Decline(reason, rule) => (reason, rule),
                    }
                }
            }
        };
        self.decline(challenge, reason, rule);
    }

    /// Where the slots stand for `challenge`: slots in use, those bots
    /// hold, and the games and queued challenges of its challenger.
    pub(super) fn load_for(&self, challenge: &Challenge) -> Load {
        // An anonymous challenger (declined before this) has no games.
        let who = challenge.challenger_id().unwrap_or_default().to_lowercase();
        let known = !who.is_empty();
        // Games that still hold a slot: a finished game whose task writes
        // its PGN does not count (a rematch is not refused).
        let games = self
            .games
            .values()
            .filter(|e| known && e.slot.is_some() && e.opponent.as_deref() == Some(who.as_str()))
            .count();
        let queued = self
            .queue
            .iter()
            .filter(|c| known && c.id != challenge.id && c.is_from(&who))
            .count();
        let now = unix_now();
        Load {
            concurrency: self.slots.capacity(),
            in_use: self.slots.in_use(),
            bots: self.bot_slots(),
            with_challenger: games + queued,
            bot_quota_reached: self.quota.reached(now),
            with_challenger_today: self.matchmaker.played.recent(&who, now).len(),
            rematches: self.rematches_of(challenge),
        }
    }

    /// The rematches in a row `challenge` would make: one more than its
    /// `rematchOf` game's, 0 if it is not a rematch.
    pub(super) fn rematches_of(&self, challenge: &Challenge) -> u32 {
        challenge.rematch_of.as_ref().map_or(0, |game| {
            self.incoming.rematches.get(game).copied().unwrap_or(0) + 1
        })
    }

    /// Slots held by games (or challenges) against bots.
    pub(super) fn bot_slots(&self) -> usize {
        self.games
            .values()
            .filter(|e| e.bot && e.slot.is_some())
            .count()
    }

    /// Accepts a challenge that may take a free slot; the slot is held
    /// from now, until the game starts (then by the game), the accept is
    /// refused, or the start timeout passes.
    pub(super) fn accept(&mut self, challenge: &Challenge) {
        let Some(slot) = self.slots.try_reserve() else {
            // Cannot happen (the load said a slot is free); decline
            // rather than overbook.
            self.decline(challenge, DeclineReason::Later, "no free slot");
            return;
        };
        tracing::info!(
            challenge = %challenge.id,
            challenger = challenge.challenger_label(),
            bot = challenge.from_bot(),
            variant = challenge.variant.key.as_str(),
            speed = challenge.speed.as_str(),
            rated = challenge.rated,
            in_use = self.slots.in_use(),
            "accept"
        );
        let rematches = self.rematches_of(challenge);
        if rematches > 0 {
            if self.incoming.rematches.len() >= MAX_REMATCH_CHAINS {
                self.incoming.rematches.clear();
            }
            self.incoming
                .rematches
                .insert(challenge.id.clone(), rematches);
        }
        let mut entry = GameEntry::new(Some(slot));
        entry.accepted_at = Some(Instant::now());
        entry.opponent = challenge.challenger_id().map(str::to_lowercase);
        entry.bot = challenge.from_bot();
        self.games.entry(challenge.id.clone()).or_insert(entry);
        self.incoming.answers.push_back(Answer {
            id: challenge.id.clone(),
            decline: None,
            tries: 0,
            not_before: Instant::now(),
        });
    }

    pub(super) fn decline(&mut self, challenge: &Challenge, reason: DeclineReason, rule: &str) {
        tracing::info!(
            challenge = %challenge.id,
            challenger = challenge.challenger_label(),
            variant = challenge.variant.key.as_str(),
            speed = challenge.speed.as_str(),
            rated = challenge.rated,
            reason = reason.as_str(),
            rule,
            "decline"
        );
        self.incoming.answers.push_back(Answer {
            id: challenge.id.clone(),
            decline: Some(reason),
            tries: 0,
            not_before: Instant::now(),
        });
    }

    /// Declines (`later`) the queued challenges for which `which` holds.
    pub(super) fn decline_queued(&mut self, which: impl FnMut(&Challenge) -> bool, rule: &str) {
        for challenge in self.queue.drain_where(which) {
            self.decline(&challenge, DeclineReason::Later, rule);
        }
        self.queue_len.store(self.queue.len(), Ordering::Relaxed);
    }

    /// Hands the free slots out: first to correspondence games whose turn
    /// came, then to the queued challenges that may take them, in queue
    /// order. Bot challenges are declined while the bot quota is reached.
    pub(super) fn drain_queue(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        if self.quota.reached(unix_now()) {
            self.decline_queued(Challenge::from_bot, "daily bot quota");
        }
        let due: Vec<String> = self
            .parking
            .waiting
            .iter()
            .filter(|(_, p)| p.due)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if self.slots.in_use() >= self.slots.capacity() {
                break;
            }
            if let Some(parked) = self.parking.waiting.remove(&id) {
                tracing::info!(game = %id, "correspondence: a slot is free, taking the game up");
                self.on_game_start(parked.info);
            }
        }
        while !self.queue.is_empty() && self.slots.in_use() < self.slots.capacity() {
            let policy = &self.config.challenge;
            let mut per_opponent: HashMap<String, usize> = HashMap::new();
            for e in self.games.values().filter(|e| e.slot.is_some()) {
                if let Some(o) = &e.opponent {
                    *per_opponent.entry(o.clone()).or_default() += 1;
                }
            }
            let load = Load {
                concurrency: self.slots.capacity(),
                in_use: self.slots.in_use(),
                bots: self.bot_slots(),
                with_challenger: 0,
                bot_quota_reached: false,
                with_challenger_today: 0,
                rematches: 0,
            };
            let cap = policy.max_games_per_opponent as usize;
            let next = self.queue.take_next(|c| {
                let playing = c
                    .challenger_id()
                    .and_then(|id| per_opponent.get(&id.to_lowercase()))
                    .copied()
                    .unwrap_or(0);
                playing < cap && may_take_slot(c.from_bot(), policy, load)
            });
            let Some(challenge) = next else {
                break;
            };
            self.queue_len.store(self.queue.len(), Ordering::Relaxed);
            tracing::info!(
                challenge = %challenge.id,
                challenger = challenge.challenger_label(),
                waiting = self.queue.len(),
                "a slot is free: taking the next queued challenge"
            );
            self.accept(&challenge);
        }
    }

    /// Starts sending the answers that are due, up to
    /// [`MAX_ANSWERS_IN_FLIGHT`] at once.
    pub(super) fn send_answers(&mut self) {
        let now = Instant::now();
        let mut later = VecDeque::new();
        while self.incoming.in_flight < MAX_ANSWERS_IN_FLIGHT {
            let Some(mut answer) = self.incoming.answers.pop_front() else {
                break;
            };
            if answer.not_before > now {
                later.push_back(answer);
                continue;
            }
            answer.tries += 1;
            self.incoming.in_flight += 1;
            let client = self.client.clone();
            let tx = self.inbox_tx.clone();
            tokio::spawn(async move {
                let result = match answer.decline {
                    None => client.accept_challenge(&answer.id).await,
                    Some(reason) => client.decline_challenge(&answer.id, reason).await,
                };
                let _ = tx.send(Inbox::Answered(Answered { answer, result }));
            });
        }
        later.append(&mut self.incoming.answers);
        self.incoming.answers = later;
    }

    /// A challenge whose accept Lichess refused is declined (for
    /// `reason`) instead, and the queue goes on into the slot it leaves.
    fn decline_instead(&mut self, id: String, reason: DeclineReason) {
        self.incoming.answers.push_back(Answer {
            id,
            decline: Some(reason),
            tries: 0,
            not_before: Instant::now(),
        });
        self.drain_queue();
    }

    /// Frees the slot of challenge `id` unless its game already runs (an
    /// earlier try of the accept went through).
    fn forget_unstarted(&mut self, id: &str) {
        if self.games.get(id).is_some_and(|entry| entry.task.is_none()) {
            self.games.remove(id);
        }
    }

    /// An accept or decline came back.
    pub(super) fn on_answered(&mut self, Answered { mut answer, result }: Answered) {
        self.incoming.in_flight = self.incoming.in_flight.saturating_sub(1);
        let what = if answer.decline.is_some() {
            "decline"
        } else {
            "accept"
        };
        let Err(e) = result else {
            tracing::debug!(challenge = %answer.id, "{what} sent");
            return;
        };
        if answer.decline.is_none()
            && let Some(wait) = e.bot_vs_bot_daily_limit()
        {
            // A quota on bot games, not a request rate: this challenge is
            // declined, the other bot challenges too; the rest goes on.
            let now = unix_now();
            self.quota
                .hit(now, Some(wait.as_secs()), e.message().unwrap_or_default());
            tracing::warn!(
                challenge = %answer.id,
                resets_in_s = self.quota.resets_in(now),
                "daily bot-game quota reached: bot challenges declined until it resets"
            );
            self.forget_unstarted(&answer.id);
            self.decline_instead(answer.id, DeclineReason::Later);
            return;
        }
        if answer.decline.is_none() && e.refused_by_limit().is_some() {
            // The challenger's own daily cap of bot games (lila's
            // `BotLimit.OpponentLimit`): the accept is refused but the
            // challenge stays open on Lichess. Declined, and the slot freed.
            tracing::info!(challenge = %answer.id, "the challenger cannot play more bot games today: {e}");
            self.forget_unstarted(&answer.id);
            self.decline_instead(answer.id, DeclineReason::Later);
            return;
        }
        let retry =
            (e.is_transient() || e.status() == Some(429)) && answer.tries < MAX_ANSWER_TRIES;
        tracing::warn!(challenge = %answer.id, tries = answer.tries, retry, "{what} failed: {e}");
        if retry {
            let wait = self
                .client
                .rate_limited_for(Endpoint::ChallengeAnswer)
                .unwrap_or_default()
                .max(ANSWER_RETRY);
            answer.not_before = Instant::now() + wait;
            self.incoming.answers.push_back(answer);
            return;
        }
        if answer.decline.is_none() {
            // The retry of an accept that went through gets 404: keep the
            // slot until the game starts or the start timeout passes. Any
            // other refusal frees it, a 404 to the first try too (the
            // challenge is gone: withdrawn while its cancel event was lost).
            let retried_404 = matches!(e, ClientError::NotFound { .. }) && answer.tries > 1;
            let gone = !retried_404
                && self
                    .games
                    .get(&answer.id)
                    .is_some_and(|entry| entry.task.is_none());
            if gone {
                self.games.remove(&answer.id);
                self.drain_queue();
            }
            // Lichess will not let us play it (400: a challenge a BOT
            // account cannot take, seen without its `compat` on a
            // reconnect, say): declined, not left for its challenger to
            // wait on.
            if e.status() == Some(400) {
                self.decline_instead(answer.id, DeclineReason::Generic);
            }
        }
    }
}

/// What decides who plays a challenge's game.
fn kind_of(challenge: &Challenge) -> GameKind {
    GameKind {
        variant: challenge.variant.key,
        speed: challenge.speed,
        against_bot: challenge.from_bot(),
        rated: challenge.rated,
    }
}
