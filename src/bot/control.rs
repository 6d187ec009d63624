//! The control socket: an operator's commands to the running daemon
//! (`kaissa ctl`), without a restart. A Unix socket (mode 0600: the
//! service user, and root, may talk to it) in the runtime directory;
//! one command a connection, as a line of text, answered with `ok` or
//! `error: ...` on the first line and the reply after it. The daemon
//! carries the commands out on its own loop (`daemon/operator.rs`); this
//! module holds the words, the listener and the client.

use crate::config::{ArenaEntry, is_tournament_id, parse_challenge_time};
use crate::lichess::client::ChallengeTime;
use crate::lichess::model::{ChallengeColor, VariantKey};
use clap::{CommandFactory, Parser};
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

/// `kaissa ctl`'s commands: the grammar, defined once. The client
/// (`kaissa ctl ...`) parses its arguments with it and sends
/// [`CtlCommand::line`]; the daemon parses that line with it again
/// ([`parse`]), so the two cannot disagree, and both `--help` and the
/// daemon's error messages come from it.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum CtlCommand {
    /// What the daemon is doing: the games, the queue, the quotas,
    /// matchmaking, the arenas and the blocks.
    Status {
        /// The same, as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Challenge USER: 3+2, a random colour, casual and standard chess
    /// unless the words after USER, in any order, say otherwise.
    Challenge {
        #[arg(value_parser = user_id)]
        user: String,
        /// MINUTES+SECONDS or DAYSd (correspondence), white|black|random,
        /// rated|casual, VARIANT, pairs=N (N pairs of games, both colours
        /// each, one game at a time when none is running)
        #[arg(value_parser = challenge_term, value_name = "TERM")]
        terms: Vec<ChallengeTerm>,
    },
    /// Switch matchmaking on or off (until the next start).
    Matchmaking {
        #[arg(value_enum)]
        switch: Switch,
    },
    /// Block USER: its challenges are declined and matchmaking leaves it
    /// alone (kept across restarts).
    Block {
        #[arg(value_parser = user_id)]
        user: String,
    },
    /// Unblock USER.
    Unblock {
        #[arg(value_parser = user_id)]
        user: String,
    },
    /// Abort the game GAME (Lichess allows it before both have moved).
    Abort {
        #[arg(value_parser = user_id)]
        game: String,
    },
    /// Resign the game GAME.
    Resign {
        #[arg(value_parser = user_id)]
        game: String,
    },
    /// Join or leave an arena tournament.
    #[command(subcommand)]
    Tournament(TournamentCommand),
}

/// `kaissa ctl tournament ...`
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum TournamentCommand {
    /// Join the arena ID (as in lichess.org/tournament/ID) and play its
    /// pairings.
    Join {
        #[arg(value_parser = tournament_id)]
        id: String,
        /// team=TEAM (a team battle's team), password=PASSWORD (or
        /// password=-: read from standard input, out of the process
        /// list), join-team (join TEAM first)
        #[arg(value_parser = join_term, value_name = "TERM")]
        terms: Vec<JoinTerm>,
    },
    /// Leave the arena ID.
    Leave {
        #[arg(value_parser = tournament_id)]
        id: String,
    },
}

/// `matchmaking on|off`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    On,
    Off,
}

/// A word after `challenge USER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChallengeTerm {
    /// MINUTES+SECONDS, as written, and its values.
    Time(String, ChallengeTime),
    Color(ChallengeColor),
    Rated(bool),
    Variant(VariantKey),
    /// `pairs=N`: N pairs of games, each colour in turn.
    Pairs(u32),
}

/// A word after `tournament join ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinTerm {
    Team(String),
    Password(String),
    JoinTeam,
}

/// The line the client sends: `kaissa ctl` and the command's words.
#[derive(clap::Parser, Debug)]
#[command(
    name = "kaissa ctl",
    no_binary_name = true,
    disable_help_subcommand = true
)]
struct CtlLine {
    #[command(subcommand)]
    command: CtlCommand,
}

fn user_id(word: &str) -> Result<String, String> {
    if crate::config::is_user_id(word) {
        Ok(word.to_owned())
    } else {
        Err("not a Lichess id (letters, digits, - and _)".to_owned())
    }
}

fn tournament_id(word: &str) -> Result<String, String> {
    if is_tournament_id(word) {
        Ok(word.to_owned())
    } else {
        Err(
            "not a tournament id (8 letters and digits, as in lichess.org/tournament/ID)"
                .to_owned(),
        )
    }
}

fn challenge_term(word: &str) -> Result<ChallengeTerm, String> {
    Ok(match word {
        "white" => ChallengeTerm::Color(ChallengeColor::White),
        "black" => ChallengeTerm::Color(ChallengeColor::Black),
        "random" => ChallengeTerm::Color(ChallengeColor::Random),
        "rated" => ChallengeTerm::Rated(true),
        "casual" => ChallengeTerm::Rated(false),
        w if w.starts_with("pairs=") => match w["pairs=".len()..].parse::<u32>() {
            Ok(n) if (1..=MAX_PAIRS).contains(&n) => ChallengeTerm::Pairs(n),
            _ => return Err(format!("pairs=N takes 1 to {MAX_PAIRS} pairs")),
        },
        w if w.contains('+')
            || (w.ends_with('d')
                && w.len() > 1
                && w[..w.len() - 1].bytes().all(|b| b.is_ascii_digit())) =>
        {
            ChallengeTerm::Time(w.to_owned(), parse_challenge_time(w)?)
        }
        w => serde_json::from_value(serde_json::json!(w))
            .ok()
            .filter(|k| *k != VariantKey::Unknown && *k != VariantKey::FromPosition)
            .map(ChallengeTerm::Variant)
            .ok_or(
                "not a time control (MINUTES+SECONDS or DAYSd), colour, rated|casual, variant \
                 or pairs=N",
            )?,
    })
}

fn join_term(word: &str) -> Result<JoinTerm, String> {
    if let Some(team) = word.strip_prefix("team=") {
        if !crate::lichess::client::is_valid_id(team) {
            return Err("not a team id".to_owned());
        }
        Ok(JoinTerm::Team(team.to_owned()))
    } else if let Some(password) = word.strip_prefix("password=") {
        Ok(JoinTerm::Password(password.to_owned()))
    } else if word == "join-team" {
        Ok(JoinTerm::JoinTeam)
    } else {
        Err("not team=TEAM, password=PASSWORD or join-team".to_owned())
    }
}

impl CtlCommand {
    /// Reads a password given as `password=-` from `input`'s first line,
    /// so that it never shows in the process list or the shell's history.
    /// A password the daemon could not read back as one word (empty, or
    /// with a space) is refused here, before anything is sent.
    pub fn read_password(&mut self, input: impl std::io::BufRead) -> Result<(), String> {
        let CtlCommand::Tournament(TournamentCommand::Join { terms, .. }) = self else {
            return Ok(());
        };
        let Some(slot) = terms.iter_mut().find_map(|term| match term {
            JoinTerm::Password(password) if password == "-" => Some(password),
            _ => None,
        }) else {
            return Ok(());
        };
        use std::io::BufRead;
        let mut line = String::new();
        input
            .take(4096)
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the password from standard input: {e}"))?;
        let password = line.trim_end_matches(['\n', '\r']);
        if password.is_empty() {
            return Err("password=-: standard input gave no password".to_owned());
        }
        if password.chars().any(char::is_whitespace) {
            return Err("password=-: a password with a space cannot be sent".to_owned());
        }
        *slot = password.to_owned();
        Ok(())
    }

    /// The command as one line of words, as the daemon parses it.
    pub fn line(&self) -> String {
        let words: Vec<String> = match self {
            CtlCommand::Status { json } => {
                let mut w = vec!["status".to_owned()];
                if *json {
                    w.push("--json".to_owned());
                }
                w
            }
            CtlCommand::Challenge { user, terms } => ["challenge".to_owned(), user.clone()]
                .into_iter()
                .chain(terms.iter().map(ChallengeTerm::word))
                .collect(),
            CtlCommand::Matchmaking { switch } => vec![
                "matchmaking".to_owned(),
                match switch {
                    Switch::On => "on",
                    Switch::Off => "off",
                }
                .to_owned(),
            ],
            CtlCommand::Block { user } => vec!["block".to_owned(), user.clone()],
            CtlCommand::Unblock { user } => vec!["unblock".to_owned(), user.clone()],
            CtlCommand::Abort { game } => vec!["abort".to_owned(), game.clone()],
            CtlCommand::Resign { game } => vec!["resign".to_owned(), game.clone()],
            CtlCommand::Tournament(TournamentCommand::Join { id, terms }) => {
                ["tournament".to_owned(), "join".to_owned(), id.clone()]
                    .into_iter()
                    .chain(terms.iter().map(JoinTerm::word))
                    .collect()
            }
            CtlCommand::Tournament(TournamentCommand::Leave { id }) => {
                vec!["tournament".to_owned(), "leave".to_owned(), id.clone()]
            }
        };
        words.join(" ")
    }

    /// What the daemon is asked to do (the defaults filled in, the rules
    /// across words checked).
    pub fn request(self) -> Result<Request, String> {
        Ok(match self {
            CtlCommand::Status { json } => Request::Status { json },
            CtlCommand::Challenge { user, terms } => {
                let mut order = ChallengeOrder {
                    user,
                    time: ChallengeTime::Clock {
                        limit_secs: 180,
                        increment_secs: 2,
                    },
                    color: ChallengeColor::Random,
                    rated: false,
                    variant: VariantKey::Standard,
                    pairs: 0,
                };
                for term in terms {
                    match term {
                        ChallengeTerm::Time(_, time) => order.time = time,
                        ChallengeTerm::Color(color) => order.color = color,
                        ChallengeTerm::Rated(rated) => order.rated = rated,
                        ChallengeTerm::Variant(variant) => order.variant = variant,
                        ChallengeTerm::Pairs(n) => order.pairs = n,
                    }
                }
                Request::Challenge(order)
            }
            CtlCommand::Matchmaking { switch } => Request::Matchmaking(switch == Switch::On),
            CtlCommand::Block { user } => Request::Block(user),
            CtlCommand::Unblock { user } => Request::Unblock(user),
            CtlCommand::Abort { game } => Request::Abort(game),
            CtlCommand::Resign { game } => Request::Resign(game),
            CtlCommand::Tournament(TournamentCommand::Leave { id }) => Request::TournamentLeave(id),
            CtlCommand::Tournament(TournamentCommand::Join { id, terms }) => {
                let mut entry = ArenaEntry {
                    id,
                    ..ArenaEntry::default()
                };
                for term in terms {
                    match term {
                        JoinTerm::Team(team) => entry.team = Some(team),
                        JoinTerm::Password(password) => entry.password = Some(password),
                        JoinTerm::JoinTeam => entry.join_team = true,
                    }
                }
                if entry.join_team && entry.team.is_none() {
                    return Err("join-team needs team=TEAM".to_owned());
                }
                Request::TournamentJoin(entry)
            }
        })
    }
}

impl ChallengeTerm {
    fn word(&self) -> String {
        match self {
            ChallengeTerm::Time(text, _) => text.clone(),
            ChallengeTerm::Color(ChallengeColor::White) => "white".to_owned(),
            ChallengeTerm::Color(ChallengeColor::Black) => "black".to_owned(),
            ChallengeTerm::Color(ChallengeColor::Random) => "random".to_owned(),
            ChallengeTerm::Rated(true) => "rated".to_owned(),
            ChallengeTerm::Rated(false) => "casual".to_owned(),
            ChallengeTerm::Variant(key) => key.as_str().to_owned(),
            ChallengeTerm::Pairs(n) => format!("pairs={n}"),
        }
    }
}

impl JoinTerm {
    fn word(&self) -> String {
        match self {
            JoinTerm::Team(team) => format!("team={team}"),
            JoinTerm::Password(password) => format!("password={password}"),
            JoinTerm::JoinTeam => "join-team".to_owned(),
        }
    }
}

/// The commands, a line each (`kaissa ctl`'s usage, the daemon's error
/// answers).
pub fn usage() -> String {
    let mut lines = Vec::new();
    let mut add = |prefix: &str, command: &clap::Command| {
        let args: Vec<String> = command
            .get_arguments()
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .map(|a| match a.get_long() {
                Some(long) => format!("[--{long}]"),
                None if !a.get_possible_values().is_empty() => a
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_owned())
                    .collect::<Vec<_>>()
                    .join("|"),
                None => {
                    let name = a
                        .get_value_names()
                        .and_then(|n| n.first())
                        .map_or_else(|| a.get_id().as_str().to_uppercase(), |n| n.to_string());
                    if a.get_num_args().is_some_and(|n| n.max_values() > 1) {
                        format!("[{name}...]")
                    } else {
                        name
                    }
                }
            })
            .collect();
        lines.push(
            format!("{prefix}{} {}", command.get_name(), args.join(" "))
                .trim_end()
                .to_owned(),
        );
    };
    for command in CtlLine::command().get_subcommands() {
        let subs: Vec<&clap::Command> = command.get_subcommands().collect();
        if subs.is_empty() {
            add("", command);
        } else {
            for sub in subs {
                add(&format!("{} ", command.get_name()), sub);
            }
        }
    }
    lines.join("\n")
}

/// Parses a command line (the daemon's side).
pub fn parse(line: &str) -> Result<Request, String> {
    let words = line.split_whitespace();
    match CtlLine::try_parse_from(words) {
        Ok(parsed) => parsed.command.request(),
        Err(e) => Err(clap_error(&e)),
    }
}

/// A clap error as the daemon answers it: what is wrong, and the
/// commands when the command itself is unknown or missing.
fn clap_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ErrorKind};
    match e.kind() {
        ErrorKind::InvalidSubcommand => {
            let word = e
                .get(ContextKind::InvalidSubcommand)
                .map(|v| v.to_string())
                .unwrap_or_default();
            format!("unknown command {word:?}; the commands:\n{}", usage())
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            format!("no command; the commands:\n{}", usage())
        }
        _ => {
            let text = e.render().to_string();
            let text = text.trim().trim_start_matches("error: ");
            // The first lines say what is wrong and the usage; clap's tip
            // about --help is for a terminal, not for the socket.
            text.lines()
                .filter(|l| !l.starts_with("For more information"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_owned()
        }
    }
}

/// A command, as the daemon carries it out.
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
    /// Pairs of games (each colour once a pair), one at a time; 0: one
    /// game.
    pub pairs: u32,
}

/// The most pairs one `challenge` asks for.
pub const MAX_PAIRS: u32 = 50;

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

/// A command line as it may be logged: an arena's password hidden.
fn redacted(line: &str) -> String {
    line.split_whitespace()
        .map(|word| match word.strip_prefix("password=") {
            Some(_) => "password=(hidden)",
            None => word,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn serve<M: From<Order>>(stream: UnixStream, orders: mpsc::UnboundedSender<M>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read.take(MAX_LINE));
    let reply = match tokio::time::timeout(TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(_)) => match parse(&line) {
            Ok(request) => {
                tracing::info!(command = %redacted(line.trim()), "control socket");
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
                pairs: 0,
            }))
        );
        let Ok(Request::Challenge(series)) = parse("challenge Bob 1+0 pairs=3") else {
            panic!("pairs")
        };
        assert_eq!(series.pairs, 3);
        assert!(parse("challenge Bob pairs=0").is_err());
        assert!(parse("challenge Bob pairs=51").is_err());
        let Ok(Request::Challenge(plain)) = parse("challenge Bob") else {
            panic!("challenge Bob")
        };
        assert_eq!(plain.variant, VariantKey::Standard);
        assert!(!plain.rated);
        assert!(parse("challenge Bob purple").is_err());
        assert!(parse("challenge Bob 1+x").is_err());
        let Ok(Request::Challenge(days)) = parse("challenge Bob 3d") else {
            panic!("challenge Bob 3d")
        };
        assert_eq!(days.time, ChallengeTime::Correspondence { days: 3 });
        assert!(
            parse("challenge Bob 4d")
                .unwrap_err()
                .contains("days per move")
        );
    }

    /// The client parses its arguments and sends `line()`; the daemon
    /// parses that line: the same command comes out.
    #[test]
    fn what_the_client_sends_the_daemon_reads_the_same() {
        for words in [
            "status",
            "status --json",
            "challenge Bob",
            "challenge Bob 0.5+0 white casual chess960",
            "challenge Bob rated 10+5 kingOfTheHill",
            "challenge Bob 3+2 pairs=2",
            "matchmaking on",
            "block Spammer",
            "unblock Spammer",
            "abort abcd1234",
            "resign abcd1234",
            "tournament join hL7vMrFQ",
            "tournament join hL7vMrFQ team=coders password=s3cret join-team",
            "tournament leave hL7vMrFQ",
        ] {
            let client = CtlLine::try_parse_from(words.split_whitespace())
                .unwrap_or_else(|e| panic!("{words}: {e}"));
            let line = client.command.line();
            assert_eq!(line, words, "the words go as they were typed");
            let daemon = CtlLine::try_parse_from(line.split_whitespace()).unwrap();
            assert_eq!(daemon.command, client.command, "{words}");
            assert!(parse(&line).is_ok(), "{words}");
        }
    }

    #[test]
    fn a_password_comes_from_standard_input() {
        let join = |words: &str| -> CtlCommand {
            CtlLine::try_parse_from(words.split_whitespace())
                .unwrap()
                .command
        };
        let mut command = join("tournament join hL7vMrFQ password=- team=coders");
        command.read_password(&b"s3cret\n"[..]).unwrap();
        assert_eq!(
            command.line(),
            "tournament join hL7vMrFQ password=s3cret team=coders"
        );
        let mut windows = join("tournament join hL7vMrFQ password=-");
        windows.read_password(&b"s3cret\r\nnext line"[..]).unwrap();
        assert_eq!(windows.line(), "tournament join hL7vMrFQ password=s3cret");
        for bad in [&b""[..], b"\n", b"two words\n"] {
            let mut command = join("tournament join hL7vMrFQ password=-");
            let error = command.read_password(bad).unwrap_err();
            assert!(
                !error.contains("two"),
                "the password is not echoed: {error}"
            );
        }
        let mut plain = join("tournament join hL7vMrFQ password=typed");
        plain.read_password(&b"ignored\n"[..]).unwrap();
        assert_eq!(plain.line(), "tournament join hL7vMrFQ password=typed");
    }

    #[test]
    fn an_arena_password_is_never_logged() {
        let line = "tournament join hL7vMrFQ team=coders password=s3cret join-team";
        assert_eq!(
            redacted(line),
            "tournament join hL7vMrFQ team=coders password=(hidden) join-team"
        );
        assert_eq!(redacted("  status --json "), "status --json");
    }

    #[test]
    fn the_daemon_names_what_is_wrong() {
        let err = parse("block a/b").unwrap_err();
        assert!(
            err.contains("a/b") && err.contains("not a Lichess id"),
            "{err}"
        );
        let err = parse("challenge Bob purple").unwrap_err();
        assert!(err.contains("purple") && err.contains("variant"), "{err}");
        let err = parse("dance").unwrap_err();
        assert!(err.starts_with("unknown command \"dance\""), "{err}");
        assert!(err.contains("tournament join ID [TERM...]"), "{err}");
        let err = parse("").unwrap_err();
        assert!(err.starts_with("no command"), "{err}");
        assert!(!parse("matchmaking maybe").unwrap_err().contains("--help"));
    }

    #[test]
    fn the_usage_has_a_line_a_command() {
        assert_eq!(
            usage(),
            "status [--json]\n\
             challenge USER [TERM...]\n\
             matchmaking on|off\n\
             block USER\n\
             unblock USER\n\
             abort GAME\n\
             resign GAME\n\
             tournament join ID [TERM...]\n\
             tournament leave ID"
        );
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
