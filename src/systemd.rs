//! The systemd notification protocol (`sd_notify`): tells the service
//! manager when the daemon is ready, that it is alive (watchdog), and when
//! it is stopping. Without `$NOTIFY_SOCKET` (not run by systemd) every call
//! is a no-op.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// A connection to the service manager's notification socket.
#[derive(Debug)]
pub struct Notifier {
    socket: Option<(UnixDatagram, SocketAddr)>,
    watchdog: Option<Duration>,
}

impl Notifier {
    /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`.
    pub fn from_env() -> io::Result<Notifier> {
        let socket = match std::env::var_os("NOTIFY_SOCKET") {
            Some(path) => {
                let addr = socket_addr(path.to_str().unwrap_or_default())?;
                Some((UnixDatagram::unbound()?, addr))
            }
            None => None,
        };
        let for_us = std::env::var("WATCHDOG_PID")
            .ok()
            .and_then(|p| p.parse::<u32>().ok())
            .is_none_or(|pid| pid == std::process::id());
        let watchdog = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|u| u.parse::<u64>().ok())
            .filter(|&u| u > 0 && for_us)
            .map(Duration::from_micros);
        Ok(Notifier { socket, watchdog })
    }

    /// A notifier that sends nothing (not run by systemd, or tests).
    pub fn disabled() -> Notifier {
        Notifier {
            socket: None,
            watchdog: None,
        }
    }

    /// The watchdog period systemd expects pings within, if enabled.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog
    }

    /// `READY=1`: startup is done.
    pub fn ready(&self) -> io::Result<()> {
        self.send("READY=1")
    }

    /// `WATCHDOG=1`: still healthy.
    pub fn watchdog(&self) -> io::Result<()> {
        self.send("WATCHDOG=1")
    }

    /// `STOPPING=1`: shutting down.
    pub fn stopping(&self) -> io::Result<()> {
        self.send("STOPPING=1")
    }

    /// `EXTEND_TIMEOUT_USEC`: the current phase (the stop) needs up to
    /// `within` from now; systemd extends its timeout to it if longer.
    pub fn extend_timeout(&self, within: Duration) -> io::Result<()> {
        self.send(&format!("EXTEND_TIMEOUT_USEC={}", within.as_micros()))
    }

    /// A free-form status line shown by `systemctl status`.
    pub fn status(&self, text: &str) -> io::Result<()> {
        let line: String = text.chars().filter(|&c| c != '\n').collect();
        self.send(&format!("STATUS={line}"))
    }

    fn send(&self, msg: &str) -> io::Result<()> {
        match &self.socket {
            Some((sock, addr)) => sock.send_to_addr(msg.as_bytes(), addr).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// `NOTIFY_SOCKET` is a path, or an abstract name written with a leading `@`.
fn socket_addr(path: &str) -> io::Result<SocketAddr> {
    if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        SocketAddr::from_abstract_name(name.as_bytes())
    } else if path.starts_with('/') {
        SocketAddr::from_pathname(path)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "NOTIFY_SOCKET is neither an absolute path nor an abstract name",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_reach_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let server = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            socket: Some((
                UnixDatagram::unbound().unwrap(),
                socket_addr(path.to_str().unwrap()).unwrap(),
            )),
            watchdog: None,
        };
        n.ready().unwrap();
        n.status("playing 2\ngames").unwrap();
        n.watchdog().unwrap();
        let mut buf = [0u8; 256];
        let mut got = Vec::new();
        for _ in 0..3 {
            let len = server.recv(&mut buf).unwrap();
            got.push(String::from_utf8_lossy(&buf[..len]).to_string());
        }
        assert_eq!(got, ["READY=1", "STATUS=playing 2games", "WATCHDOG=1"]);
    }

    #[test]
    fn abstract_and_bad_addresses() {
        assert!(socket_addr("@kaissa-test").is_ok());
        assert!(socket_addr("relative/path").is_err());
        let quiet = Notifier {
            socket: None,
            watchdog: None,
        };
        assert!(quiet.ready().is_ok());
    }
}
