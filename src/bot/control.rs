//! The control socket: an operator's commands to the running daemon
//! (`kaissa ctl`), without a restart. A Unix socket (mode 0600: the
//! service user, and root, may talk to it) in the runtime directory;
//! one command a connection, as a line of text, answered with `ok` or
//! `error: ...` on the first line and the reply after it. The daemon
//! carries the commands out on its own loop (`daemon/operator.rs`); this
//! module holds the words, the listener and the client.

use crate::config::{ArenaEntry, is_tournament_id, parse_time_control};
use crate::lichess::client::ChallengeTime;
use crate::lichess::model::{ChallengeColor, VariantKey};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

/// The socket's name in the runtime directory.
pub const SOCKET_NAME: &str = "control.sock";
/// The longest command line read.
const MAX_LINE: u64 = 4096;
/// A client that says nothing for this long is dropped; the daemon's
/// answer is awaited as long.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The usage of `kaissa ctl`, one command a line.
pub const USAGE: &str = "\
status [--json]
challenge USER [MINUTES+SECONDS] [white|black|random] [rated|casual] [VARIANT]
matchmaking on|off
block USER
unblock USER
abort GAME
resign GAME
tournament join ID [team=TEAM] [password=PASSWORD] [join-team]
tournament leave ID";

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Status { json: bool },
    Challenge(ChallengeOrder),
    Matchmaking(bool),
    Block(String),
    Unblock(String),
    Abort(String),
    Resign(String),
    TournamentJoin(ArenaEntry),
    TournamentLeave(String),
}

/// `challenge USER ...`: whom, and the game offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeOrder {
    pub user: String,
    pub time: ChallengeTime,
    pub color: ChallengeColor,
    pub rated: bool,
    pub variant: VariantKey,
}

/// A command on its way to the daemon, with where the answer goes.
#[derive(Debug)]
pub struct Order {
    pub request: Request,
    pub reply: oneshot::Sender<Reply>,
}

/// The daemon's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub ok: bool,
    pub text: String,
}

impl Reply {
    pub fn ok(text: impl Into<String>) -> Reply {
        Reply {
            ok: true,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            text: text.into(),
        }
    }
}

/// Parses a command line.
pub fn parse(line: &str) -> Result<Request, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let id = |what: &str| -> Result<String, String> {
        match words.get(1) {
            Some(w) if words.len() == 2 && crate::config::is_user_id(w) => Ok((*w).to_owned()),
            _ => Err(format!("usage: {} {what}", words[0])),
        }
    };
    match words.first().copied() {
        None => Err(format!("no command; the commands:\n{USAGE}")),
        Some("status") => match &words[1..] {
            [] => Ok(Request::Status { json: false }),
            ["--json"] => Ok(Request::Status { json: true }),
            _ => Err("usage: status [--json]".to_owned()),
        },
        Some("matchmaking") => match &words[1..] {
            ["on"] => Ok(Request::Matchmaking(true)),
            ["off"] => Ok(Request::Matchmaking(false)),
            _ => Err("usage: matchmaking on|off".to_owned()),
        },
        Some("block") => id("USER").map(Request::Block),
        Some("unblock") => id("USER").map(Request::Unblock),
        Some("abort") => id("GAME").map(Request::Abort),
        Some("resign") => id("GAME").map(Request::Resign),
        Some("challenge") => parse_challenge(&words[1..]).map(Request::Challenge),
        Some("tournament") => parse_tournament(&words[1..]),
        Some(other) => Err(format!("unknown command {other:?}; the commands:\n{USAGE}")),
    }
}

fn parse_tournament(words: &[&str]) -> Result<Request, String> {
    let usage = "usage: tournament join ID [team=TEAM] [password=PASSWORD] [join-team] | tournament leave ID";
    let (verb, id, rest) = match words {
        [verb, id, rest @ ..] => (*verb, *id, rest),
        _ => return Err(usage.to_owned()),
    };
    if !is_tournament_id(id) {
        return Err(format!(
            "{id:?} is not a tournament id (8 letters and digits, as in lichess.org/tournament/ID)"
        ));
    }
    match verb {
        "leave" if rest.is_empty() => Ok(Request::TournamentLeave(id.to_owned())),
        "join" => {
            let mut entry = ArenaEntry {
                id: id.to_owned(),
                ..ArenaEntry::default()
            };
            for word in rest {
                if let Some(team) = word.strip_prefix("team=") {
                    if !crate::lichess::client::is_valid_id(team) {
                        return Err(format!("{team:?} is not a team id"));
                    }
                    entry.team = Some(team.to_owned());
                } else if let Some(password) = word.strip_prefix("password=") {
                    entry.password = Some(password.to_owned());
                } else if *word == "join-team" {
                    entry.join_team = true;
                } else {
                    return Err(format!("unknown word {word:?}; {usage}"));
                }
            }
            if entry.join_team && entry.team.is_none() {
                return Err("join-team needs team=TEAM".to_owned());
            }
            Ok(Request::TournamentJoin(entry))
        }
        _ => Err(usage.to_owned()),
    }
}

fn parse_challenge(words: &[&str]) -> Result<ChallengeOrder, String> {
    let usage =
        "usage: challenge USER [MINUTES+SECONDS] [white|black|random] [rated|casual] [VARIANT]";
    let (user, rest) = words.split_first().ok_or(usage)?;
    if !crate::config::is_user_id(user) {
        return Err(format!("{user:?} is not a Lichess username"));
    }
    let mut order = ChallengeOrder {
        user: (*user).to_owned(),
        time: ChallengeTime::Clock {
            limit_secs: 180,
            increment_secs: 2,
        },
        color: ChallengeColor::Random,
        rated: false,
        variant: VariantKey::Standard,
    };
    for word in rest {
        match *word {
            "white" => order.color = ChallengeColor::White,
            "black" => order.color = ChallengeColor::Black,
            "random" => order.color = ChallengeColor::Random,
            "rated" => order.rated = true,
            "casual" => order.rated = false,
            w if w.contains('+') => {
                let (limit_secs, increment_secs) = parse_time_control(w)?;
                order.time = ChallengeTime::Clock {
                    limit_secs,
                    increment_secs,
                };
            }
            w => {
                let key: VariantKey = serde_json::from_value(serde_json::json!(w))
                    .ok()
                    .filter(|k| *k != VariantKey::Unknown && *k != VariantKey::FromPosition)
                    .ok_or_else(|| {
                        format!("{w:?} is not a time control, colour, mode or variant; {usage}")
                    })?;
                order.variant = key;
            }
        }
    }
    Ok(order)
}

/// Where the socket goes: `bot.control_socket` when set (`none`: no
/// socket), else `control.sock` in the runtime directory systemd gives
/// the service (`$RUNTIME_DIRECTORY`, from `RuntimeDirectory=`).
pub fn socket_path(configured: &str) -> Option<PathBuf> {
    match configured {
        "none" => None,
        "" => std::env::var_os("RUNTIME_DIRECTORY")
            .and_then(|dirs| {
                // systemd lists several directories separated by ':'.
                std::env::split_paths(&dirs).next()
            })
            .map(|dir| dir.join(SOCKET_NAME)),
        path => Some(PathBuf::from(path)),
    }
}

/// Opens the socket at `path` (replacing a stale one) and answers its
/// clients in a task: each command goes to the daemon on `orders`.
pub fn listen<M: From<Order> + Send + 'static>(
    path: &Path,
    orders: mpsc::UnboundedSender<M>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(serve(stream, orders.clone()));
                }
                Err(e) => {
                    tracing::warn!("control socket: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(())
}

async fn serve<M: From<Order>>(stream: UnixStream, orders: mpsc::UnboundedSender<M>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read.take(MAX_LINE));
    let reply = match tokio::time::timeout(TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(_)) => match parse(&line) {
            Ok(request) => {
                tracing::info!(command = %line.trim(), "control socket");
                let (tx, rx) = oneshot::channel();
                if orders.send(M::from(Order { request, reply: tx })).is_err() {
                    Reply::error("the daemon is stopping")
                } else {
                    match tokio::time::timeout(TIMEOUT, rx).await {
                        Ok(Ok(reply)) => reply,
                        _ => Reply::error("no answer from the daemon"),
                    }
                }
            }
            Err(why) => Reply::error(why),
        },
        _ => return,
    };
    let head = if reply.ok {
        "ok".to_owned()
    } else {
        format!("error: {}", reply.text.lines().next().unwrap_or(""))
    };
    let body = if reply.ok {
        reply.text
    } else {
        reply.text.lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    let _ = write
        .write_all(format!("{head}\n{body}\n").as_bytes())
        .await;
}

/// Sends `command` to the socket at `path`; the daemon's answer.
pub async fn send(path: &Path, command: &str) -> Result<Reply, String> {
    let mut stream = UnixStream::connect(path)
        .await
        .map_err(|e| format!("{}: {e} (is kaissa running?)", path.display()))?;
    stream
        .write_all(format!("{}\n", command.replace('\n', " ")).as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    tokio::time::timeout(TIMEOUT * 2, stream.read_to_string(&mut text))
        .await
        .map_err(|_| "no answer".to_owned())?
        .map_err(|e| e.to_string())?;
    let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
    let body = body.trim_end().to_owned();
    match head.strip_prefix("error: ") {
        Some(why) if body.is_empty() => Ok(Reply::error(why)),
        Some(why) => Ok(Reply::error(format!("{why}\n{body}"))),
        None if head == "ok" => Ok(Reply::ok(body)),
        None => Err(format!("not an answer of kaissa: {head:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("status"), Ok(Request::Status { json: false }));
        assert_eq!(
            parse(" status --json\n"),
            Ok(Request::Status { json: true })
        );
        assert_eq!(parse("matchmaking off"), Ok(Request::Matchmaking(false)));
        assert_eq!(parse("block Spammer"), Ok(Request::Block("Spammer".into())));
        assert_eq!(
            parse("resign abcd1234"),
            Ok(Request::Resign("abcd1234".into()))
        );
        assert!(parse("block a/b").is_err());
        assert!(parse("abort").is_err());
        assert_eq!(
            parse("tournament join hL7vMrFQ team=coders password=s3cret join-team"),
            Ok(Request::TournamentJoin(ArenaEntry {
                id: "hL7vMrFQ".into(),
                team: Some("coders".into()),
                password: Some("s3cret".into()),
                join_team: true,
            }))
        );
        assert_eq!(
            parse("tournament leave hL7vMrFQ"),
            Ok(Request::TournamentLeave("hL7vMrFQ".into()))
        );
        assert!(parse("tournament join hL7vMrF").is_err(), "7 characters");
        assert!(parse("tournament join hL7vMrFQ join-team").is_err());
        assert!(parse("tournament join hL7vMrFQ colour=red").is_err());
        assert!(parse("tournament leave hL7vMrFQ now").is_err());
        assert!(parse("tournament").is_err());
        assert!(parse("dance").unwrap_err().contains("unknown command"));
        assert!(parse("").is_err());
        assert_eq!(
            parse("challenge Bob 1+0 black rated atomic"),
            Ok(Request::Challenge(ChallengeOrder {
                user: "Bob".into(),
                time: ChallengeTime::Clock {
                    limit_secs: 60,
                    increment_secs: 0
                },
                color: ChallengeColor::Black,
                rated: true,
                variant: VariantKey::Atomic,
            }))
        );
        let Ok(Request::Challenge(plain)) = parse("challenge Bob") else {
            panic!("challenge Bob")
        };
        assert_eq!(plain.variant, VariantKey::Standard);
        assert!(!plain.rated);
        assert!(parse("challenge Bob purple").is_err());
        assert!(parse("challenge Bob 1+x").is_err());
    }

    #[tokio::test]
    async fn a_command_goes_to_the_daemon_and_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SOCKET_NAME);
        let (tx, mut rx) = mpsc::unbounded_channel::<Order>();
        listen(&path, tx).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        tokio::spawn(async move {
            while let Some(order) = rx.recv().await {
                let reply = match order.request {
                    Request::Status { .. } => Reply::ok("games: 0\nqueue: 0"),
                    _ => Reply::error("no such game\ndetails"),
                };
                let _ = order.reply.send(reply);
            }
        });
        assert_eq!(
            send(&path, "status").await.unwrap(),
            Reply::ok("games: 0\nqueue: 0")
        );
        assert_eq!(
            send(&path, "abort abcd1234").await.unwrap(),
            Reply::error("no such game\ndetails")
        );
        let unknown = send(&path, "dance").await.unwrap();
        assert!(
            !unknown.ok && unknown.text.contains("status [--json]"),
            "{unknown:?}"
        );
        assert!(send(&dir.path().join("none.sock"), "status").await.is_err());
    }
}
