//! An external UCI engine (Fairy-Stockfish for Lichess's variants,
//! Stockfish, any UCI engine) as a child process for one game, driven by
//! its own tokio task that turns the text protocol into typed [`Event`]s.
//!
//! The process is checked before it plays (`uci`/`uciok`, the options,
//! `UCI_Variant` only if the engine lists the variant, `ucinewgame`,
//! `isready`/`readyok`, each within a timeout). Searches are told apart by
//! their [`SearchId`]: a `bestmove` answers the oldest search still
//! waiting for one, `info` lines belong to it too, so a search stopped for
//! a new one never has its move taken for the new one's. A search with a
//! deadline is stopped when it passes it, and an engine that does not
//! answer a `stop` within [`STOP_DEADLINE`] is killed: its search is
//! reported [`Event::Failed`] and the next `go` starts a fresh process
//! (at most [`MAX_RESTARTS`] times a game). A process that dies mid-search
//! is reported the same way. The engine's stderr goes to the log. The
//! process is killed when the handle is dropped, and dies with kaissa
//! (`PR_SET_PDEATHSIG`), so no engine outlives its game or the daemon.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The longest an engine may take to answer `uci` or `isready`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest an engine may take to answer `stop` with a `bestmove`.
pub const STOP_DEADLINE: Duration = Duration::from_secs(2);
/// After `quit`, the longest we wait for the process to exit before
/// killing it.
pub const QUIT_WAIT: Duration = Duration::from_secs(1);
/// Restarts of a dead or hung engine per game, at most.
pub const MAX_RESTARTS: u32 = 5;
/// A line written to the engine that does not go through in this long
/// means the engine is stuck.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// Stderr lines are logged up to this many characters.
const MAX_STDERR_LINE: usize = 300;
/// Output lines are kept up to this many bytes (the rest is dropped): an
/// engine writing without end cannot fill our memory.
pub const MAX_LINE: usize = 64 * 1024;

/// What the driver needs to start an engine (from `[engines.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    /// The configuration section's name, for logs.
    pub name: String,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub working_dir: Option<PathBuf>,
    /// `setoption name K value V`, in order, sent after `uci`.
    pub options: Vec<(String, String)>,
    /// Send `setoption name Ponder value true` (if the engine has it).
    pub ponder: bool,
}

/// What the engine said of itself in answer to `uci`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineId {
    pub name: String,
    pub author: Option<String>,
    /// The values of its `UCI_Variant` option (empty without one).
    pub variants: Vec<String>,
    /// It has `UCI_Chess960`.
    pub chess960: bool,
    /// The names of its options.
    pub options: Vec<String>,
}

/// Why an engine cannot be used. Each names the engine and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error("engine {engine}: cannot start {}: {source}", path.display())]
    Spawn {
        engine: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("engine {engine}: no {what} within {} s", HANDSHAKE_TIMEOUT.as_secs())]
    Timeout { engine: String, what: &'static str },
    #[error("engine {engine}: exited during the {what} ({status})")]
    Exited {
        engine: String,
        what: &'static str,
        status: String,
    },
    #[error("engine {engine}: cannot write to it: {message}")]
    Write { engine: String, message: String },
    #[error("engine {engine} does not play {variant} (its UCI_Variant option does not list it)")]
    UnknownVariant { engine: String, variant: String },
}

/// One search request: the whole game (`position ... moves ...`) and the
/// limits of `go`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Go {
    /// The initial FEN; None: `position startpos` (the variant's start).
    pub fen: Option<String>,
    /// The moves since, in UCI.
    pub moves: Vec<String>,
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    pub movetime: Option<Duration>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    /// `go ponder`: think until `ponderhit` or `stop`.
    pub ponder: bool,
    /// The search is stopped after this long (a hung engine must not
    /// lose the game on time); None: no deadline.
    pub deadline: Option<Duration>,
}

/// A score as the engine gives it, from the side to move's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    Cp(i32),
    Mate(i32),
}

/// The engine's last word about its principal variation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub depth: u32,
    pub score: Option<Score>,
    pub nodes: u64,
    pub pv: Vec<String>,
}

pub type SearchId = u64;

/// What the engine says.
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
    /// The search ended without a move: the process died, or hung and
    /// was killed (the next `go` starts a new one), or said
    /// `bestmove (none)`.
    Failed {
        id: SearchId,
        error: String,
    },
}

enum Request {
    Go(SearchId, Go),
    PonderHit(Option<Duration>),
    Stop,
    Quit(oneshot::Sender<()>),
}

/// The handle on one engine process and its driver task.
pub struct ExternalEngine {
    commands: mpsc::UnboundedSender<Request>,
    id: EngineId,
    next: SearchId,
    restarts: Arc<AtomicU32>,
    pid: Arc<AtomicU32>,
}

/// Starts the engine, reads what it is, and stops it.
pub async fn probe(spec: &EngineSpec) -> Result<EngineId, ExternalError> {
    let (process, id) = Process::start(spec, None, false, "-").await?;
    process.quit().await;
    Ok(id)
}

impl ExternalEngine {
    /// Starts the engine for game `game`: handshake, options, `UCI_Variant`
    /// = `variant` (refused if the engine does not list it),
    /// `UCI_Chess960` = `chess960` (when it has it), `ucinewgame`,
    /// `isready`.
    pub async fn start(
        spec: EngineSpec,
        variant: Option<String>,
        chess960: bool,
        game: &str,
    ) -> Result<(ExternalEngine, mpsc::UnboundedReceiver<Event>), ExternalError> {
        let (process, id) = Process::start(&spec, variant.as_deref(), chess960, game).await?;
        let (commands, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let restarts = Arc::new(AtomicU32::new(0));
        let pid = Arc::new(AtomicU32::new(process.pid));
        let driver = Driver {
            spec,
            variant,
            chess960,
            game: game.to_owned(),
            process: Some(process),
            pending: VecDeque::new(),
            events,
            restarts: Arc::clone(&restarts),
            pid: Arc::clone(&pid),
        };
        tokio::spawn(driver.run(rx));
        Ok((
            ExternalEngine {
                commands,
                id,
                next: 1,
                restarts,
                pid,
            },
            events_rx,
        ))
    }

    /// What the engine said of itself.
    pub fn id(&self) -> &EngineId {
        &self.id
    }

    /// Starts a search; its events carry the returned id. A search still
    /// running is stopped first (its `bestmove` comes with its own id).
    pub fn go(&mut self, go: Go) -> SearchId {
        let id = self.next;
        self.next += 1;
        let _ = self.commands.send(Request::Go(id, go));
        id
    }

    /// The opponent played the move pondered on: the search goes on as a
    /// real one, stopped after `deadline` if it has not answered (None:
    /// no deadline).
    pub fn ponderhit(&self, deadline: Option<Duration>) {
        let _ = self.commands.send(Request::PonderHit(deadline));
    }

    /// Stops the running search (it still answers with a move).
    pub fn stop(&self) {
        let _ = self.commands.send(Request::Stop);
    }

    /// `quit`, then a kill if the process has not exited after
    /// [`QUIT_WAIT`]; the process is reaped.
    pub async fn quit(self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Request::Quit(tx)).is_ok() {
            let _ = tokio::time::timeout(QUIT_WAIT + STOP_DEADLINE, rx).await;
        }
    }

    /// Restarts after the process died or hung.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// The process id of the engine running now (0 while none runs).
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::Relaxed)
    }
}

/// A running engine process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    /// Its stdout, line by line (closed at end of file).
    lines: mpsc::UnboundedReceiver<String>,
    pid: u32,
    name: String,
}

impl Process {
    async fn start(
        spec: &EngineSpec,
        variant: Option<&str>,
        chess960: bool,
        game: &str,
    ) -> Result<(Process, EngineId), ExternalError> {
        let mut command = Command::new(&spec.command);
        command
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &spec.working_dir {
            command.current_dir(dir);
        }
        // Its own process group: a Ctrl-C in a terminal reaches kaissa
        // only, which finishes its games and then quits its engines.
        command.process_group(0);
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id();
            // SAFETY: between fork and exec the closure calls only
            // async-signal-safe functions (prctl, getppid) and allocates
            // nothing.
            unsafe {
                command.pre_exec(move || {
                    // The engine dies with kaissa, even when kaissa is
                    // killed (the signal follows the spawning thread, a
                    // runtime worker that lives as long as the daemon).
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // kaissa died before the prctl: nobody to play for.
                    if libc::getppid() as u32 != parent {
                        return Err(std::io::Error::other("kaissa is gone"));
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().map_err(|source| ExternalError::Spawn {
            engine: spec.name.clone(),
            path: spec.command.clone(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ExternalError::Write {
                engine: spec.name.clone(),
                message: "no pipes".to_owned(),
            });
        };
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            while let Ok(Some(line)) = read_line(&mut reader).await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (name, game_id) = (spec.name.clone(), game.to_owned());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            while let Ok(Some(line)) = read_line(&mut reader).await {
                let line: String = line.chars().take(MAX_STDERR_LINE).collect();
                tracing::warn!(engine = %name, game = %game_id, "stderr: {line}");
            }
        });
        let mut process = Process {
            child,
            stdin,
            lines,
            pid,
            name: spec.name.clone(),
        };
        let id = process.handshake(spec, variant, chess960).await?;
        Ok((process, id))
    }

    async fn handshake(
        &mut self,
        spec: &EngineSpec,
        variant: Option<&str>,
        chess960: bool,
    ) -> Result<EngineId, ExternalError> {
        self.send("uci").await?;
        let mut id = EngineId::default();
        self.wait_for("uciok", |line| read_id(line, &mut id))
            .await?;
        for (key, value) in &spec.options {
            self.send(&format!("setoption name {key} value {value}"))
                .await?;
        }
        if spec.ponder && id.options.iter().any(|o| o == "Ponder") {
            self.send("setoption name Ponder value true").await?;
        }
        if let Some(variant) = variant {
            if !id.variants.iter().any(|v| v == variant) {
                return Err(ExternalError::UnknownVariant {
                    engine: spec.name.clone(),
                    variant: variant.to_owned(),
                });
            }
            self.send(&format!("setoption name UCI_Variant value {variant}"))
                .await?;
        }
        if id.chess960 {
            self.send(&format!("setoption name UCI_Chess960 value {chess960}"))
                .await?;
        }
        self.send("ucinewgame").await?;
        self.send("isready").await?;
        self.wait_for("readyok", |_| {}).await?;
        Ok(id)
    }

    /// Reads lines until one is `token`, passing the others to `each`.
    async fn wait_for(
        &mut self,
        token: &'static str,
        mut each: impl FnMut(&str),
    ) -> Result<(), ExternalError> {
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) if line.trim() == token => return Ok(()),
                Ok(Some(line)) => each(&line),
                Ok(None) => {
                    let status = match tokio::time::timeout(QUIT_WAIT, self.child.wait()).await {
                        Ok(Ok(status)) => status.to_string(),
                        _ => "no exit status".to_owned(),
                    };
                    return Err(ExternalError::Exited {
                        engine: self.name.clone(),
                        what: token,
                        status,
                    });
                }
                Err(_) => {
                    let _ = self.child.start_kill();
                    let _ = self.child.wait().await;
                    return Err(ExternalError::Timeout {
                        engine: self.name.clone(),
                        what: token,
                    });
                }
            }
        }
    }

    async fn send(&mut self, line: &str) -> Result<(), ExternalError> {
        let write = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ExternalError::Write {
                engine: self.name.clone(),
                message: e.to_string(),
            }),
            Err(_) => Err(ExternalError::Write {
                engine: self.name.clone(),
                message: "timed out".to_owned(),
            }),
        }
    }

    /// `quit`, a kill after [`QUIT_WAIT`], and the reaping.
    async fn quit(mut self) {
        let _ = self.send("quit").await;
        if tokio::time::timeout(QUIT_WAIT, self.child.wait())
            .await
            .is_err()
        {
            self.kill().await;
        }
    }

    /// Kills (the whole process group: a wrapper script's engine too)
    /// and reaps.
    async fn kill(&mut self) {
        if self.pid > 0 {
            // SAFETY: kill(2) on our child's own process group.
            unsafe {
                libc::kill(-(self.pid as libc::pid_t), libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// One line of output without its end (`\n`, `\r\n`), at most
/// [`MAX_LINE`] bytes of it kept, bytes that are not UTF-8 replaced; None
/// at the end of the output.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok((!line.is_empty()).then(|| text(&line)));
        }
        let (end, used) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (Some(i), i + 1),
            None => (None, chunk.len()),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..end.unwrap_or(used).min(room)]);
        reader.consume(used);
        if end.is_some() {
            return Ok(Some(text(&line)));
        }
    }
}

fn text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    s.strip_suffix('\r').unwrap_or(&s).to_owned()
}

/// Reads one line of the answer to `uci`.
fn read_id(line: &str, id: &mut EngineId) {
    let line = line.trim();
    if let Some(name) = line.strip_prefix("id name ") {
        id.name = name.trim().to_owned();
    } else if let Some(author) = line.strip_prefix("id author ") {
        id.author = Some(author.trim().to_owned());
    } else if let Some(rest) = line.strip_prefix("option name ") {
        // The name runs up to " type ".
        let (name, rest) = rest.split_once(" type ").unwrap_or((rest, ""));
        let name = name.trim();
        if name == "UCI_Variant" {
            let mut tokens = rest.split_whitespace();
            while let Some(t) = tokens.next() {
                if t == "var"
                    && let Some(v) = tokens.next()
                {
                    id.variants.push(v.to_owned());
                }
            }
        }
        if name == "UCI_Chess960" {
            id.chess960 = true;
        }
        id.options.push(name.to_owned());
    }
}

/// An `info` line, unless it is not about the main line (`multipv` 2 and
/// on, `string`, `currmove` and the like without a score or a pv).
pub fn parse_info(line: &str) -> Option<Info> {
    let mut tokens = line.split_whitespace();
    if tokens.next() != Some("info") {
        return None;
    }
    let mut info = Info::default();
    let mut useful = false;
    while let Some(t) = tokens.next() {
        match t {
            "string" => return None,
            "multipv" => {
                if tokens.next().and_then(|v| v.parse::<u32>().ok()) != Some(1) {
                    return None;
                }
            }
            "depth" => info.depth = tokens.next()?.parse().ok()?,
            "nodes" => info.nodes = tokens.next()?.parse().unwrap_or(0),
            "score" => {
                let kind = tokens.next()?;
                let value: i32 = tokens.next()?.parse().ok()?;
                info.score = match kind {
                    "cp" => Some(Score::Cp(value)),
                    "mate" => Some(Score::Mate(value)),
                    _ => None,
                };
                useful = true;
            }
            "pv" => {
                info.pv = tokens.by_ref().map(str::to_owned).collect();
                useful = true;
            }
            _ => {}
        }
    }
    useful.then_some(info)
}

/// A `bestmove` line: the move (None for `(none)`/`0000`) and the ponder
/// move.
fn parse_bestmove(line: &str) -> Option<(Option<String>, Option<String>)> {
    let mut tokens = line.split_whitespace();
    if tokens.next() != Some("bestmove") {
        return None;
    }
    let best = tokens
        .next()
        .filter(|m| !matches!(*m, "(none)" | "0000" | "none"))
        .map(str::to_owned);
    let ponder = match tokens.next() {
        Some("ponder") => tokens.next().map(str::to_owned),
        _ => None,
    };
    Some((best, ponder))
}

/// The `position` and `go` lines of a request.
fn go_lines(go: &Go) -> (String, String) {
    let mut position = match &go.fen {
        Some(fen) => format!("position fen {fen}"),
        None => "position startpos".to_owned(),
    };
    if !go.moves.is_empty() {
        position.push_str(" moves ");
        position.push_str(&go.moves.join(" "));
    }
    let mut line = "go".to_owned();
    if go.ponder {
        line.push_str(" ponder");
    }
    let ms = |d: Duration| d.as_millis().max(1);
    for (key, value) in [
        ("wtime", go.wtime),
        ("btime", go.btime),
        ("winc", go.winc),
        ("binc", go.binc),
        ("movetime", go.movetime),
    ] {
        if let Some(v) = value {
            line.push_str(&format!(" {key} {}", ms(v)));
        }
    }
    if let Some(depth) = go.depth {
        line.push_str(&format!(" depth {depth}"));
    }
    if let Some(nodes) = go.nodes {
        line.push_str(&format!(" nodes {nodes}"));
    }
    if line == "go" || line == "go ponder" {
        // No limit at all: never an infinite search.
        line.push_str(" movetime 1000");
    }
    (position, line)
}

/// A search waiting for its `bestmove`.
struct Pending {
    id: SearchId,
    deadline: Option<Instant>,
    /// When `stop` was sent for it.
    stopped_at: Option<Instant>,
}

/// The task that owns the process.
struct Driver {
    spec: EngineSpec,
    variant: Option<String>,
    chess960: bool,
    game: String,
    process: Option<Process>,
    /// Searches waiting for their `bestmove`, oldest first.
    pending: VecDeque<Pending>,
    events: mpsc::UnboundedSender<Event>,
    restarts: Arc<AtomicU32>,
    pid: Arc<AtomicU32>,
}

impl Driver {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Request>) {
        let far = || Instant::now() + Duration::from_secs(86_400);
        loop {
            let timer = self.next_timer();
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Request::Go(id, go)) => self.go(id, go).await,
                    Some(Request::PonderHit(deadline)) => {
                        if let Some(p) = self.pending.back_mut() {
                            // A real search now, on our clock.
                            p.deadline = deadline.map(|d| Instant::now() + d);
                        }
                        self.send("ponderhit").await;
                    }
                    Some(Request::Stop) => self.stop_all().await,
                    Some(Request::Quit(done)) => {
                        self.fail_all("the game is over");
                        if let Some(process) = self.process.take() {
                            process.quit().await;
                        }
                        self.pid.store(0, Ordering::Relaxed);
                        let _ = done.send(());
                        return;
                    }
                    None => {
                        // The game dropped its handle: kill (kill_on_drop
                        // would too) and reap.
                        if let Some(mut process) = self.process.take() {
                            process.kill().await;
                        }
                        return;
                    }
                },
                line = async {
                    match self.process.as_mut() {
                        Some(p) => p.lines.recv().await,
                        None => std::future::pending().await,
                    }
                } => match line {
                    Some(line) => self.on_line(&line),
                    None => self.died().await,
                },
                _ = tokio::time::sleep_until(timer.unwrap_or_else(far)), if timer.is_some() => {
                    self.on_timer().await;
                }
            }
        }
    }

    /// The next instant something must be checked: a search's deadline,
    /// or a stop's answer due.
    fn next_timer(&self) -> Option<Instant> {
        self.pending
            .iter()
            .filter_map(|p| match p.stopped_at {
                Some(at) => Some(at + STOP_DEADLINE),
                None => p.deadline,
            })
            .min()
    }

    async fn on_timer(&mut self) {
        let now = Instant::now();
        let hung = self
            .pending
            .iter()
            .any(|p| p.stopped_at.is_some_and(|at| now >= at + STOP_DEADLINE));
        if hung {
            tracing::warn!(engine = %self.spec.name, game = %self.game, "no bestmove {} s after stop: killing the engine", STOP_DEADLINE.as_secs());
            if let Some(mut process) = self.process.take() {
                process.kill().await;
            }
            self.pid.store(0, Ordering::Relaxed);
            self.fail_all("the engine hung and was killed");
            return;
        }
        let due = self
            .pending
            .iter()
            .any(|p| p.stopped_at.is_none() && p.deadline.is_some_and(|d| now >= d));
        if due {
            tracing::warn!(engine = %self.spec.name, game = %self.game, "search past its deadline: stopping it");
            self.stop_all().await;
        }
    }

    async fn go(&mut self, id: SearchId, go: Go) {
        if self.process.is_none() {
            let restarts = self.restarts.load(Ordering::Relaxed);
            if restarts >= MAX_RESTARTS {
                self.fail(
                    id,
                    format!("restarted {MAX_RESTARTS} times already: given up"),
                );
                return;
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
            match Process::start(
                &self.spec,
                self.variant.as_deref(),
                self.chess960,
                &self.game,
            )
            .await
            {
                Ok((process, _)) => {
                    tracing::warn!(engine = %self.spec.name, game = %self.game, restarts = restarts + 1, "engine restarted");
                    self.pid.store(process.pid, Ordering::Relaxed);
                    self.process = Some(process);
                }
                Err(e) => {
                    self.fail(id, format!("cannot restart: {e}"));
                    return;
                }
            }
        }
        if !self.pending.is_empty() {
            // The engine answers the old search first.
            self.stop_all().await;
        }
        let (position, line) = go_lines(&go);
        self.pending.push_back(Pending {
            id,
            deadline: go.deadline.map(|d| Instant::now() + d),
            stopped_at: None,
        });
        if !self.send(&position).await || !self.send(&line).await {
            self.fail_all("cannot write to the engine");
        }
    }

    /// Sends `stop` for every search not stopped yet.
    async fn stop_all(&mut self) {
        let now = Instant::now();
        let mut any = false;
        for p in &mut self.pending {
            if p.stopped_at.is_none() {
                p.stopped_at = Some(now);
                any = true;
            }
        }
        if any {
            self.send("stop").await;
        }
    }

    /// Writes a line; false (and the process killed) if it does not go.
    async fn send(&mut self, line: &str) -> bool {
        let Some(process) = self.process.as_mut() else {
            return false;
        };
        match process.send(line).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(engine = %self.spec.name, game = %self.game, "{e}");
                if let Some(mut process) = self.process.take() {
                    process.kill().await;
                }
                self.pid.store(0, Ordering::Relaxed);
                false
            }
        }
    }

    fn on_line(&mut self, line: &str) {
        let Some(front) = self.pending.front() else {
            return;
        };
        let id = front.id;
        if let Some((best, ponder)) = parse_bestmove(line) {
            self.pending.pop_front();
            let event = match best {
                Some(best) => Event::BestMove { id, best, ponder },
                None => Event::Failed {
                    id,
                    error: "the engine has no move (bestmove (none))".to_owned(),
                },
            };
            let _ = self.events.send(event);
        } else if let Some(info) = parse_info(line) {
            let _ = self.events.send(Event::Info { id, info });
        }
    }

    /// The process closed its output: it died (or is dying).
    async fn died(&mut self) {
        let Some(mut process) = self.process.take() else {
            return;
        };
        self.pid.store(0, Ordering::Relaxed);
        let status = match tokio::time::timeout(QUIT_WAIT, process.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => {
                process.kill().await;
                "killed".to_owned()
            }
        };
        tracing::warn!(engine = %self.spec.name, game = %self.game, %status, "the engine exited");
        self.fail_all(&format!("the engine exited ({status})"));
    }

    fn fail(&self, id: SearchId, error: String) {
        let _ = self.events.send(Event::Failed { id, error });
    }

    fn fail_all(&mut self, error: &str) {
        for p in std::mem::take(&mut self.pending) {
            self.fail(p.id, error.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_info_and_bestmove_lines() {
        assert_eq!(
            parse_info(
                "info depth 12 seldepth 18 multipv 1 score cp -35 lowerbound nodes 12345 nps 1 pv e2e4 e7e5"
            ),
            Some(Info {
                depth: 12,
                score: Some(Score::Cp(-35)),
                nodes: 12345,
                pv: vec!["e2e4".into(), "e7e5".into()],
            })
        );
        assert_eq!(
            parse_info("info depth 3 score mate -2 pv P@f7").map(|i| i.score),
            Some(Some(Score::Mate(-2)))
        );
        assert_eq!(
            parse_info("info depth 5 multipv 2 score cp 1 pv a2a3"),
            None
        );
        assert_eq!(parse_info("info string NNUE evaluation enabled"), None);
        assert_eq!(
            parse_info("info depth 5 currmove e2e4 currmovenumber 1"),
            None
        );
        assert_eq!(parse_info("info depth x score cp 1"), None);
        assert_eq!(parse_info("bestmove e2e4"), None);
        assert_eq!(
            parse_bestmove("bestmove e7e8q ponder P@e4"),
            Some((Some("e7e8q".into()), Some("P@e4".into())))
        );
        assert_eq!(parse_bestmove("bestmove (none)"), Some((None, None)));
        assert_eq!(parse_bestmove("bestmove 0000"), Some((None, None)));
        assert_eq!(parse_bestmove("info depth 1"), None);
    }

    #[tokio::test]
    async fn reads_lines_bounded_and_lossy() {
        let mut long = vec![b'x'; MAX_LINE + 10];
        long.extend_from_slice(b"\nbestmove e2e4\r\n\xff\xfeok\nlast");
        let mut reader = BufReader::with_capacity(100, &long[..]);
        let first = read_line(&mut reader).await.unwrap().unwrap();
        assert_eq!(first.len(), MAX_LINE);
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("bestmove e2e4")
        );
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("\u{fffd}\u{fffd}ok")
        );
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("last")
        );
        assert_eq!(read_line(&mut reader).await.unwrap(), None);
    }

    #[test]
    fn reads_the_engine_id_and_its_variants() {
        let mut id = EngineId::default();
        for line in [
            "id name Fairy-Stockfish 241126",
            "id author Fabian Fichter",
            "option name Skill Level type spin default 20 min -20 max 20",
            "option name UCI_Chess960 type check default false",
            "option name UCI_Variant type combo default chess var 3check var atomic var crazyhouse",
            "garbage line",
        ] {
            read_id(line, &mut id);
        }
        assert_eq!(id.name, "Fairy-Stockfish 241126");
        assert_eq!(id.author.as_deref(), Some("Fabian Fichter"));
        assert_eq!(id.variants, ["3check", "atomic", "crazyhouse"]);
        assert!(id.chess960);
        assert_eq!(id.options, ["Skill Level", "UCI_Chess960", "UCI_Variant"]);
    }

    #[test]
    fn writes_position_and_go() {
        let go = Go {
            fen: None,
            moves: vec!["e2e4".into(), "P@e6".into()],
            wtime: Some(Duration::from_millis(60_000)),
            btime: Some(Duration::from_millis(59_000)),
            winc: Some(Duration::from_secs(1)),
            binc: Some(Duration::from_secs(1)),
            depth: Some(5),
            ..Go::default()
        };
        assert_eq!(
            go_lines(&go),
            (
                "position startpos moves e2e4 P@e6".to_owned(),
                "go wtime 60000 btime 59000 winc 1000 binc 1000 depth 5".to_owned()
            )
        );
        let go = Go {
            fen: Some("8/8/8/8/8/8/8/K6k w - - 0 1".into()),
            ponder: true,
            ..Go::default()
        };
        assert_eq!(
            go_lines(&go),
            (
                "position fen 8/8/8/8/8/8/8/K6k w - - 0 1".to_owned(),
                "go ponder movetime 1000".to_owned()
            )
        );
    }
}
