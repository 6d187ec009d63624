//! Signals turned into the daemon's stop requests ([`Stop`]), sent on a
//! watch channel that `bot::daemon` reads.
//!
//! - SIGTERM or SIGINT (Ctrl-C): [`Stop::Finish`], the running games
//!   finish.
//! - SIGUSR1: [`Stop::HandOver`], the daemon is coming back at once (a
//!   restart), the next run resumes the games. The systemd units send it
//!   from `ExecStop=` when the stop is part of `systemctl restart`.
//! - A second SIGTERM/SIGINT during [`Stop::Finish`]: [`Stop::Resign`].

use tokio::sync::watch;

use crate::bot::daemon::Stop;

/// A signal, by what it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// SIGTERM, SIGINT.
    Terminate,
    /// SIGUSR1.
    HandOver,
}

/// Listens for signals from now on (a task on the current Tokio runtime)
/// and keeps the receiver's [`Stop`] up to date. The sender is kept, since
/// a dropped one would read as "resign now".
pub fn listen() -> watch::Receiver<Stop> {
    let (tx, rx) = watch::channel(Stop::No);
    // The streams are made once, here: a signal that comes while none is
    // listening is lost, and a second SIGTERM can follow the first within
    // microseconds.
    let mut signals = Signals::new();
    tokio::spawn(async move {
        loop {
            let signal = signals.next().await;
            let next = escalate(*tx.borrow(), signal);
            tx.send_if_modified(|stop| std::mem::replace(stop, next) != next);
            if next == Stop::Resign {
                break;
            }
        }
        std::future::pending::<()>().await;
    });
    rx
}

/// The stop request after `signal`, given the current one.
fn escalate(now: Stop, signal: Signal) -> Stop {
    match (now, signal) {
        (Stop::No, Signal::Terminate) => Stop::Finish,
        (Stop::Finish, Signal::Terminate) => Stop::Resign,
        (Stop::No | Stop::Finish, Signal::HandOver) => Stop::HandOver,
        // Handing over is already the quick way out; resigning is final.
        (Stop::HandOver | Stop::Resign, _) => now,
    }
}

/// The signals listened to, registered once for the process's life.
enum Signals {
    #[cfg(unix)]
    Unix {
        term: tokio::signal::unix::Signal,
        int: tokio::signal::unix::Signal,
        usr1: tokio::signal::unix::Signal,
    },
    /// Ctrl-C alone (no Unix signals here, or they could not be set up).
    CtrlC,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            if let (Ok(term), Ok(int), Ok(usr1)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
                signal(SignalKind::user_defined1()),
            ) {
                return Signals::Unix { term, int, usr1 };
            }
        }
        Signals::CtrlC
    }

    async fn next(&mut self) -> Signal {
        match self {
            #[cfg(unix)]
            Signals::Unix { term, int, usr1 } => tokio::select! {
                _ = term.recv() => Signal::Terminate,
                _ = int.recv() => Signal::Terminate,
                _ = usr1.recv() => Signal::HandOver,
            },
            Signals::CtrlC => {
                let _ = tokio::signal::ctrl_c().await;
                Signal::Terminate
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_escalate() {
        use Signal::*;
        assert_eq!(escalate(Stop::No, Terminate), Stop::Finish);
        assert_eq!(escalate(Stop::Finish, Terminate), Stop::Resign);
        assert_eq!(escalate(Stop::No, HandOver), Stop::HandOver);
        assert_eq!(escalate(Stop::Finish, HandOver), Stop::HandOver);
        assert_eq!(escalate(Stop::HandOver, Terminate), Stop::HandOver);
        assert_eq!(escalate(Stop::Resign, HandOver), Stop::Resign);
    }
}
