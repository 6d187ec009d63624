//! Shutdown signals for the daemon: SIGTERM and SIGINT (Ctrl-C) counted
//! into a watch channel that `bot::daemon` reads. The first lets the
//! running games finish, the second (`bot::daemon::IMMEDIATE`) resigns
//! them.

use tokio::sync::watch;

use crate::bot::daemon::IMMEDIATE;

/// Counts SIGTERM and SIGINT from now on (a task on the current Tokio
/// runtime); the receiver holds the count. Listening stops at
/// [`IMMEDIATE`]; the sender is kept, since a dropped one would read as
/// "stop now".
pub fn listen() -> watch::Receiver<u32> {
    let (tx, rx) = watch::channel(0u32);
    tokio::spawn(async move {
        loop {
            next_signal().await;
            tx.send_modify(|count| *count += 1);
            if *tx.borrow() >= IMMEDIATE {
                break;
            }
        }
        std::future::pending::<()>().await;
    });
    rx
}

/// The next SIGTERM or SIGINT.
async fn next_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
