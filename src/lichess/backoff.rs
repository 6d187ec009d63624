//! The one reconnect backoff of every loop that reopens something (the
//! event stream, a game stream, the account check): exponential and
//! jittered, and reset only after the connection stayed up for a healthy
//! period, so a server that accepts and drops at once is not hammered.

use super::client::jittered;
use std::time::Duration;
use tokio::time::Instant;

/// Pauses between attempts. Call [`Backoff::up`] when the connection
/// opens and [`Backoff::failed`] when an attempt fails or the connection
/// drops: the pause doubles each time, from `min` to `max`, and goes back
/// to `min` only if the connection had stayed up for `healthy_after`.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    healthy_after: Duration,
    next: Duration,
    up_since: Option<Instant>,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration, healthy_after: Duration) -> Backoff {
        Backoff {
            min,
            max: max.max(min),
            healthy_after,
            next: min,
            up_since: None,
        }
    }

    /// The connection just opened.
    pub fn up(&mut self) {
        self.up_since = Some(Instant::now());
    }

    /// An attempt failed or the connection dropped: how long to wait
    /// before the next attempt (jittered to between half and all of it).
    pub fn failed(&mut self) -> Duration {
        if self
            .up_since
            .take()
            .is_some_and(|at| at.elapsed() >= self.healthy_after)
        {
            self.next = self.min;
        }
        let delay = jittered(self.next);
        self.next = (self.next * 2).min(self.max);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn resets_only_after_a_healthy_period() {
        let mut b = Backoff::new(100 * MS, 800 * MS, Duration::from_secs(10));
        let d = b.failed();
        assert!(d >= 50 * MS && d <= 100 * MS, "{d:?}");
        b.failed();
        let d = b.failed();
        assert!(d >= 200 * MS && d <= 400 * MS, "{d:?}");
        // Up for a moment only, then dropped: no reset.
        b.up();
        tokio::time::advance(Duration::from_secs(1)).await;
        let d = b.failed();
        assert!(d >= 400 * MS && d <= 800 * MS, "{d:?}");
        assert!(b.failed() <= 800 * MS);
        // Up for the healthy period: back to the minimum.
        b.up();
        tokio::time::advance(Duration::from_secs(10)).await;
        let d = b.failed();
        assert!(d >= 50 * MS && d <= 100 * MS, "{d:?}");
    }
}
