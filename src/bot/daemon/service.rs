//! What the daemon tells systemd: `READY=1` when the event stream first
//! opens, `WATCHDOG=1` from a task of its own while the loop turns and
//! the event stream is open (or was within [`UNHEALTHY_AFTER`]), `STATUS=`
//! when the status line changes, `STOPPING=1` on shutdown. Without
//! `NOTIFY_SOCKET` nothing is sent.

use crate::systemd::Notifier;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Asked of systemd beyond a stop's own bound: the exit itself (the
/// last PGNs, the tasks' ends).
const STOP_MARGIN: Duration = Duration::from_secs(30);
/// The loop must have turned this recently for the watchdog to ping.
const LOOP_STUCK_AFTER: Duration = Duration::from_secs(30);
/// The event stream may be down this long before the watchdog pings stop
/// (systemd then restarts the daemon, which is all it can do).
const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);

/// The daemon's side of the service manager.
pub(super) struct Service {
    notifier: Arc<Notifier>,
    /// When the event stream was last seen open.
    last_open: Option<Instant>,
    ready_sent: bool,
    /// Shared with the watchdog task.
    health: Arc<Mutex<Health>>,
    last_status: String,
}

/// What the watchdog looks at: when the event stream was last seen open,
/// and when the loop last turned.
#[derive(Debug, Default, Clone, Copy)]
struct Health {
    stream_open: Option<Instant>,
    /// Lichess asked us (a 429) not to reopen the event stream before
    /// this: down on its word, not stuck.
    paused_until: Option<Instant>,
    /// The event stream is connected now (it opened and has not ended).
    connected: bool,
    loop_turned: Option<Instant>,
}

impl Health {
    /// Whether the event stream was open within [`UNHEALTHY_AFTER`], or
    /// a rate-limit pause ended within it.
    fn stream_healthy(&self) -> bool {
        [self.stream_open, self.paused_until]
            .into_iter()
            .flatten()
            .any(|at| at.elapsed() < UNHEALTHY_AFTER)
    }
}

impl Service {
    pub(super) fn new(notifier: Notifier) -> Service {
        Service {
            notifier: Arc::new(notifier),
            last_open: None,
            ready_sent: false,
            health: Arc::new(Mutex::new(Health::default())),
            last_status: String::new(),
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The event stream is open (it opened, or a line or keep-alive just
    /// came); the first time, systemd hears `READY=1` and the watchdog
    /// starts.
    pub(super) fn stream_open(&mut self) {
        let now = Instant::now();
        self.last_open = Some(now);
        let mut health = self.health();
        health.stream_open = Some(now);
        health.connected = true;
        drop(health);
        if !self.ready_sent {
            self.ready_sent = true;
            if let Err(e) = self.notifier.ready() {
                tracing::warn!("cannot notify systemd: {e}");
            }
            self.spawn_watchdog();
        }
    }

    /// The event stream may not be reopened before `until` (Lichess's
    /// 429): the watchdog's patience counts from then, so that systemd
    /// does not restart a daemon that waits as asked (the restart would
    /// kill the games and knock at once).
    pub(super) fn paused_until(&self, until: Instant) {
        self.health().paused_until = Some(until);
    }

    /// The event stream ended (the daemon reconnects).
    pub(super) fn stream_down(&self) {
        self.health().connected = false;
    }

    /// `/healthz`'s answer: healthy while the event stream is connected
    /// and the loop turns.
    pub(super) fn probe(&self) -> crate::bot::web::Health {
        let health = Arc::clone(&self.health);
        Arc::new(move || {
            let h = *health.lock().unwrap_or_else(|p| p.into_inner());
            if !h.connected {
                return Err("the event stream is not connected".to_owned());
            }
            match h.loop_turned {
                Some(at) if at.elapsed() < LOOP_STUCK_AFTER => Ok(()),
                _ => Err("the daemon's loop does not turn".to_owned()),
            }
        })
    }

    /// The loop turned.
    pub(super) fn loop_turned(&self) {
        self.health().loop_turned = Some(Instant::now());
    }

    /// Whether the event stream was seen open within `within`.
    pub(super) fn connected(&self, within: Duration) -> bool {
        matches!(self.last_open, Some(at) if at.elapsed() < within)
    }

    /// `STATUS=`, when it changed.
    pub(super) fn status(&mut self, status: String) {
        if status != self.last_status {
            if let Err(e) = self.notifier.status(&status) {
                tracing::warn!("cannot notify systemd: {e}");
            }
            self.last_status = status;
        }
    }

    /// `STOPPING=1`.
    /// Tells systemd the daemon stops, within `within` (so that a long
    /// `bot.shutdown_deadline_secs` is not cut short by the unit's
    /// `TimeoutStopSec`); a margin is added for the exit itself.
    pub(super) fn stopping(&self, within: Duration) {
        let _ = self.notifier.stopping();
        let _ = self.notifier.extend_timeout(within + STOP_MARGIN);
    }

    /// `WATCHDOG=1` at half the period systemd asked for, while the loop
    /// turns (its housekeeping tick, whatever the event traffic) and the
    /// event stream is open or was within [`UNHEALTHY_AFTER`].
    fn spawn_watchdog(&self) {
        let Some(period) = self.notifier.watchdog_interval() else {
            return;
        };
        let notifier = Arc::clone(&self.notifier);
        let health = Arc::clone(&self.health);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period / 2);
            loop {
                ticks.tick().await;
                let h = *health.lock().unwrap_or_else(|p| p.into_inner());
                if h.stream_healthy()
                    && h.loop_turned
                        .is_some_and(|at| at.elapsed() < LOOP_STUCK_AFTER)
                    && let Err(e) = notifier.watchdog()
                {
                    tracing::warn!("cannot notify systemd: {e}");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_pause_keeps_the_watchdog_patient() {
        let now = Instant::now();
        let mut h = Health::default();
        assert!(!h.stream_healthy());
        // Lichess asked for 15 minutes: patient until 5 more after them.
        h.paused_until = Some(now + Duration::from_secs(900));
        assert!(h.stream_healthy());
        // (A clock younger than that cannot show a pause long over.)
        if let Some(long_ago) = now.checked_sub(UNHEALTHY_AFTER + Duration::from_secs(60)) {
            h.paused_until = Some(long_ago);
            h.stream_open = Some(long_ago);
            assert!(!h.stream_healthy());
        }
        h.stream_open = Some(now);
        assert!(h.stream_healthy());
    }
}
