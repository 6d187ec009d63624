//! Signals turned into the daemon's stop requests ([`Stop`]), sent on a
//! watch channel that `bot::daemon` reads.
//!
//! - SIGTERM or SIGINT (Ctrl-C): [`Stop::Finish`], the running games
//!   finish. But when systemd is *restarting* the unit (`systemctl
//!   restart`: its job for our unit is a `restart` job), the daemon is
//!   coming back at once, so the games are handed over instead
//!   ([`Stop::HandOver`]): the next run resumes them.
//! - SIGUSR1: [`Stop::HandOver`], for a restart outside systemd.
//! - A second SIGTERM/SIGINT during [`Stop::Finish`]: [`Stop::Resign`].

use std::time::Duration;
use tokio::sync::watch;

use crate::bot::daemon::Stop;

/// How long systemctl may take to say whether a restart is queued.
const ASK_SYSTEMD: Duration = Duration::from_secs(3);

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
    tokio::spawn(async move {
        loop {
            let signal = next_signal().await;
            let now = *tx.borrow();
            let restarting = signal == Signal::Terminate && now == Stop::No && {
                let queued = restart_queued().await;
                if queued {
                    tracing::info!("systemd is restarting the service");
                }
                queued
            };
            let next = escalate(now, signal, restarting);
            tx.send_if_modified(|stop| std::mem::replace(stop, next) != next);
            if next == Stop::Resign {
                break;
            }
        }
        std::future::pending::<()>().await;
    });
    rx
}

/// The stop request after `signal`, given the current one; `restarting`:
/// systemd restarts the unit (asked on the first SIGTERM only).
fn escalate(now: Stop, signal: Signal, restarting: bool) -> Stop {
    match (now, signal) {
        (Stop::No, Signal::Terminate) if restarting => Stop::HandOver,
        (Stop::No, Signal::Terminate) => Stop::Finish,
        (Stop::Finish, Signal::Terminate) => Stop::Resign,
        (Stop::No | Stop::Finish, Signal::HandOver) => Stop::HandOver,
        // Handing over is already the quick way out; resigning is final.
        (Stop::HandOver | Stop::Resign, _) => now,
    }
}

/// The next SIGTERM, SIGINT or SIGUSR1.
async fn next_signal() -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::user_defined1()),
        ) {
            (Ok(mut term), Ok(mut int), Ok(mut usr1)) => {
                tokio::select! {
                    _ = term.recv() => Signal::Terminate,
                    _ = int.recv() => Signal::Terminate,
                    _ = usr1.recv() => Signal::HandOver,
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
                Signal::Terminate
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        Signal::Terminate
    }
}

/// Whether systemd has a restart job for the unit this process runs in
/// (`systemctl restart` stops the unit under a `restart` job, which turns
/// into a `start` job once it stopped). False when not run by systemd
/// (`$INVOCATION_ID` unset) or when `systemctl list-jobs` cannot answer:
/// then the games finish, the safe choice.
async fn restart_queued() -> bool {
    if std::env::var_os("INVOCATION_ID").is_none() {
        return false;
    }
    let Some(unit) = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| unit_of_cgroup(&text))
    else {
        return false;
    };
    let jobs = tokio::process::Command::new("systemctl")
        .args([
            "list-jobs",
            "--no-legend",
            "--plain",
            "--full",
            "--no-pager",
        ])
        .arg(&unit)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(ASK_SYSTEMD, jobs).await {
        Ok(Ok(out)) if out.status.success() => {
            has_restart_job(&String::from_utf8_lossy(&out.stdout), &unit)
        }
        Ok(Ok(out)) => {
            tracing::info!(status = %out.status, "systemctl list-jobs failed: the games finish");
            false
        }
        Ok(Err(e)) => {
            tracing::info!("cannot run systemctl ({e}): the games finish");
            false
        }
        Err(_) => {
            tracing::info!("systemctl list-jobs did not answer: the games finish");
            false
        }
    }
}

/// The service unit named by a `/proc/self/cgroup` text: the last
/// `*.service` component of a cgroup path (cgroup v2's `0::` line, or a
/// v1 hierarchy's).
fn unit_of_cgroup(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .find_map(|path| {
            path.rsplit('/')
                .find(|part| part.ends_with(".service"))
                .map(str::to_owned)
        })
}

/// Whether `systemctl list-jobs --plain --no-legend` output (`ID UNIT
/// TYPE STATE` per line) has a restart job for `unit`.
fn has_restart_job(jobs: &str, unit: &str) -> bool {
    jobs.lines().any(|line| {
        let mut fields = line.split_whitespace().skip(1);
        fields.next() == Some(unit) && fields.next().is_some_and(|t| t.ends_with("restart"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_escalate() {
        use Signal::*;
        assert_eq!(escalate(Stop::No, Terminate, false), Stop::Finish);
        assert_eq!(escalate(Stop::No, Terminate, true), Stop::HandOver);
        assert_eq!(escalate(Stop::Finish, Terminate, false), Stop::Resign);
        assert_eq!(escalate(Stop::No, HandOver, false), Stop::HandOver);
        assert_eq!(escalate(Stop::Finish, HandOver, false), Stop::HandOver);
        assert_eq!(escalate(Stop::HandOver, Terminate, false), Stop::HandOver);
        assert_eq!(escalate(Stop::Resign, HandOver, false), Stop::Resign);
    }

    #[test]
    fn the_unit_comes_from_the_cgroup_path() {
        assert_eq!(
            unit_of_cgroup("0::/system.slice/kaissa.service\n").as_deref(),
            Some("kaissa.service")
        );
        assert_eq!(
            unit_of_cgroup("0::/system.slice/system-kaissa.slice/kaissa@blitz.service/main\n")
                .as_deref(),
            Some("kaissa@blitz.service")
        );
        assert_eq!(
            unit_of_cgroup("12:pids:/\n1:name=systemd:/system.slice/kaissa.service\n0::/\n")
                .as_deref(),
            Some("kaissa.service")
        );
        assert_eq!(
            unit_of_cgroup("0::/user.slice/user-0.slice/session-3.scope\n"),
            None
        );
    }

    #[test]
    fn only_a_restart_job_of_our_unit_counts() {
        let jobs = "1234 kaissa.service restart running\n1240 other.service start waiting\n";
        assert!(has_restart_job(jobs, "kaissa.service"));
        assert!(!has_restart_job(jobs, "other.service"));
        assert!(!has_restart_job(
            "1234 kaissa.service stop running\n",
            "kaissa.service"
        ));
        assert!(has_restart_job(
            "7 kaissa.service try-restart waiting\n",
            "kaissa.service"
        ));
        assert!(!has_restart_job("", "kaissa.service"));
    }
}
