//! The daemon's event loop: keeps the event stream open (reconnecting
//! with a backoff), decides each incoming challenge with
//! [`challenge::decide`](super::challenge::decide) and accepts or declines
//! it, and tracks the games running so the concurrency limit holds.
//!
//! Games are not played yet: a `gameStart` only takes a slot, released on
//! `gameFinish` (the game task comes later).

use super::challenge::{Decision, SlotGuard, Slots, decide};
use crate::config::Config;
use crate::lichess::client::{Client, Error as ClientError};
use crate::lichess::model::{Challenge, Direction, Event};
use crate::lichess::stream::StreamEvent;
use futures::StreamExt;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::watch;

/// The shortest and longest pause before reopening the event stream.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// The event loop's state.
pub struct Daemon {
    client: Client,
    config: Config,
    slots: Slots,
    /// Slots held, by game id (a challenge id is its game's id): taken on
    /// accept or `gameStart`, released on `gameFinish` or a failed accept.
    games: HashMap<String, SlotGuard>,
}

impl Daemon {
    pub fn new(client: Client, config: Config) -> Daemon {
        let slots = Slots::new(config.bot.concurrency as usize);
        Daemon {
            client,
            config,
            slots,
            games: HashMap::new(),
        }
    }

    /// Runs until `shutdown` turns `true` (or its sender is dropped).
    /// Errors only on a fatal problem (the token is rejected).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<(), ClientError> {
        let mut backoff = RECONNECT_MIN;
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
                        let next = tokio::select! {
                            n = stream.next() => n,
                            _ = shutdown.changed() => break,
                        };
                        match next {
                            Some(Ok(StreamEvent::Item(event))) => {
                                let stopping = *shutdown.borrow();
                                self.handle(event, stopping).await
                            }
                            Some(Ok(StreamEvent::KeepAlive)) => {}
                            Some(Ok(StreamEvent::Skipped(why))) => {
                                tracing::warn!(?why, "event stream: line skipped")
                            }
                            Some(Err(e)) => {
                                tracing::warn!("event stream failed: {e}");
                                break;
                            }
                            None => {
                                tracing::warn!("event stream closed by the server");
                                break;
                            }
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
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => {}
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
            Event::GameStart { game } => {
                if !self.games.contains_key(&game.game_id) {
                    match self.slots.try_reserve() {
                        Some(guard) => {
                            self.games.insert(game.game_id.clone(), guard);
                        }
                        None => tracing::warn!(
                            game = %game.game_id,
                            "game started beyond the concurrency limit"
                        ),
                    }
                }
                tracing::info!(game = %game.game_id, "game started (not played yet)");
            }
            Event::GameFinish { game } => {
                self.games.remove(&game.game_id);
                tracing::info!(game = %game.game_id, "game finished");
            }
            Event::Unknown { kind } => tracing::debug!(%kind, "unknown event ignored"),
        }
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
                    decision = Decision::Decline(crate::lichess::model::DeclineReason::Later);
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
                match self.client.accept_challenge(&challenge.id).await {
                    Ok(()) => {
                        if let Some(guard) = guard {
                            self.games.insert(challenge.id.clone(), guard);
                        }
                    }
                    Err(e) => tracing::warn!(challenge = %challenge.id, "accept failed: {e}"),
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
