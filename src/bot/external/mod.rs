//! The driver of an external UCI engine: it runs one engine (Fairy-Stockfish
//! for Lichess's variants, Stockfish, any UCI engine) as a child process
//! for one game, on its own tokio task, and turns its text protocol into
//! typed [`Event`]s.
//!
//! The promises, in order of importance: kaissa never crashes because of
//! an engine, never leaves an engine process behind, and never waits on an
//! engine forever.
//!
//! - **No orphan.** The engine runs in a process group of its own (so a
//!   wrapper script's children die with it, even when the wrapper exits
//!   first: the group is killed as its leader is reaped), is killed on
//!   drop, and on Linux gets SIGKILL when kaissa dies (`PR_SET_PDEATHSIG`). Every
//!   process is reaped: on [`ExternalEngine::quit`], when the handle is
//!   dropped, when it dies, and when it is killed for hanging.
//! - **No hang.** Every answer is awaited under a timeout: `uciok`
//!   ([`UCI_TIMEOUT`]), `readyok` ([`READY_TIMEOUT`]), the `bestmove` after
//!   `stop` ([`STOP_DEADLINE`]), the exit after `quit` ([`QUIT_GRACE`]). A
//!   search with a [`Go::deadline`] is stopped there by the driver itself.
//!   An engine that does not answer is killed, and its search reported
//!   [`Event::Failed`].
//! - **No crash.** Output is read line by line, bounded
//!   ([`MAX_LINE`]); lines it does not understand are ignored. A process
//!   that dies is restarted on the next [`ExternalEngine::go`], at most
//!   [`MAX_RESTARTS`] times a game, so a crash loop ends in `Failed`
//!   events rather than a spin.
//!
//! Moves and positions are opaque strings here (`e2e4`, `P@e4`, `e7e8q`,
//! a FEN with a crazyhouse pocket): the driver never interprets them. The
//! caller sends the whole game with each [`Go`], so a restarted engine
//! needs nothing else.
//!
//! Every [`ExternalEngine::go`] gets exactly one final event, either
//! [`Event::BestMove`] or [`Event::Failed`], carrying the id `go`
//! returned; [`Event::Info`]s come before it.

use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};

mod protocol;
pub mod roster;
use protocol::{
    check_go, go_command, parse_bestmove, parse_info, parse_uci_line, position_command, read_line,
};

/// How long an engine has to answer `uci` with `uciok`.
pub const UCI_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an engine has to answer `isready` with `readyok` (after the
/// options: a large `Hash` is allocated then).
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an engine has to answer `stop` with `bestmove` before it is
/// killed.
pub const STOP_DEADLINE: Duration = Duration::from_secs(2);
/// A search that starts this long after it was asked for (a restart, a
/// wait for the previous search) tells the engine clocks made as much
/// shorter; below it, the clocks go as the game gave them.
const STALE_CLOCKS: Duration = Duration::from_millis(50);
/// The shortest time between two `info` events of a search.
const INFO_INTERVAL: Duration = Duration::from_millis(100);
/// The least time an engine is told it has.
pub const MIN_TOLD_TIME: Duration = Duration::from_millis(20);
/// The least time a search with a deadline gets to answer `stop`: a
/// healthy engine answers within milliseconds.
pub const MIN_STOP_GRACE: Duration = Duration::from_millis(100);
/// How long an engine has to exit after `quit` before it is killed.
pub const QUIT_GRACE: Duration = Duration::from_secs(1);
/// Restarts of a dead or hung engine in one game; then its searches fail.
pub const MAX_RESTARTS: u32 = 5;
/// The longest line read from an engine's stdout; the rest of a longer
/// line is dropped (a long `pv` is a few kilobytes).
pub const MAX_LINE: usize = 64 * 1024;
/// The longest stderr line logged; the rest is dropped.
const MAX_STDERR_LINE: usize = 300;
/// Stderr lines logged per process; later ones are counted, not logged.
const MAX_STDERR_LINES: u32 = 100;
/// Writing one command to the engine's stdin: a full pipe means an engine
/// that no longer reads.
const WRITE_TIMEOUT: Duration = STOP_DEADLINE;
/// Waiting for a process after SIGKILL.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);
/// Stdout lines buffered between the reader and the driver.
const LINE_QUEUE: usize = 256;

/// What the driver needs to start an engine (built by the config from
/// `[engines.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    /// The config section's name, for logs and errors.
    pub name: String,
    /// The executable.
    pub command: PathBuf,
    pub args: Vec<String>,
    pub working_dir: Option<PathBuf>,
    /// `setoption name K value V`, in order, sent after `uci`.
    pub options: Vec<(String, String)>,
    /// Send `setoption name Ponder value true` and allow `go ponder`.
    pub ponder: bool,
}

/// What `uci` told us.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineId {
    /// `id name`; the spec's name if the engine gave none.
    pub name: String,
    /// `id author`.
    pub author: Option<String>,
    /// The `var` values of `option name UCI_Variant type combo`; empty if
    /// the engine has no such option (it plays chess only).
    pub variants: Vec<String>,
    /// Whether the engine has the option `UCI_Chess960`.
    pub chess960: bool,
    /// The names of its options, in the order given.
    pub options: Vec<String>,
}

impl EngineId {
    /// Whether the engine has an option of this name (UCI option names are
    /// case-insensitive).
    pub fn has_option(&self, name: &str) -> bool {
        self.options.iter().any(|o| o.eq_ignore_ascii_case(name))
    }

    /// The engine's spelling of `variant`, if it plays it. An engine
    /// without `UCI_Variant` plays `chess` only.
    pub fn variant(&self, variant: &str) -> Option<&str> {
        if self.variants.is_empty() {
            return variant.eq_ignore_ascii_case("chess").then_some("chess");
        }
        self.variants
            .iter()
            .find(|v| v.eq_ignore_ascii_case(variant))
            .map(String::as_str)
    }
}

/// Why an engine cannot be used. Each message names the engine (its
/// `[engines.NAME]` section) and says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error(
        "engine {engine}: cannot run {}: {source} (check `command`, `args` and `working_dir` in [engines.{engine}])",
        path.display()
    )]
    Spawn {
        engine: String,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "engine {engine}: no `{what}` within {after:?} (is it a UCI engine? check `command` and `args` in [engines.{engine}]; a Hash too large for this machine also delays `readyok`)"
    )]
    Timeout {
        engine: String,
        what: &'static str,
        after: Duration,
    },
    #[error(
        "engine {engine}: exited while {during} ({status}); run its `command` by hand and type `uci` to see why"
    )]
    Exited {
        engine: String,
        during: &'static str,
        status: String,
    },
    #[error("engine {engine}: cannot write to it while {during}: {source}")]
    Io {
        engine: String,
        during: &'static str,
        source: io::Error,
    },
    #[error(
        "engine {engine}: does not play the variant {variant} (its UCI_Variant lists: {}); use Fairy-Stockfish for Lichess's variants",
        if known.is_empty() { "nothing, it plays chess only".to_string() } else { known.join(" ") }
    )]
    UnknownVariant {
        engine: String,
        variant: String,
        known: Vec<String>,
    },
    #[error("engine {engine}: {what} (fix [engines.{engine}])")]
    BadSpec { engine: String, what: String },
    #[error("engine {engine}: a line the UCI protocol does not allow here: {line:?}")]
    Protocol { engine: String, line: String },
    #[error(
        "engine {engine}: died or hung {restarts} times in this game; not restarted again (see its stderr in the log)"
    )]
    TooManyRestarts { engine: String, restarts: u32 },
}

/// Starts the engine, `uci` -> `uciok` (within [`UCI_TIMEOUT`]), reads its
/// id and options, `quit`s, waits, reaps.
pub async fn probe(spec: &EngineSpec) -> Result<EngineId, ExternalError> {
    check_spec(spec)?;
    let mut proc = Proc::spawn(spec, "probe")?;
    let id = match proc.handshake(spec).await {
        Ok(id) => id,
        Err(e) => {
            proc.finish(Duration::ZERO).await;
            return Err(e);
        }
    };
    proc.quit().await;
    Ok(id)
}

/// One search request.
///
/// Positions are sent as `position fen <fen> moves <m1> <m2> ...` (or
/// `position startpos moves ...` when `fen` is `None`). Times go as
/// milliseconds; a `go` without any limit is a plain `go` (the engine
/// searches until [`ExternalEngine::stop`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Go {
    pub fen: Option<String>,
    pub moves: Vec<String>,
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    pub movetime: Option<Duration>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    /// `go ponder`: needs [`EngineSpec::ponder`]. Ended by
    /// [`ExternalEngine::ponderhit`] or [`ExternalEngine::stop`].
    pub ponder: bool,
    /// `go searchmoves`: only these moves (UCI) are searched; empty: all.
    pub searchmoves: Vec<String>,
    /// The hard limit of this search, grace included: at this time after
    /// [`ExternalEngine::go`] was called (after the `ponderhit` for a
    /// ponder search), whatever came between (a restart, the previous
    /// search's `stop`), the driver sends `stop` itself, and kills the
    /// engine if no `bestmove` follows within [`stop_grace`] of it.
    /// `None`: only [`ExternalEngine::stop`] ends a search the engine
    /// does not end.
    pub deadline: Option<Duration>,
    /// Whether castling moves are written the Chess960 way (king takes
    /// rook): `UCI_Chess960` is switched on before the search if the
    /// engine was started without it (a game from a position set up the
    /// Chess960 way).
    pub chess960: bool,
}

/// How long after `stop` a search with `deadline` may take to answer it
/// before the engine is killed: a quarter of the deadline, between
/// [`MIN_STOP_GRACE`] and [`STOP_DEADLINE`], so that a hung engine's
/// deadline and grace fit in the clock it was given (a game gives half of
/// ours: a hung engine costs at most five eighths of it).
pub fn stop_grace(deadline: Option<Duration>) -> Duration {
    deadline.map_or(STOP_DEADLINE, |d| {
        (d / 4).clamp(MIN_STOP_GRACE, STOP_DEADLINE)
    })
}

/// A score from the engine's point of view (the side to move).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    Cp(i32),
    Mate(i32),
}

/// What an `info` line said about the main line (`multipv 1`). A bound
/// (`lowerbound`, `upperbound`) is reported as its score.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub depth: u32,
    pub score: Option<Score>,
    pub nodes: u64,
    pub pv: Vec<String>,
}

impl Info {
    /// What the search has said so far once `line` is read: a line that
    /// leaves out the score or the line (`info depth 13 currmove e2e4`,
    /// `info nodes 50000 nps ...`) keeps the last ones told.
    fn update(&mut self, line: Info) {
        self.depth = self.depth.max(line.depth);
        self.nodes = self.nodes.max(line.nodes);
        if line.score.is_some() {
            self.score = line.score;
        }
        if !line.pv.is_empty() {
            self.pv = line.pv;
        }
    }
}

/// The number [`ExternalEngine::go`] gives a search; its events carry it.
pub type SearchId = u64;

/// What the driver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Info {
        id: SearchId,
        info: Info,
    },
    BestMove {
        id: SearchId,
        best: String,
        ponder: Option<String>,
    },
    /// The search ended without a move: the process died or hung and was
    /// killed (it will be restarted on the next go), or `bestmove (none)`.
    Failed {
        id: SearchId,
        error: String,
    },
}

/// A handle on one engine process for one game: commands go to the
/// driver task over a channel, events come back on the receiver that
/// [`ExternalEngine::start`] returned. Dropping the handle quits the
/// engine as [`ExternalEngine::quit`] does, without waiting for it.
#[derive(Debug)]
pub struct ExternalEngine {
    id: EngineId,
    commands: mpsc::UnboundedSender<Command>,
    next: AtomicU64,
    restarts: Arc<AtomicU32>,
    pid: Arc<AtomicU32>,
    task: Option<JoinHandle<()>>,
}

#[derive(Debug)]
enum Command {
    /// A search, and when it was asked for (its deadline counts from then).
    Go(SearchId, Box<Go>, Instant),
    /// The ponder search is ours, since the move that arrived then.
    PonderHit(Instant),
    Stop,
    Quit,
}

impl ExternalEngine {
    /// Spawns the process: `uci`/`uciok`, the options, `UCI_Variant` =
    /// `variant` (when `Some`; refused with
    /// [`ExternalError::UnknownVariant`] if the engine does not list it),
    /// `UCI_Chess960` = `chess960` (if the engine has it), `ucinewgame`,
    /// `isready`/`readyok`. Errors here mean the game cannot be played
    /// with it. `game` is the game id for logs.
    ///
    /// Variant names are the engine's `UCI_Variant` values (Fairy-Stockfish:
    /// `crazyhouse`, `antichess`, `3check`, ...), compared without case; an
    /// engine without `UCI_Variant` accepts `chess`.
    pub async fn start(
        spec: EngineSpec,
        variant: Option<String>,
        chess960: bool,
        game: &str,
    ) -> Result<(ExternalEngine, mpsc::UnboundedReceiver<Event>), ExternalError> {
        check_spec(&spec)?;
        let (proc, id) = open(&spec, variant.as_deref(), chess960, game).await?;
        tracing::info!(engine = %spec.name, game = %game, pid = ?proc.pid,
            "started {} for {}", id.name, variant.as_deref().unwrap_or("chess"));
        let (commands, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let restarts = Arc::new(AtomicU32::new(0));
        let pid = Arc::new(AtomicU32::new(proc.pid.unwrap_or(0)));
        let driver = Driver {
            spec,
            variant,
            chess960,
            game: game.to_string(),
            proc: Some(proc),
            search: None,
            pending: None,
            stopped: false,
            events,
            info_sent: None,
            held_info: None,
            restarts: restarts.clone(),
            pid: pid.clone(),
        };
        let task = tokio::spawn(driver.run(rx));
        let engine = ExternalEngine {
            id,
            commands,
            next: AtomicU64::new(1),
            restarts,
            pid,
            task: Some(task),
        };
        Ok((engine, events_rx))
    }

    /// What the engine said on `uci`.
    pub fn id(&self) -> &EngineId {
        &self.id
    }

    /// Starts a search; its events carry the returned id. A search already
    /// running is stopped first (its `bestmove` is still reported with its
    /// own id, and the caller ignores it).
    pub fn go(&self, go: Go) -> SearchId {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.send(Command::Go(id, Box::new(go), Instant::now()));
        id
    }

    /// The opponent played the move we ponder on: the ponder search goes
    /// on as a normal one (and its [`Go::deadline`] starts now).
    pub fn ponderhit(&self) {
        self.ponderhit_at(Instant::now());
    }

    /// As [`ExternalEngine::ponderhit`], the opponent's move having
    /// arrived at `at`: the deadline counts from then.
    pub fn ponderhit_at(&self, at: Instant) {
        self.send(Command::PonderHit(at.min(Instant::now())));
    }

    /// Stops the running search (and drops a `go` still waiting for it);
    /// the engine must answer `bestmove` within [`stop_grace`], else the
    /// process is killed, the search reported `Failed`, and a fresh
    /// process is started (handshake, options, variant, `ucinewgame`)
    /// before the next `go`.
    pub fn stop(&self) {
        self.send(Command::Stop);
    }

    /// `quit`, wait up to [`QUIT_GRACE`], then kill; always reaps (no
    /// zombie, no orphan). A search still running is reported `Failed`.
    pub async fn quit(mut self) {
        self.send(Command::Quit);
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::error!(engine = %self.id.name, "engine driver task failed: {e}");
        }
    }

    /// How many times the process was restarted after dying or hanging.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// The process id of the engine now running, if one is.
    pub fn pid(&self) -> Option<u32> {
        match self.pid.load(Ordering::Relaxed) {
            0 => None,
            pid => Some(pid),
        }
    }

    fn send(&self, command: Command) {
        // The driver ends only on Quit or when this handle is dropped; an
        // error here means it is gone and the events channel is closed,
        // which the caller sees.
        if self.commands.send(command).is_err() {
            tracing::debug!(engine = %self.id.name, "engine driver already gone");
        }
    }
}

/// Whether the side to move after `go`'s moves is White: the FEN's
/// second field (every variant's FEN has it), then a side a move.
fn white_to_move(go: &Go) -> bool {
    let white_first = go
        .fen
        .as_deref()
        .and_then(|fen| fen.split_whitespace().nth(1))
        .is_none_or(|side| side != "b");
    white_first == go.moves.len().is_multiple_of(2)
}

/// Refuses a spec whose strings would break the line protocol.
fn check_spec(spec: &EngineSpec) -> Result<(), ExternalError> {
    let bad = |s: &str| s.contains(['\n', '\r']);
    for (k, v) in &spec.options {
        if bad(k) || bad(v) || k.trim().is_empty() {
            return Err(ExternalError::BadSpec {
                engine: spec.name.clone(),
                what: format!("option {k:?} = {v:?}: an option needs a name and no line breaks"),
            });
        }
    }
    Ok(())
}

/// Spawns and readies a process: handshake, variant check, options,
/// `ucinewgame`, `isready`. The process is reaped on any error.
async fn open(
    spec: &EngineSpec,
    variant: Option<&str>,
    chess960: bool,
    game: &str,
) -> Result<(Proc, EngineId), ExternalError> {
    let mut proc = Proc::spawn(spec, game)?;
    let ready = async {
        let id = proc.handshake(spec).await?;
        proc.chess960 = id.chess960;
        let variant = match variant {
            None => None,
            Some(v) => Some(id.variant(v).map(str::to_string).ok_or_else(|| {
                ExternalError::UnknownVariant {
                    engine: spec.name.clone(),
                    variant: v.to_string(),
                    known: id.variants.clone(),
                }
            })?),
        };
        proc.configure(spec, &id, variant.as_deref(), chess960, game)
            .await?;
        Ok(id)
    }
    .await;
    match ready {
        Ok(id) => Ok((proc, id)),
        Err(e) => {
            proc.finish(Duration::ZERO).await;
            Err(e)
        }
    }
}

/// One running engine process and its pipes.
struct Proc {
    engine: String,
    child: Child,
    stdin: ChildStdin,
    /// Stdout, line by line, from the reader task; closed at end of file.
    lines: mpsc::Receiver<String>,
    pid: Option<u32>,
    /// Its process group (the leader's pid), until what is left of it is
    /// killed once the leader is reaped.
    group: Option<i32>,
    /// Whether it listed `UCI_Chess960` (known after the handshake).
    chess960: bool,
}

impl Proc {
    fn spawn(spec: &EngineSpec, game: &str) -> Result<Proc, ExternalError> {
        let engine = spec.name.clone();
        let mut cmd = tokio::process::Command::new(&spec.command);
        cmd.args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &spec.working_dir {
            cmd.current_dir(dir);
        }
        // A group of its own: killing the group also kills what a wrapper
        // script started, and a terminal's Ctrl-C reaches kaissa only,
        // which then quits its engines.
        #[cfg(unix)]
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id();
            // SAFETY: between fork and exec the closure calls only
            // async-signal-safe functions (prctl, getppid, _exit) and
            // allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    // SIGKILL when the thread that spawned us dies: the
                    // spawning thread is a runtime worker, which lives as
                    // long as kaissa's runtime.
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // kaissa died before the prctl took effect.
                    if libc::getppid() as u32 != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|source| ExternalError::Spawn {
            engine: engine.clone(),
            path: spec.command.clone(),
            source,
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Cannot happen: all three were asked for as pipes. The child
            // is killed on drop.
            return Err(ExternalError::Spawn {
                engine,
                path: spec.command.clone(),
                source: io::Error::other("no pipe to the process"),
            });
        };
        let (tx, lines) = mpsc::channel(LINE_QUEUE);
        tokio::spawn(read_stdout(BufReader::new(stdout), tx));
        tokio::spawn(log_stderr(
            BufReader::new(stderr),
            engine.clone(),
            game.to_string(),
        ));
        tracing::debug!(engine = %engine, game = %game, pid = ?pid, "spawned {}", spec.command.display());
        Ok(Proc {
            engine,
            child,
            stdin,
            lines,
            pid,
            group: pid.and_then(|p| i32::try_from(p).ok()),
            chess960: false,
        })
    }

    /// Writes one command line.
    async fn send(&mut self, line: &str, during: &'static str) -> Result<(), ExternalError> {
        tracing::trace!(engine = %self.engine, "> {line}");
        let write = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        let result = match timeout(WRITE_TIMEOUT, write).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the engine does not read its input",
            )),
        };
        match result {
            Ok(()) => Ok(()),
            // Its input is closed: it exited (say so, with its status).
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                let status = self.finish(Duration::from_millis(500)).await;
                Err(ExternalError::Exited {
                    engine: self.engine.clone(),
                    during,
                    status,
                })
            }
            Err(source) => Err(ExternalError::Io {
                engine: self.engine.clone(),
                during,
                source,
            }),
        }
    }

    /// Waits for a line that `done` accepts, handing the others to `other`.
    async fn expect(
        &mut self,
        what: &'static str,
        after: Duration,
        mut done: impl FnMut(&str) -> bool,
        mut other: impl FnMut(&str),
    ) -> Result<(), ExternalError> {
        let deadline = Instant::now() + after;
        loop {
            match timeout_at(deadline, self.lines.recv()).await {
                Err(_) => {
                    return Err(ExternalError::Timeout {
                        engine: self.engine.clone(),
                        what,
                        after,
                    });
                }
                Ok(None) => {
                    let status = self.finish(Duration::from_millis(500)).await;
                    return Err(ExternalError::Exited {
                        engine: self.engine.clone(),
                        during: what,
                        status,
                    });
                }
                Ok(Some(line)) => {
                    tracing::trace!(engine = %self.engine, "< {line}");
                    if done(line.trim()) {
                        return Ok(());
                    }
                    other(&line);
                }
            }
        }
    }

    /// `uci` -> `uciok`, collecting the id and the options.
    async fn handshake(&mut self, spec: &EngineSpec) -> Result<EngineId, ExternalError> {
        self.send("uci", "waiting for uciok").await?;
        let mut id = EngineId::default();
        self.expect(
            "uciok",
            UCI_TIMEOUT,
            |l| l == "uciok",
            |l| parse_uci_line(l, &mut id),
        )
        .await?;
        if id.name.is_empty() {
            id.name = spec.name.clone();
        }
        Ok(id)
    }

    /// The options, the variant, `ucinewgame`, `isready` -> `readyok`.
    async fn configure(
        &mut self,
        spec: &EngineSpec,
        id: &EngineId,
        variant: Option<&str>,
        chess960: bool,
        game: &str,
    ) -> Result<(), ExternalError> {
        const DURING: &str = "setting its options";
        for (name, value) in &spec.options {
            if !id.has_option(name) {
                tracing::warn!(engine = %spec.name, game = %game,
                    "{} has no option {name:?}; sent anyway (its options: {})", id.name, id.options.join(", "));
            }
            self.send(&format!("setoption name {name} value {value}"), DURING)
                .await?;
        }
        if spec.ponder {
            self.send("setoption name Ponder value true", DURING)
                .await?;
        }
        // An engine without UCI_Variant was accepted for chess only.
        if let Some(v) = variant
            && !id.variants.is_empty()
        {
            self.send(&format!("setoption name UCI_Variant value {v}"), DURING)
                .await?;
        }
        if id.chess960 {
            self.send(
                &format!("setoption name UCI_Chess960 value {chess960}"),
                DURING,
            )
            .await?;
        } else if chess960 {
            tracing::warn!(engine = %spec.name, game = %game,
                "{} has no option UCI_Chess960: its castling moves may be wrong in this Chess960 game", id.name);
        }
        self.send("ucinewgame", DURING).await?;
        self.send("isready", "waiting for readyok").await?;
        self.expect("readyok", READY_TIMEOUT, |l| l == "readyok", |_| ())
            .await
    }

    /// Sends `quit` and reaps the process, killing it after [`QUIT_GRACE`].
    async fn quit(mut self) -> String {
        if let Err(e) = self.send("quit", "quitting").await {
            tracing::debug!("{e}");
        }
        self.finish(QUIT_GRACE).await
    }

    /// Waits up to `grace` for the process to exit, else kills its group;
    /// reaps it either way, then kills what is left of the group (a
    /// wrapper's children, when the wrapper exits first). Returns how it
    /// ended, for logs.
    async fn finish(&mut self, grace: Duration) -> String {
        let status = match timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => describe(status),
            _ => {
                self.kill();
                match timeout(REAP_TIMEOUT, self.child.wait()).await {
                    Ok(Ok(status)) => describe(status),
                    Ok(Err(e)) => format!("cannot wait for it: {e}"),
                    // Left to the runtime, which reaps children it was
                    // asked to kill.
                    Err(_) => "killed, still not exited".to_string(),
                }
            }
        };
        self.kill_group();
        self.group = None;
        status
    }

    /// SIGKILL to the process group and its leader.
    fn kill(&mut self) {
        self.kill_group();
        if let Err(e) = self.child.start_kill()
            && e.kind() != io::ErrorKind::InvalidInput
        {
            tracing::debug!(engine = %self.engine, "kill: {e}");
        }
    }

    /// SIGKILL to the process group we created for the engine. Its id
    /// stays ours after the leader is reaped for as long as any member
    /// lives (Linux hands out no pid a group still uses); with none left
    /// the signal finds nothing, since a new group by that id would need
    /// the pid numbers to come round in between, and [`Proc::finish`]
    /// sends it right after the reap and never again.
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            // SAFETY: kill(2) has no memory effects.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Only when the runtime drops the driver task mid-way (shutdown):
        // normally the process is reaped by now and this does nothing.
        self.kill();
    }
}

fn describe(status: ExitStatus) -> String {
    status.to_string()
}

/// Reads stdout into the driver's line queue until end of file.
async fn read_stdout<R: AsyncBufRead + Unpin>(mut r: R, tx: mpsc::Sender<String>) {
    loop {
        match read_line(&mut r, MAX_LINE).await {
            Ok(Some(line)) => {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("engine stdout: {e}");
                return;
            }
        }
    }
}

/// Logs stderr, line by line, bounded.
async fn log_stderr<R: AsyncBufRead + Unpin>(mut r: R, engine: String, game: String) {
    let mut n = 0u32;
    while let Ok(Some(line)) = read_line(&mut r, MAX_STDERR_LINE).await {
        n += 1;
        if n <= MAX_STDERR_LINES {
            tracing::warn!(engine = %engine, game = %game, "stderr: {line}");
        } else if n == MAX_STDERR_LINES + 1 {
            tracing::warn!(engine = %engine, game = %game, "stderr: more lines, not logged");
        }
    }
}

/// The search the engine is running.
struct Search {
    id: SearchId,
    /// `go ponder`, no `ponderhit` yet.
    ponder: bool,
    /// The hard limit ([`Go::deadline`]), counted from `go` or `ponderhit`.
    deadline: Option<Duration>,
    /// When the driver sends `stop` itself.
    stop_at: Option<Instant>,
    /// `stop` was sent: when the engine is killed if no `bestmove` came.
    kill_at: Option<Instant>,
    /// What its `info` lines have said so far.
    said: Info,
}

impl Search {
    fn wake(&self) -> Option<Instant> {
        self.kill_at.or(self.stop_at)
    }
}

/// The driver task's state.
struct Driver {
    spec: EngineSpec,
    variant: Option<String>,
    chess960: bool,
    game: String,
    /// `None` after the process died or was killed: restarted on the next
    /// `go`.
    proc: Option<Proc>,
    search: Option<Search>,
    /// A `go` waiting for the running search to answer `stop`, and when it
    /// was asked for.
    pending: Option<(SearchId, Box<Go>, Instant)>,
    /// The last search ended after a `stop`: the engine may still answer
    /// that `stop` with a stray `bestmove` (some do, even when idle), so
    /// the next search first waits for `readyok` and drops what came
    /// before it.
    stopped: bool,
    events: mpsc::UnboundedSender<Event>,
    /// When the last `info` was reported, and the latest one held back
    /// since (see [`Driver::emit`]).
    info_sent: Option<Instant>,
    held_info: Option<(SearchId, Info)>,
    restarts: Arc<AtomicU32>,
    pid: Arc<AtomicU32>,
}

async fn next_line(proc: &mut Option<Proc>) -> Option<String> {
    match proc {
        Some(p) => p.lines.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Driver {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        loop {
            let wake = self.search.as_ref().and_then(Search::wake);
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Go(id, go, issued)) => self.go(id, go, issued).await,
                    Some(Command::PonderHit(at)) => self.ponderhit(at).await,
                    Some(Command::Stop) => self.stop().await,
                    Some(Command::Quit) | None => break,
                },
                line = next_line(&mut self.proc) => match line {
                    Some(line) => self.line(&line).await,
                    None => self.died().await,
                },
                () = sleep_until_some(wake) => self.timer().await,
            }
            // A go that waited for the previous search starts when that
            // one has ended, however it ended.
            while self.search.is_none() {
                let Some((id, go, issued)) = self.pending.take() else {
                    break;
                };
                self.begin(id, *go, issued).await;
            }
        }
        self.shutdown().await;
    }

    /// Reports an event. `info` lines go at most one an
    /// [`INFO_INTERVAL`]: the game keeps only the last, and an engine
    /// that writes thousands a second (or a game busy posting) must not
    /// fill the unbounded channel. The last one held back goes before the
    /// search's end.
    fn emit(&mut self, event: Event) {
        // The receiver is gone only when the game no longer listens.
        match event {
            Event::Info { id, info } => {
                let now = Instant::now();
                if self.info_sent.is_some_and(|at| now - at < INFO_INTERVAL) {
                    self.held_info = Some((id, info));
                } else {
                    self.info_sent = Some(now);
                    self.held_info = None;
                    let _ = self.events.send(Event::Info { id, info });
                }
            }
            Event::BestMove { id, .. } | Event::Failed { id, .. } => {
                if let Event::Failed { id, error } = &event {
                    tracing::warn!(engine = %self.spec.name, game = %self.game, search = id, "search failed: {error}");
                }
                if let Some((held, info)) = self.held_info.take()
                    && held == id
                {
                    let _ = self.events.send(Event::Info { id, info });
                }
                self.info_sent = None;
                let _ = self.events.send(event);
            }
        }
    }

    async fn go(&mut self, id: SearchId, go: Box<Go>, issued: Instant) {
        if self.search.is_some() {
            if let Some((old, _, _)) = self.pending.replace((id, go, issued)) {
                self.emit(Event::Failed {
                    id: old,
                    error: "replaced by a newer search before it started".to_string(),
                });
            }
            self.request_stop().await;
        } else {
            self.begin(id, *go, issued).await;
        }
    }

    /// Sends the position and `go`, restarting the process first if it
    /// died. The deadline counts from `issued`: the time a restart or a
    /// wait took is the search's, the clocks the engine is told are made
    /// as much shorter, and a search whose deadline passed before it could
    /// start fails then.
    async fn begin(&mut self, id: SearchId, mut go: Go, issued: Instant) {
        if let Err(e) = check_go(&go) {
            self.emit(Event::Failed {
                id,
                error: format!("engine {}: {e}", self.spec.name),
            });
            return;
        }
        if go.ponder && !self.spec.ponder {
            self.emit(Event::Failed {
                id,
                error: format!(
                    "engine {}: `go ponder` without `ponder = true` in [engines.{}]",
                    self.spec.name, self.spec.name
                ),
            });
            return;
        }
        // A ponder search's deadline counts from the hit.
        let hard = go.deadline.filter(|_| !go.ponder).map(|d| issued + d);
        let ready = async {
            if self.stopped {
                self.stopped = false;
                self.sync().await;
            }
            if self.proc.is_none() {
                self.restart().await?;
            }
            if go.chess960 && !self.chess960 {
                self.switch_to_chess960().await?;
            }
            Ok::<(), ExternalError>(())
        };
        let ready = match hard {
            Some(at) => timeout_at(at, ready).await.unwrap_or_else(|_| {
                Err(ExternalError::Timeout {
                    engine: self.spec.name.clone(),
                    what: "the search's deadline, before it could start",
                    after: go.deadline.unwrap_or_default(),
                })
            }),
            None => ready.await,
        };
        if let Err(e) = ready {
            if matches!(e, ExternalError::Timeout { .. }) {
                // Cut off in the middle of a restart or a sync: what the
                // process says next cannot be trusted.
                self.lose_process(&e.to_string()).await;
            }
            self.emit(Event::Failed {
                id,
                error: e.to_string(),
            });
            return;
        }
        let waited = issued.elapsed();
        if !go.ponder && waited >= STALE_CLOCKS {
            let ours = if white_to_move(&go) {
                &mut go.wtime
            } else {
                &mut go.btime
            };
            *ours = ours.map(|t| t.saturating_sub(waited).max(MIN_TOLD_TIME));
        }
        let Some(p) = self.proc.as_mut() else {
            // Not reached: restart() leaves a process or an error.
            self.emit(Event::Failed {
                id,
                error: format!("engine {}: no process", self.spec.name),
            });
            return;
        };
        let sent = match p.send(&position_command(&go), "sending a search").await {
            Ok(()) => p.send(&go_command(&go), "sending a search").await,
            Err(e) => Err(e),
        };
        self.search = Some(Search {
            id,
            ponder: go.ponder,
            deadline: go.deadline,
            stop_at: hard,
            kill_at: None,
            said: Info::default(),
        });
        if let Err(e) = sent {
            self.lose_process(&e.to_string()).await;
        }
    }

    /// A fresh process for a dead or killed one, at most [`MAX_RESTARTS`]
    /// times a game.
    async fn restart(&mut self) -> Result<(), ExternalError> {
        let n = self.restarts.load(Ordering::Relaxed);
        if n >= MAX_RESTARTS {
            return Err(ExternalError::TooManyRestarts {
                engine: self.spec.name.clone(),
                restarts: n,
            });
        }
        self.restarts.store(n + 1, Ordering::Relaxed);
        tracing::warn!(engine = %self.spec.name, game = %self.game,
            "restarting the engine (restart {} of at most {MAX_RESTARTS})", n + 1);
        let (proc, _) = open(
            &self.spec,
            self.variant.as_deref(),
            self.chess960,
            &self.game,
        )
        .await?;
        self.pid.store(proc.pid.unwrap_or(0), Ordering::Relaxed);
        self.proc = Some(proc);
        Ok(())
    }

    /// `UCI_Chess960` on, for the rest of the game (a restarted process
    /// gets it too); an engine without the option is warned of once.
    async fn switch_to_chess960(&mut self) -> Result<(), ExternalError> {
        self.chess960 = true;
        let Some(p) = self.proc.as_mut() else {
            return Ok(());
        };
        if !p.chess960 {
            tracing::warn!(engine = %self.spec.name, game = %self.game,
                "the engine has no option UCI_Chess960: its castling moves may be wrong in this game set up the Chess960 way");
            return Ok(());
        }
        const DURING: &str = "switching to Chess960";
        p.send("setoption name UCI_Chess960 value true", DURING)
            .await?;
        p.send("isready", DURING).await?;
        p.expect("readyok", READY_TIMEOUT, |l| l == "readyok", |_| ())
            .await
    }

    /// `isready` -> `readyok`, dropping the lines before it; an engine
    /// that does not answer is killed (and restarted by the caller).
    async fn sync(&mut self) {
        let Some(p) = self.proc.as_mut() else {
            return;
        };
        let engine = self.spec.name.clone();
        let synced = match p.send("isready", "waiting for readyok").await {
            Ok(()) => {
                p.expect(
                    "readyok",
                    STOP_DEADLINE,
                    |l| l == "readyok",
                    |l| tracing::debug!(engine = %engine, "dropped after stop: {l}"),
                )
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = synced {
            self.lose_process(&e.to_string()).await;
        }
    }

    async fn ponderhit(&mut self, at: Instant) {
        let Some(search) = self.search.as_mut().filter(|s| s.ponder) else {
            tracing::debug!(engine = %self.spec.name, game = %self.game, "ponderhit without a ponder search: ignored");
            return;
        };
        search.ponder = false;
        if search.kill_at.is_none() {
            search.stop_at = search.deadline.map(|d| at + d);
        }
        self.send("ponderhit").await;
    }

    async fn stop(&mut self) {
        if let Some((id, _, _)) = self.pending.take() {
            self.emit(Event::Failed {
                id,
                error: "stopped before it started".to_string(),
            });
        }
        self.request_stop().await;
    }

    /// `stop` to the running search, once; the engine is killed if no
    /// `bestmove` follows within [`stop_grace`].
    async fn request_stop(&mut self) {
        let Some(search) = self.search.as_mut() else {
            return;
        };
        if search.kill_at.is_some() {
            return;
        }
        search.stop_at = None;
        search.kill_at = Some(Instant::now() + stop_grace(search.deadline));
        self.send("stop").await;
    }

    /// Sends a line to the process; one that cannot be written to is lost.
    async fn send(&mut self, line: &str) {
        let Some(p) = self.proc.as_mut() else {
            return;
        };
        if let Err(e) = p.send(line, "searching").await {
            self.lose_process(&e.to_string()).await;
        }
    }

    async fn line(&mut self, line: &str) {
        tracing::trace!(engine = %self.spec.name, "< {line}");
        let Some(search) = self.search.as_mut() else {
            return;
        };
        let id = search.id;
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("info ") {
            if let Some(info) = parse_info(rest) {
                search.said.update(info);
                let info = search.said.clone();
                self.emit(Event::Info { id, info });
            }
        } else if line.split_whitespace().next() == Some("bestmove") {
            // (UCI separates tokens by any whitespace: `bestmove\te2e4`.)
            self.stopped = search.kill_at.is_some();
            self.search = None;
            let event = parse_bestmove(&self.spec.name, id, &line["bestmove".len()..]);
            self.emit(event);
        }
    }

    /// Stdout closed: the process exited (or closed it, which is as bad).
    async fn died(&mut self) {
        let Some(mut proc) = self.proc.take() else {
            return;
        };
        self.stopped = false;
        self.pid.store(0, Ordering::Relaxed);
        let status = proc.finish(Duration::from_millis(500)).await;
        tracing::warn!(engine = %self.spec.name, game = %self.game, "the engine exited ({status}); it is restarted on the next search");
        if let Some(search) = self.search.take() {
            self.emit(Event::Failed {
                id: search.id,
                error: format!(
                    "engine {} exited during the search ({status}); restarted on the next search",
                    self.spec.name
                ),
            });
        }
    }

    async fn timer(&mut self) {
        let Some(search) = self.search.as_ref() else {
            return;
        };
        let now = Instant::now();
        if search.kill_at.is_some_and(|t| t <= now) {
            let grace = stop_grace(search.deadline);
            self.lose_process(&format!("no bestmove within {grace:?} of `stop`"))
                .await;
        } else if search.stop_at.is_some_and(|t| t <= now) {
            tracing::warn!(engine = %self.spec.name, game = %self.game,
                "the search passed its deadline ({:?}): stop", search.deadline.unwrap_or_default());
            self.request_stop().await;
        }
    }

    /// Kills and reaps the process (it hung or cannot be written to) and
    /// fails the running search; the next `go` starts a fresh one.
    async fn lose_process(&mut self, why: &str) {
        if let Some(mut proc) = self.proc.take() {
            self.stopped = false;
            self.pid.store(0, Ordering::Relaxed);
            let status = proc.finish(Duration::ZERO).await;
            tracing::warn!(engine = %self.spec.name, game = %self.game,
                "{why}: the engine was killed ({status}); it is restarted on the next search");
        }
        if let Some(search) = self.search.take() {
            self.emit(Event::Failed {
                id: search.id,
                error: format!(
                    "engine {}: {why}; killed, restarted on the next search",
                    self.spec.name
                ),
            });
        }
    }

    async fn shutdown(&mut self) {
        for id in [
            self.pending.take().map(|(id, _, _)| id),
            self.search.take().map(|s| s.id),
        ]
        .into_iter()
        .flatten()
        {
            let _ = self.events.send(Event::Failed {
                id,
                error: format!("engine {}: quit during the search", self.spec.name),
            });
        }
        if let Some(proc) = self.proc.take() {
            let status = proc.quit().await;
            tracing::debug!(engine = %self.spec.name, game = %self.game, "engine quit ({status})");
        }
        self.pid.store(0, Ordering::Relaxed);
    }
}
