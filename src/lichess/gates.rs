//! The rate-limit gates: Lichess limits each kind of request apart
//! ([`Endpoint`]), so a 429 closes the gate of its endpoint only, for the
//! wait the answer asks (doubled for each 429 in a row there), while the
//! others go on.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::client::MAX_PAUSE;

/// The kinds of request Lichess rate-limits apart: a 429 closes the gate
/// of one of them only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `GET /api/account`, `POST /api/bot/account/upgrade`.
    Account,
    /// `POST /api/token/test`.
    TokenTest,
    /// `GET /api/account/playing`.
    Playing,
    /// `GET /api/bot/online`.
    OnlineBots,
    /// The event stream's open.
    Events,
    /// Game-stream opens, moves, resign, abort, claims (the game lane:
    /// they skip the gates; a 429 there is retried quickly).
    Game,
    /// Chat lines and the chat history.
    Chat,
    /// Draw and takeback answers.
    Offers,
    /// Accepting and declining challenges.
    ChallengeAnswer,
    /// Creating a challenge.
    ChallengeCreate,
    /// Cancelling our challenge.
    ChallengeCancel,
    /// Arena tournaments: their state, joining, withdrawing; joining a
    /// team.
    Tournament,
}

/// The rate-limit gates, one per [`Endpoint`], closed after a 429 there.
/// Repeated 429s on an endpoint with no success in between double its
/// pause each time ([`Gates::strike`]).
#[derive(Debug, Default)]
pub(super) struct Gates {
    paused_until: Mutex<HashMap<Endpoint, Instant>>,
    /// 429s in a row per endpoint, since its last success.
    strikes: Mutex<HashMap<Endpoint, u32>>,
}

impl Endpoint {
    /// The endpoint's name, as the metrics label it.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Account => "account",
            Endpoint::TokenTest => "token_test",
            Endpoint::Playing => "playing",
            Endpoint::OnlineBots => "online_bots",
            Endpoint::Events => "events",
            Endpoint::Game => "game",
            Endpoint::Chat => "chat",
            Endpoint::Offers => "offers",
            Endpoint::ChallengeAnswer => "challenge_answer",
            Endpoint::ChallengeCreate => "challenge_create",
            Endpoint::ChallengeCancel => "challenge_cancel",
            Endpoint::Tournament => "tournament",
        }
    }
}

impl Gates {
    /// A 429 on `endpoint`: its gate closes for `base` (the answer's own
    /// wait, else the configured pause), doubled for each 429 in a row
    /// before it, clamped to [`MAX_PAUSE`]. The pause taken.
    pub(super) fn strike(&self, endpoint: Endpoint, base: Duration) -> Duration {
        let mut strikes = self
            .strikes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let n = strikes.entry(endpoint).or_insert(0);
        let pause = base
            .checked_mul(1 << (*n).min(16))
            .unwrap_or(MAX_PAUSE)
            .min(MAX_PAUSE);
        *n = n.saturating_add(1);
        drop(strikes);
        self.pause(endpoint, pause);
        crate::metrics::metrics().inc(
            "kaissa_rate_limit_pauses_total",
            &[("endpoint", endpoint.name())],
        );
        pause
    }

    /// A request of `endpoint` went through: its next 429 starts over.
    pub(super) fn cleared(&self, endpoint: Endpoint) {
        let mut strikes = self
            .strikes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !strikes.is_empty() {
            strikes.remove(&endpoint);
        }
    }

    fn until(&self, endpoint: Endpoint) -> Option<Instant> {
        self.paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&endpoint)
            .copied()
    }

    pub(super) fn pause(&self, endpoint: Endpoint, pause: Duration) {
        let now = Instant::now();
        let until = now
            .checked_add(pause.min(MAX_PAUSE))
            .unwrap_or(now + MAX_PAUSE);
        let mut paused = self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        paused.retain(|_, at| *at > now);
        let at = paused.entry(endpoint).or_insert(until);
        *at = (*at).max(until);
    }

    /// Waits until `endpoint`'s gate is open; it may close again while we
    /// sleep.
    pub(super) async fn wait(&self, endpoint: Endpoint) {
        while let Some(until) = self.until(endpoint) {
            if until <= Instant::now() {
                return;
            }
            tokio::time::sleep_until(until).await;
        }
    }

    pub(super) fn remaining(&self, endpoint: Endpoint) -> Option<Duration> {
        let until = self.until(endpoint)?;
        let left = until.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// The endpoints closed now, with their time left.
    pub(super) fn closed(&self) -> Vec<(Endpoint, Duration)> {
        let now = Instant::now();
        let paused = self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut closed: Vec<_> = paused
            .iter()
            .filter(|(_, at)| **at > now)
            .map(|(e, at)| (*e, at.saturating_duration_since(now)))
            .collect();
        closed.sort();
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_gate_keeps_the_longest_pause_of_its_endpoint_only() {
        let gates = Gates::default();
        let chat = Endpoint::Chat;
        assert_eq!(gates.remaining(chat), None);
        gates.pause(chat, Duration::from_secs(60));
        gates.pause(chat, Duration::from_secs(10));
        let left = gates.remaining(chat).unwrap();
        assert!(left > Duration::from_secs(59));
        assert_eq!(gates.remaining(Endpoint::ChallengeAnswer), None);
        assert_eq!(gates.closed(), [(chat, left)]);
        let start = Instant::now();
        gates.wait(Endpoint::ChallengeAnswer).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        gates.wait(chat).await;
        assert!(start.elapsed() >= Duration::from_secs(59));
        assert_eq!(gates.remaining(chat), None);
        assert!(gates.closed().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_pause_is_clamped() {
        let gates = Gates::default();
        gates.pause(Endpoint::Account, Duration::from_secs(99_999_999_999_999));
        gates.pause(Endpoint::Account, Duration::MAX);
        let left = gates.remaining(Endpoint::Account).unwrap();
        assert!(left <= MAX_PAUSE && left > MAX_PAUSE - Duration::from_secs(1));
    }
}
