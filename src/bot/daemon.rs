//! The daemon's event loop: keeps the event stream open (reconnecting
//! with a backoff), decides each incoming challenge with
//! [`challenge::decide`](super::challenge::decide) and accepts or declines
//! it, starts one game task per started game, and keeps the registry of
//! games so the concurrency limit holds.
//!
//! The registry maps a game id (a challenge id is its game's id) to a
//! [`GameEntry`]: the slot it holds, if any, and the handle of its task,
//! once it started. Slots are taken when a challenge is accepted (or at
//! `gameStart` for a game we did not accept, e.g. one we created), and
//! given back on `gameFinish`, when the game task ends, or when an
//! accepted challenge never turns into a game within
//! `bot.game_start_timeout_secs`. An accept that failed on our side
//! (timeout, connection cut, or a 404 to the retry of an accept that went
//! through) may have worked on the server's, so it keeps its slot until
//! the game starts or that timeout passes.
//!
//! On shutdown the loop stops and the running game tasks are stopped
//! where they are (finishing them gracefully is the next step; the
//! registry's [`GameHandle`]s can already ask a game to resign).

use super::challenge::{Decision, SlotGuard, Slots, decide};
use super::game::{self, GameCommand, GameContext, GameHandle, Me};
use crate::config::Config;
use crate::lichess::client::{Client, Error as ClientError};
use crate::lichess::model::{Challenge, DeclineReason, Direction, Event, GameInfo};
use crate::lichess::stream::StreamEvent;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;

/// The shortest and longest pause before reopening the event stream.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// How often pending accepts are checked for a game that never started.
const HOUSEKEEPING: Duration = Duration::from_millis(500);

/// One game the daemon knows of.
#[derive(Debug)]
pub struct GameEntry {
    /// Held while the game counts against `bot.concurrency`.
    slot: Option<SlotGuard>,
    /// The game's task, once `gameStart` arrived.
    task: Option<GameHandle>,
    /// When the challenge was accepted, while the game has not started.
    accepted_at: Option<Instant>,
}

/// The event loop's state.
pub struct Daemon {
    client: Client,
    config: Arc<Config>,
    slots: Slots,
    games: HashMap<String, GameEntry>,
    search_permits: Arc<Semaphore>,
    done_tx: mpsc::UnboundedSender<String>,
    done_rx: mpsc::UnboundedReceiver<String>,
    me: Option<Me>,
}

impl Daemon {
    pub fn new(client: Client, config: Config) -> Daemon {
        let slots = Slots::new(config.bot.concurrency as usize);
        let search_permits = Arc::new(Semaphore::new(config.engine.threads.max(1) as usize));
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Daemon {
            client,
            config: Arc::new(config),
            slots,
            games: HashMap::new(),
            search_permits,
            done_tx,
            done_rx,
            me: None,
        }
    }

    /// Games in the registry (started or accepted), for tests and status.
    pub fn games(&self) -> usize {
        self.games.len()
    }

    /// Runs until `shutdown` turns `true` (or its sender is dropped).
    /// Errors only on a fatal problem (the token is rejected).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<(), ClientError> {
        let result = self.run_inner(&mut shutdown).await;
        let running = self.games.values().filter(|g| g.task.is_some()).count();
        if running > 0 {
            tracing::warn!(games = running, "stopping with games in progress");
        }
        for entry in self.games.values() {
            if let Some(task) = &entry.task {
                task.abort();
            }
        }
        result
    }

    async fn run_inner(&mut self, shutdown: &mut watch::Receiver<bool>) -> Result<(), ClientError> {
        self.me = Some(self.whoami(shutdown).await?);
        let mut backoff = RECONNECT_MIN;
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let opened = tokio::select! {
                r = self.client.stream_events() => r,
                _ = shutdown.changed() => continue,
            };
            match opened {
                Ok(mut stream) => {
                    tracing::info!("event stream open");
                    backoff = RECONNECT_MIN;
                    loop {
                        tokio::select! {
                            next = stream.next() => match next {
                                Some(Ok(StreamEvent::Item(event))) => {
                                    let stopping = *shutdown.borrow();
                                    self.handle(event, stopping).await
                                }
                                Some(Ok(StreamEvent::KeepAlive)) => {}
                                Some(Ok(StreamEvent::Skipped(why))) => {
                                    tracing::warn!("event stream: line skipped: {why}")
                                }
                                Some(Err(e)) => {
                                    tracing::warn!("event stream failed: {e}");
                                    break;
                                }
                                None => {
                                    tracing::warn!("event stream closed by the server");
                                    break;
                                }
                            },
                            Some(id) = self.done_rx.recv() => self.game_done(&id),
                            _ = housekeeping.tick() => self.expire_accepts(),
                            _ = shutdown.changed() => break,
                        }
                    }
                }
                Err(e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. })) => {
                    return Err(e);
                }
                Err(e) => tracing::warn!("cannot open the event stream: {e}"),
            }
            if *shutdown.borrow() {
                return Ok(());
            }
            tracing::info!(retry_in_ms = backoff.as_millis() as u64, "reconnecting");
            let until = Instant::now() + backoff;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => break,
                    Some(id) = self.done_rx.recv() => self.game_done(&id),
                    _ = housekeeping.tick() => self.expire_accepts(),
                    _ = shutdown.changed() => break,
                }
            }
            backoff = (backoff * 2).min(RECONNECT_MAX);
        }
    }

    /// Our account, to know our colour in each game. Retries transient
    /// failures; a rejected token is fatal.
    async fn whoami(&self, shutdown: &mut watch::Receiver<bool>) -> Result<Me, ClientError> {
        let mut backoff = RECONNECT_MIN;
        loop {
            match self.client.account().await {
                Ok(account) => {
                    let name = if account.username.is_empty() {
                        account.id.clone()
                    } else {
                        account.username.clone()
                    };
                    if !account.is_bot() {
                        tracing::warn!(account = %name, "not a BOT account: the bot endpoints will refuse it");
                    }
                    tracing::info!(account = %name, "logged in");
                    return Ok(Me {
                        id: account.id.to_lowercase(),
                        name,
                    });
                }
                Err(e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. })) => {
                    return Err(e);
                }
                Err(e) => tracing::warn!("cannot read the account: {e}"),
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                return Err(ClientError::InvalidOptions(
                    "shut down before logging in".to_owned(),
                ));
            }
            backoff = (backoff * 2).min(RECONNECT_MAX);
        }
    }

    async fn handle(&mut self, event: Event, shutting_down: bool) {
        match event {
            Event::Challenge { challenge, .. } => {
                if challenge.direction == Some(Direction::Out) {
                    tracing::debug!(challenge = %challenge.id, "our own challenge");
                    return;
                }
                self.on_challenge(&challenge, shutting_down).await;
            }
            Event::ChallengeCanceled { challenge } => {
                tracing::info!(challenge = %challenge.id, "challenge canceled");
            }
            Event::ChallengeDeclined { challenge } => {
                tracing::info!(challenge = %challenge.id, "our challenge was declined");
            }
            Event::GameStart { game } => self.on_game_start(game),
            Event::GameFinish { game } => self.on_game_finish(game),
            Event::Unknown { kind } => tracing::debug!(%kind, "unknown event ignored"),
        }
    }

    /// Starts the game's task, exactly once per game id.
    fn on_game_start(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        if let Some(entry) = self.games.get(&id)
            && entry.task.is_some()
        {
            tracing::debug!(game = %id, "game already being played");
            return;
        }
        let Some(me) = self.me.clone() else {
            return;
        };
        let slots = &self.slots;
        let entry = self.games.entry(id.clone()).or_insert_with(|| GameEntry {
            slot: None,
            task: None,
            accepted_at: None,
        });
        if entry.slot.is_none() {
            entry.slot = slots.try_reserve();
            if entry.slot.is_none() {
                tracing::warn!(game = %id, "game started beyond the concurrency limit; playing it anyway");
            }
        }
        entry.accepted_at = None;
        let ctx = GameContext {
            client: self.client.clone(),
            config: Arc::clone(&self.config),
            me,
            search_permits: Arc::clone(&self.search_permits),
        };
        entry.task = Some(game::spawn(ctx, info, self.done_tx.clone()));
    }

    fn on_game_finish(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        tracing::debug!(game = %id, "gameFinish");
        let Some(entry) = self.games.get_mut(&id) else {
            return;
        };
        // The game no longer counts against the limit, even if its task
        // still writes the PGN.
        entry.slot = None;
        match &entry.task {
            Some(task) => task.send(GameCommand::Finished(Box::new(info))),
            None => {
                self.games.remove(&id);
            }
        }
    }

    /// A game task ended.
    fn game_done(&mut self, id: &str) {
        if self.games.remove(id).is_some() {
            tracing::debug!(game = %id, in_use = self.slots.in_use(), "game task ended");
        }
    }

    /// Gives back the slots of accepted challenges whose game never
    /// started.
    fn expire_accepts(&mut self) {
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

    async fn on_challenge(&mut self, challenge: &Challenge, shutting_down: bool) {
        let concurrency = self.slots.capacity();
        let mut decision = decide(
            challenge,
            &self.config.challenge,
            self.slots.in_use(),
            concurrency,
            shutting_down,
        );
        let guard = match decision {
            Decision::Accept => match self.slots.try_reserve() {
                Some(guard) => Some(guard),
                None => {
                    decision = Decision::Decline(DeclineReason::Later);
                    None
                }
            },
            Decision::Decline(_) => None,
        };
        let who = &challenge.challenger.id;
        match decision {
            Decision::Accept => {
                tracing::info!(
                    challenge = %challenge.id,
                    challenger = %who,
                    variant = challenge.variant.key.as_str(),
                    speed = challenge.speed.as_str(),
                    rated = challenge.rated,
                    "accept"
                );
                let result = self.client.accept_challenge(&challenge.id).await;
                // A failure on our side of the wire (timeout, cut
                // connection, 5xx) may still have been an accept on the
                // server's, and the retry of an accept that went through
                // gets 404: keep the slot until the game starts or the
                // start timeout passes. Any other refusal frees it.
                let keep = match &result {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(challenge = %challenge.id, "accept failed: {e}");
                        e.is_transient() || matches!(e, ClientError::NotFound { .. })
                    }
                };
                if keep && !self.games.contains_key(&challenge.id) {
                    self.games.insert(
                        challenge.id.clone(),
                        GameEntry {
                            slot: guard,
                            task: None,
                            accepted_at: Some(Instant::now()),
                        },
                    );
                }
            }
            Decision::Decline(reason) => {
                tracing::info!(
                    challenge = %challenge.id,
                    challenger = %who,
                    variant = challenge.variant.key.as_str(),
                    speed = challenge.speed.as_str(),
                    rated = challenge.rated,
                    reason = reason.as_str(),
                    "decline"
                );
                if let Err(e) = self.client.decline_challenge(&challenge.id, reason).await {
                    tracing::warn!(challenge = %challenge.id, "decline failed: {e}");
                }
            }
        }
    }
}
