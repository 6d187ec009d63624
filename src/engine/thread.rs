//! The engine thread and its handle. A search runs on its own OS thread,
//! never on an async runtime; `Engine` is the one handle both front ends
//! (the UCI loop and the bot daemon) use to drive it.
//!
//! Commands go to the thread over a std channel and are handled in order,
//! so `set_hash` or `new_game` sent during a search take effect after it.
//! Each search gets fresh stop/ponder flags, so a `stop` can never be
//! lost to, or leak into, a neighbouring search. Results come back as
//! `Event`s on a tokio unbounded channel: sending never blocks, the async
//! daemon can `.recv().await` and a sync caller can `blocking_recv()`.
//!
//! Pondering, as a front end drives it: after our move, `go_ponder` (or
//! `go` with `ponder` set) on the position after the expected reply, with
//! our clock as it stands. The search runs free of the clock and holds its
//! `BestMove` back. If the opponent plays the expected move, `ponderhit`:
//! our clock starts at that instant (the hard limit counts from there),
//! while the pacer counts the time already spent pondering, so a long
//! ponder answers at once. Any other move: `stop` (the ponder search's
//! `BestMove` arrives; ignore it by its id) and `go` on the real position;
//! the table keeps what the ponder search learned.

use super::hashfile::{self, HashFileError, HashFileInfo};
use super::limits::Limits;
use super::nnue::{self, Network};
use super::search::{SearchControl, SearchInfo, Searcher};
use super::tablebase::Tablebases;
use super::timeman::TimeManager;
use super::tt::TranspositionTable;
use crate::chess::{Move, Position};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;

/// The answer to `save_hash` / `load_hash`.
pub type HashFileReply = oneshot::Receiver<Result<HashFileInfo, HashFileError>>;

/// Engine settings that outlive a search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// Transposition table size in MiB.
    pub hash_mb: usize,
    /// Search threads: the main one plus `threads - 1` lazy SMP helpers
    /// that search the same position over the shared table.
    pub threads: usize,
    /// Number of principal variations reported.
    pub multipv: usize,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            hash_mb: 16,
            threads: 1,
            multipv: 1,
        }
    }
}

/// A request to search one position.
#[derive(Clone, Debug)]
pub struct GoRequest {
    pub position: Position,
    /// Keys of the game's earlier positions, oldest first, the last one
    /// being the position just before `position` (for repetitions).
    pub history: Vec<u64>,
    pub limits: Limits,
    /// Start in ponder mode: the clock does not run until `ponderhit`,
    /// and the best move is held back until `ponderhit` or `stop`.
    pub ponder: bool,
    /// When our clock started running for this move (the arrival of the
    /// position that made it our turn): the search clock counts from
    /// there, not from when the engine thread picked the request up, so
    /// time spent before (a table still being saved or loaded) is counted.
    /// `None`: from the pick-up.
    pub clock_start: Option<Instant>,
}

impl GoRequest {
    pub fn new(position: Position, history: Vec<u64>, limits: Limits) -> GoRequest {
        GoRequest {
            position,
            history,
            limits,
            ponder: false,
            clock_start: None,
        }
    }
}

/// Identifies one `go`: every event carries the id of its search, so a
/// caller can tell a late answer of a stopped search from the current one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SearchId(pub u64);

/// The answer of a search.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BestMove {
    /// The move to play; `None` when the position has no legal move.
    pub mv: Option<Move>,
    /// The expected reply, to ponder on.
    pub ponder: Option<Move>,
}

/// What the engine thread reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Progress of a search (one per completed iteration and PV line).
    Info { id: SearchId, info: SearchInfo },
    /// A search is over. Exactly one of this or `Failed` per `go`.
    BestMove { id: SearchId, best: BestMove },
    /// A search ended without an answer: a bug in the search (it
    /// panicked; `error` is the panic's message). The engine goes on with
    /// fresh searchers and the same table.
    Failed { id: SearchId, error: String },
}

struct Flags {
    stop: AtomicBool,
    pondering: AtomicBool,
    /// When `ponderhit` came: the real clock of a ponder search runs from
    /// there (set before `pondering` is cleared).
    ponderhit_at: OnceLock<Instant>,
}

enum Command {
    Go(SearchId, Box<GoRequest>, Arc<Flags>),
    NewGame,
    ClearHash,
    SetHash(usize),
    SetThreads(usize),
    SetMultiPv(usize),
    SetPonder(bool),
    SetTimeManager(TimeManager),
    SetNet(Option<Arc<Network>>),
    SetTablebases(Option<Arc<Tablebases>>),
    SaveHash(
        PathBuf,
        oneshot::Sender<Result<HashFileInfo, HashFileError>>,
    ),
    LoadHash(
        PathBuf,
        oneshot::Sender<Result<HashFileInfo, HashFileError>>,
    ),
    Quit,
}

/// Handle to the engine thread. Dropping it stops any search and joins
/// the thread.
pub struct Engine {
    commands: mpsc::Sender<Command>,
    current: Option<Arc<Flags>>,
    next_id: u64,
    thread: Option<JoinHandle<()>>,
}

impl Engine {
    /// Starts the engine thread; events go to `events`. If the thread
    /// cannot be spawned, the handle answers nothing: use [`Engine::try_new`]
    /// where that must be handled.
    pub fn new(options: EngineOptions, events: UnboundedSender<Event>) -> Engine {
        let (tx, rx) = mpsc::channel();
        let thread = spawn_thread(options, rx, events).ok();
        Engine {
            commands: tx,
            current: None,
            next_id: 0,
            thread,
        }
    }

    /// Starts the engine thread, or says why it could not be spawned.
    pub fn try_new(
        options: EngineOptions,
        events: UnboundedSender<Event>,
    ) -> std::io::Result<Engine> {
        let (tx, rx) = mpsc::channel();
        let thread = spawn_thread(options, rx, events)?;
        Ok(Engine {
            commands: tx,
            current: None,
            next_id: 0,
            thread: Some(thread),
        })
    }

    /// Starts the engine thread with a fresh event channel.
    pub fn spawn(options: EngineOptions) -> (Engine, UnboundedReceiver<Event>) {
        let (tx, rx) = unbounded_channel();
        (Engine::new(options, tx), rx)
    }

    /// [`Engine::spawn`], or why the thread could not be spawned.
    pub fn try_spawn(
        options: EngineOptions,
    ) -> std::io::Result<(Engine, UnboundedReceiver<Event>)> {
        let (tx, rx) = unbounded_channel();
        Ok((Engine::try_new(options, tx)?, rx))
    }

    /// Starts a search; a running one is stopped first (its `BestMove`
    /// still arrives, with its own id).
    pub fn go(&mut self, request: GoRequest) -> SearchId {
        self.stop();
        self.next_id += 1;
        let id = SearchId(self.next_id);
        let flags = Arc::new(Flags {
            stop: AtomicBool::new(false),
            pondering: AtomicBool::new(request.ponder),
            ponderhit_at: OnceLock::new(),
        });
        self.current = Some(flags.clone());
        self.send(Command::Go(id, Box::new(request), flags));
        id
    }

    /// Starts a ponder search: `go` with `request.ponder` set.
    pub fn go_ponder(&mut self, mut request: GoRequest) -> SearchId {
        request.ponder = true;
        self.go(request)
    }

    /// Stops the current search; its `BestMove` follows promptly.
    pub fn stop(&mut self) {
        if let Some(f) = self.current.take() {
            f.stop.store(true, Ordering::SeqCst);
            self.wake();
        }
    }

    /// The opponent played the expected move: the ponder search goes on
    /// as a normal search under the clock.
    pub fn ponderhit(&mut self) {
        self.ponderhit_at(Instant::now());
    }

    /// As [`Engine::ponderhit`], the opponent's move having arrived
    /// at `at` (our clock has run since; never later than now).
    pub fn ponderhit_at(&mut self, at: Instant) {
        if let Some(f) = &self.current {
            let _ = f.ponderhit_at.set(at.min(Instant::now()));
            f.pondering.store(false, Ordering::SeqCst);
            self.wake();
        }
    }

    /// A new game starts: forget the table and the history statistics.
    pub fn new_game(&mut self) {
        self.send(Command::NewGame);
    }

    pub fn clear_hash(&mut self) {
        self.send(Command::ClearHash);
    }

    pub fn set_hash(&mut self, mb: usize) {
        self.send(Command::SetHash(mb.clamp(1, 1 << 16)));
    }

    pub fn set_threads(&mut self, n: usize) {
        self.send(Command::SetThreads(n.clamp(1, 1024)));
    }

    pub fn set_multipv(&mut self, n: usize) {
        self.send(Command::SetMultiPv(n.clamp(1, 256)));
    }

    /// Pondering is on (UCI `Ponder`): we will think on the opponent's
    /// time too, so the time manager plans a little more per move. It does
    /// not start ponder searches by itself: send `go` with `ponder` set.
    pub fn set_ponder(&mut self, on: bool) {
        self.send(Command::SetPonder(on));
    }

    /// Chooses the time manager of clock searches (default: adaptive).
    pub fn set_time_manager(&mut self, manager: TimeManager) {
        self.send(Command::SetTimeManager(manager));
    }

    /// Saves the transposition table to `path` (atomically: a temporary
    /// file renamed over it). Runs on the engine thread after the current
    /// search, if any, has ended; the answer comes on the returned channel
    /// (`.await` it, or `blocking_recv()` outside async code). Stop a ponder
    /// or infinite search first, or the answer waits for it.
    pub fn save_hash(&mut self, path: impl Into<PathBuf>) -> HashFileReply {
        let (tx, rx) = oneshot::channel();
        self.send(Command::SaveHash(path.into(), tx));
        rx
    }

    /// Replaces the transposition table with the one saved in `path` (the
    /// table takes the file's size). A missing, truncated, corrupted or
    /// wrong-version file is reported in the answer and the table is left
    /// as it was. Ordered like `save_hash`.
    pub fn load_hash(&mut self, path: impl Into<PathBuf>) -> HashFileReply {
        let (tx, rx) = oneshot::channel();
        self.send(Command::LoadHash(path.into(), tx));
        rx
    }

    /// Evaluates with `net` from the next search on (`None`: the
    /// hand-crafted evaluation). All search threads share it.
    pub fn set_net(&mut self, net: Option<Arc<Network>>) {
        self.send(Command::SetNet(net));
    }

    /// Probes `tablebases` in the search and at the root from the next
    /// search on (`None`: no tables). All search threads share them.
    pub fn set_tablebases(&mut self, tablebases: Option<Arc<Tablebases>>) {
        self.send(Command::SetTablebases(tablebases));
    }

    fn send(&self, c: Command) {
        // The thread only ends when the handle is dropped (or it could
        // not be spawned); a failed send has nobody to tell.
        let _ = self.commands.send(c);
    }

    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
        self.send(Command::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn spawn_thread(
    options: EngineOptions,
    rx: mpsc::Receiver<Command>,
    events: UnboundedSender<Event>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kaissa-search".into())
        // Deep recursion with a position per frame: give it room.
        .stack_size(64 << 20)
        .spawn(move || engine_loop(options, rx, events))
}

/// Sets a stop flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The message of a caught panic's `payload`.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The `Failed` event of search `id`, whose thread panicked with `payload`.
fn failure(id: SearchId, payload: Box<dyn std::any::Any + Send>) -> Event {
    Event::Failed {
        id,
        error: format!("the search panicked: {}", panic_message(&*payload)),
    }
}

fn engine_loop(
    mut options: EngineOptions,
    rx: mpsc::Receiver<Command>,
    events: UnboundedSender<Event>,
) {
    let mut tt = TranspositionTable::new(options.hash_mb);
    let mut searcher = Searcher::new();
    // Lazy SMP helpers: their own history and stacks, the same table.
    let mut helpers: Vec<Searcher> = Vec::new();
    let mut ponder_enabled = false;
    let mut time_manager = TimeManager::default();
    let mut net = nnue::default_net();
    let mut tablebases: Option<Arc<Tablebases>> = None;
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Command::Go(id, req, flags) => {
                tt.new_search();
                let ctrl = SearchControl {
                    ponderhit_at: Some(&flags.ponderhit_at),
                    clock_start: req.clock_start,
                    time_manager,
                    ponder_enabled,
                    ..SearchControl::new(&flags.stop, &flags.pondering)
                };
                helpers.resize_with(options.threads.saturating_sub(1), Searcher::new);
                searcher.set_net(net.clone());
                searcher.set_tablebases(tablebases.clone());
                for h in &mut helpers {
                    h.set_net(net.clone());
                    h.set_tablebases(tablebases.clone());
                }
                let helper_stop = AtomicBool::new(false);
                let never = AtomicBool::new(false);
                // Helpers run until the main search ends, to the same depth
                // at most; only the main thread reports and decides.
                let helper_limits = Limits {
                    depth: req.limits.depth,
                    searchmoves: req.limits.searchmoves.clone(),
                    ..Limits::default()
                };
                // A panic in the search (a bug) must not take the engine
                // with it: it ends this search as `Failed`.
                let searched = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    std::thread::scope(|scope| {
                        let tt = &tt;
                        for (i, h) in helpers.iter_mut().enumerate() {
                            let (req, helper_limits, helper_stop, never) =
                                (&req, &helper_limits, &helper_stop, &never);
                            let spawned = std::thread::Builder::new()
                                .name(format!("kaissa-helper-{}", i + 1))
                                .stack_size(64 << 20)
                                .spawn_scoped(scope, move || {
                                    let ctrl = SearchControl {
                                        helper: i + 1,
                                        ..SearchControl::new(helper_stop, never)
                                    };
                                    h.search(
                                        &req.position,
                                        &req.history,
                                        helper_limits,
                                        1,
                                        tt,
                                        &ctrl,
                                        &mut |_| {},
                                    );
                                });
                            // A helper that cannot start is one thread fewer.
                            drop(spawned);
                        }
                        // Stops the helpers however the main search ends, so
                        // that the scope can join them after a panic too.
                        let _stop = StopOnDrop(&helper_stop);
                        #[cfg(test)]
                        if req.limits.depth == Some(tests::PANIC_DEPTH) {
                            panic!("injected by a test");
                        }
                        searcher.search(
                            &req.position,
                            &req.history,
                            &req.limits,
                            options.multipv,
                            tt,
                            &ctrl,
                            &mut |info| {
                                let _ = events.send(Event::Info { id, info });
                            },
                        )
                    })
                }));
                let result = match searched {
                    Ok(result) => result,
                    Err(payload) => {
                        searcher = Searcher::new();
                        helpers.clear();
                        let _ = events.send(failure(id, payload));
                        continue;
                    }
                };
                // UCI: in infinite or ponder mode the answer waits for
                // `stop` (or `ponderhit`), even if the search ended early.
                while !flags.stop.load(Ordering::SeqCst)
                    && (req.limits.infinite || flags.pondering.load(Ordering::SeqCst))
                {
                    std::thread::park_timeout(Duration::from_millis(20));
                }
                let _ = events.send(Event::BestMove {
                    id,
                    best: BestMove {
                        mv: result.best,
                        ponder: result.ponder,
                    },
                });
            }
            Command::NewGame => {
                tt.clear();
                searcher.clear();
                for h in &mut helpers {
                    h.clear();
                }
            }
            Command::ClearHash => tt.clear(),
            Command::SetHash(mb) => {
                if mb != options.hash_mb {
                    options.hash_mb = mb;
                    tt.resize(mb);
                }
            }
            Command::SetThreads(n) => options.threads = n,
            Command::SetMultiPv(n) => options.multipv = n,
            Command::SetPonder(on) => ponder_enabled = on,
            Command::SetTimeManager(m) => time_manager = m,
            Command::SetNet(n) => net = n,
            Command::SetTablebases(t) => tablebases = t,
            Command::SaveHash(path, reply) => {
                let _ = reply.send(hashfile::save(&tt, &path));
            }
            Command::LoadHash(path, reply) => {
                let r = hashfile::load(&mut tt, &path);
                if r.is_ok() {
                    options.hash_mb = tt.size_mb();
                }
                let _ = reply.send(r);
            }
            Command::Quit => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Position;

    /// A `go` to this depth panics in the search (test builds only).
    pub(super) const PANIC_DEPTH: u32 = 999;

    fn answer(rx: &mut UnboundedReceiver<Event>, want: SearchId) -> Event {
        loop {
            match rx.blocking_recv().expect("the engine thread is alive") {
                Event::Info { .. } => {}
                e @ (Event::BestMove { id, .. } | Event::Failed { id, .. }) if id == want => {
                    return e;
                }
                _ => {}
            }
        }
    }

    #[test]
    fn a_panicking_search_fails_and_the_engine_goes_on() {
        let (mut engine, mut rx) = Engine::spawn(EngineOptions {
            threads: 2,
            ..EngineOptions::default()
        });
        let pos = Position::startpos();
        let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(4)));
        assert!(matches!(answer(&mut rx, id), Event::BestMove { .. }));
        // The helper thread is searching too when the main search panics:
        // it is stopped and joined, and the search answers `Failed`.
        let id = engine.go(GoRequest::new(
            pos.clone(),
            vec![],
            Limits::depth(PANIC_DEPTH),
        ));
        match answer(&mut rx, id) {
            Event::Failed { error, .. } => assert!(error.contains("injected by a test"), "{error}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(5)));
        match answer(&mut rx, id) {
            Event::BestMove { best, .. } => assert!(pos.is_legal(best.mv.expect("a move"))),
            other => panic!("expected a move, got {other:?}"),
        }
    }
}
