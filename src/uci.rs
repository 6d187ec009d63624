//! The UCI front end: reads commands line by line, keeps the current
//! position and options, drives the `Engine` handle, and prints the
//! engine's events. A printer thread writes `info`/`bestmove` lines while
//! this loop keeps reading, so `stop`, `ponderhit` and `isready` are
//! handled during a search.
//!
//! Bad input never stops the engine: an unknown or malformed command is
//! answered with `info string error: ...` and otherwise ignored.

use crate::chess::{CastlingNotation, Move, Position};
use crate::engine::book::{self, Book, PlayedBook, Selection};
use crate::engine::eval::evaluate;
use crate::engine::nnue::{self, Network};
use crate::engine::sources::Sources;
use crate::engine::tablebase::Tablebases;
use crate::engine::timeman::TimeManager;
use crate::engine::tune;
use crate::engine::{
    BestMove, Engine, EngineOptions, Event, GoRequest, Limits, Score, SearchId, SearchInfo,
};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NAME: &str = "kaissa";

/// A spin option: its line in the answer to `uci` and the range
/// `setoption` accepts both come from here.
struct Spin {
    name: &'static str,
    default: u64,
    min: u64,
    max: u64,
    /// What the value counts, for the error message.
    unit: &'static str,
}

impl Spin {
    fn line(&self) -> String {
        format!(
            "option name {} type spin default {} min {} max {}",
            self.name, self.default, self.min, self.max
        )
    }

    /// The value of a `setoption` for it, or what it expects.
    fn parse(&self, value: Option<&str>) -> Result<u64, String> {
        value
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| (self.min..=self.max).contains(n))
            .ok_or_else(|| {
                format!(
                    "{}: expected {}..{}{}",
                    self.name, self.min, self.max, self.unit
                )
            })
    }
}

/// The engine's table, all searches together (`EngineOptions`' default).
const HASH: Spin = Spin {
    name: "Hash",
    default: 16,
    min: 1,
    max: 65536,
    unit: " (MiB)",
};
const THREADS: Spin = Spin {
    name: "Threads",
    default: 1,
    min: 1,
    max: 1024,
    unit: "",
};
const MULTIPV: Spin = Spin {
    name: "MultiPV",
    default: 1,
    min: 1,
    max: 256,
    unit: "",
};
/// Kept back per move for the GUI's lag (the bot has its own,
/// `engine.move_overhead_ms`, with the measured lag on top).
const MOVE_OVERHEAD: Spin = Spin {
    name: "Move Overhead",
    default: 30,
    min: 0,
    max: 5000,
    unit: " (ms)",
};
const BOOK_DEPTH: Spin = Spin {
    name: "BookDepth",
    default: 20,
    min: 0,
    max: 1000,
    unit: " (moves)",
};

type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn say(out: &Out, line: &str) {
    if let Ok(mut w) = out.lock() {
        let _ = writeln!(w, "{line}");
        let _ = w.flush();
    }
}

fn moves_to_uci(moves: &[Move], chess960: bool) -> String {
    let mut s = String::new();
    for (i, m) in moves.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&m.to_uci(chess960));
    }
    s
}

/// Formats one engine event as a UCI line.
pub fn format_event(e: &Event, chess960: bool) -> String {
    match e {
        Event::Info { info, .. } => {
            let mut line = format!(
                "info depth {} seldepth {} multipv {} score {} nodes {} nps {} time {} hashfull {}",
                info.depth,
                info.seldepth,
                info.multipv,
                info.score,
                info.nodes,
                info.nps,
                info.time.as_millis(),
                info.hashfull
            );
            if info.tbhits > 0 {
                line.push_str(&format!(" tbhits {}", info.tbhits));
            }
            if !info.pv.is_empty() {
                line.push_str(" pv ");
                line.push_str(&moves_to_uci(&info.pv, chess960));
            }
            line
        }
        Event::BestMove { best, .. } => match best.mv {
            Some(m) => match best.ponder {
                Some(p) => format!(
                    "bestmove {} ponder {}",
                    m.to_uci(chess960),
                    p.to_uci(chess960)
                ),
                None => format!("bestmove {}", m.to_uci(chess960)),
            },
            None => "bestmove 0000".to_string(),
        },
        // The GUI still gets its one `bestmove` a `go`.
        Event::Failed { error, .. } => format!("info string {error}\nbestmove 0000"),
    }
}

struct Session {
    engine: Engine,
    out: Out,
    chess960: Arc<AtomicBool>,
    position: Position,
    /// Keys of the positions before `position`, oldest first.
    history: Vec<u64>,
    move_overhead: Duration,
    /// Where `Save Hash` / `Load Hash` write and read the table.
    hash_file: Option<std::path::PathBuf>,
    /// The evaluation the engine uses (`None`: hand-crafted).
    net: Option<Arc<Network>>,
    /// The move that led to `position`, if any (for book keys).
    last_move: Option<Move>,
    /// Books (with `OwnBook`) and tables (with `SyzygyPath`).
    sources: Sources,
    book: BookOptions,
}

/// `OwnBook`, `BookFile`, `BookDepth`, `BookSelection`.
struct BookOptions {
    own_book: bool,
    /// Files separated by `:`.
    files: String,
    depth: u32,
    selection: Selection,
}

/// Runs the UCI protocol on `input`/`output` until `quit` or end of input.
pub fn run<R: BufRead>(input: R, output: Box<dyn Write + Send>) {
    let out: Out = Arc::new(Mutex::new(output));
    let chess960 = Arc::new(AtomicBool::new(false));
    let (engine, mut events) = Engine::spawn(EngineOptions::default());
    let printer = {
        let out = out.clone();
        let chess960 = chess960.clone();
        std::thread::spawn(move || {
            while let Some(e) = events.blocking_recv() {
                say(&out, &format_event(&e, chess960.load(Ordering::Relaxed)));
            }
        })
    };
    let mut s = Session {
        engine,
        out: out.clone(),
        chess960,
        position: Position::startpos(),
        history: Vec::new(),
        move_overhead: Duration::from_millis(MOVE_OVERHEAD.default),
        hash_file: None,
        net: Some(nnue::embedded()),
        last_move: None,
        sources: Sources::default(),
        book: BookOptions {
            own_book: false,
            files: book::DEFAULT_BOOK.to_owned(),
            depth: BOOK_DEPTH.default as u32,
            selection: Selection::Weighted,
        },
    };
    let mut input = input;
    while let Ok(Some(line)) = read_command(&mut input) {
        if !s.command(line.trim()) {
            break;
        }
    }
    // Quit or end of input: stop the search; its bestmove is still printed
    // before the engine thread ends, which closes the event channel.
    s.engine.stop();
    drop(s);
    let _ = printer.join();
}

/// The parameters of `go`.
const GO_PARAMETERS: [&str; 12] = [
    "infinite",
    "ponder",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movetime",
    "depth",
    "nodes",
    "mate",
    "movestogo",
    "searchmoves",
];

/// A command line is cut to this many bytes (a `position ... moves` line
/// of a 5,000-ply game is 25 KB).
const MAX_COMMAND: usize = 1 << 20;

/// The next command line, cut to [`MAX_COMMAND`] bytes (the rest is read
/// and dropped), invalid UTF-8 replaced rather than ending the session;
/// `None` at end of input.
fn read_command<R: BufRead>(r: &mut R) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any.then(|| String::from_utf8_lossy(&line).into_owned()));
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let end = newline.unwrap_or(chunk.len());
        let room = MAX_COMMAND.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..end.min(room)]);
        r.consume(newline.map_or(end, |i| i + 1));
        if newline.is_some() {
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

impl Session {
    fn error(&self, msg: &str) {
        let clipped: String = msg.chars().take(200).collect();
        say(&self.out, &format!("info string error: {clipped}"));
    }

    /// Handles one line; false means quit.
    fn command(&mut self, line: &str) -> bool {
        let mut tokens = line.split_whitespace();
        let Some(cmd) = tokens.next() else {
            return true;
        };
        let rest: Vec<&str> = tokens.collect();
        match cmd {
            "uci" => {
                say(
                    &self.out,
                    &format!("id name {NAME} {}", env!("CARGO_PKG_VERSION")),
                );
                say(&self.out, "id author the kaissa authors");
                for spin in [HASH, THREADS, MULTIPV, MOVE_OVERHEAD] {
                    say(&self.out, &spin.line());
                }
                for opt in [
                    "option name Ponder type check default false",
                    "option name UCI_Chess960 type check default false",
                    "option name Clear Hash type button",
                    "option name TimeManager type combo default adaptive var adaptive var fixed",
                    "option name HashFile type string default <empty>",
                    "option name Save Hash type button",
                    "option name Load Hash type button",
                    "option name EvalFile type string default <embedded>",
                    "option name OwnBook type check default false",
                    &BOOK_DEPTH.line(),
                    "option name BookSelection type combo default weighted var weighted var best var uniform",
                    "option name SyzygyPath type string default <empty>",
                ] {
                    say(&self.out, opt);
                }
                say(
                    &self.out,
                    &format!(
                        "option name BookFile type string default {}",
                        book::DEFAULT_BOOK
                    ),
                );
                if cfg!(feature = "tune") {
                    for t in tune::TUNABLES {
                        say(
                            &self.out,
                            &format!(
                                "option name tune_{} type spin default {} min {} max {}",
                                t.name, t.default, t.min, t.max
                            ),
                        );
                    }
                }
                say(&self.out, "uciok");
            }
            "isready" => say(&self.out, "readyok"),
            "ucinewgame" => {
                self.engine.new_game();
                self.position = Position::startpos();
                self.history.clear();
                self.last_move = None;
            }
            "position" => self.position_command(&rest),
            "go" => self.go(&rest),
            "stop" => self.engine.stop(),
            "ponderhit" => self.engine.ponderhit(),
            "setoption" => self.setoption(&rest),
            "quit" => return false,
            "d" => say(
                &self.out,
                &format!(
                    "info string fen {}",
                    self.position.to_fen(CastlingNotation::XFen)
                ),
            ),
            "eval" => say(
                &self.out,
                &format!(
                    "info string static eval {} cp (side to move, {})",
                    match &self.net {
                        Some(net) => nnue::evaluate_position(net, &self.position),
                        None => evaluate(&self.position),
                    },
                    if self.net.is_some() {
                        "nnue"
                    } else {
                        "classical"
                    }
                ),
            ),
            "debug" | "register" => {}
            _ => self.error(&format!("unknown command {cmd:?}")),
        }
        true
    }

    fn position_command(&mut self, args: &[&str]) {
        let chess960 = self.chess960.load(Ordering::Relaxed);
        let moves_at = args.iter().position(|&t| t == "moves");
        let setup = &args[..moves_at.unwrap_or(args.len())];
        let start = match setup.first() {
            Some(&"startpos") if setup.len() == 1 => Position::startpos(),
            Some(&"fen") if setup.len() > 1 => match Position::from_fen(&setup[1..].join(" ")) {
                Ok(p) => p,
                Err(e) => {
                    self.error(&format!("invalid FEN: {e}"));
                    return;
                }
            },
            _ => {
                self.error("expected: position startpos|fen <fen> [moves ...]");
                return;
            }
        };
        let mut pos = start;
        let mut history = Vec::new();
        let mut last_move = None;
        if let Some(i) = moves_at {
            for tok in &args[i + 1..] {
                match pos.parse_uci(tok, chess960) {
                    Ok(m) => {
                        history.push(pos.key());
                        pos = pos.play(m);
                        last_move = Some(m);
                    }
                    Err(e) => {
                        // Keep the position reached before the bad move.
                        self.error(&format!("{e}; position set before it"));
                        break;
                    }
                }
            }
        }
        self.position = pos;
        self.history = history;
        self.last_move = last_move;
    }

    fn go(&mut self, args: &[&str]) {
        let chess960 = self.chess960.load(Ordering::Relaxed);
        let mut limits = Limits {
            move_overhead: self.move_overhead,
            ..Limits::default()
        };
        let mut ponder = false;
        let mut i = 0;
        while i < args.len() {
            let key = args[i];
            i += 1;
            let value = args.get(i).copied();
            // A bad value is skipped, unless it is the next parameter
            // (`go wtime infinite`: the search is still infinite).
            let skip = usize::from(value.is_some_and(|v| !GO_PARAMETERS.contains(&v)));
            let ms = |v: Option<&str>| -> Option<Duration> {
                v.and_then(|s| s.parse::<i64>().ok())
                    .map(|n| Duration::from_millis(n.max(0) as u64))
            };
            let num = |v: Option<&str>| -> Option<u64> { v.and_then(|s| s.parse::<u64>().ok()) };
            let mut bad = false;
            match key {
                "infinite" => limits.infinite = true,
                "ponder" => ponder = true,
                "wtime" | "btime" | "winc" | "binc" | "movetime" => {
                    let d = ms(value);
                    bad = d.is_none();
                    match key {
                        "wtime" => limits.wtime = d,
                        "btime" => limits.btime = d,
                        "winc" => limits.winc = d,
                        "binc" => limits.binc = d,
                        _ => limits.movetime = d,
                    }
                    i += skip;
                }
                "depth" | "nodes" | "mate" | "movestogo" => {
                    let n = num(value);
                    bad = n.is_none();
                    match key {
                        "depth" => limits.depth = n.map(|n| n.min(1000) as u32),
                        "nodes" => limits.nodes = n,
                        "mate" => limits.mate = n.map(|n| n.min(1000) as u32),
                        _ => limits.movestogo = n.map(|n| n.min(1000) as u32),
                    }
                    i += skip;
                }
                "searchmoves" => {
                    while let Some(tok) = args.get(i) {
                        match self.position.parse_uci(tok, chess960) {
                            Ok(m) => limits.searchmoves.push(m),
                            Err(_) => break,
                        }
                        i += 1;
                    }
                }
                other => self.error(&format!("go: unknown parameter {other:?} ignored")),
            }
            if bad {
                self.error(&format!("go: bad value for {key} ignored"));
            }
        }
        // A book or table move is answered at once, unless the GUI wants
        // a search it will stop itself.
        if !ponder
            && !limits.infinite
            && limits.searchmoves.is_empty()
            && let Some(choice) =
                self.sources
                    .choose(&self.position, self.last_move, chess960, fastrand::f64())
        {
            say(
                &self.out,
                &format!(
                    "info string {} move {}",
                    choice.source,
                    choice.mv.to_uci(chess960)
                ),
            );
            let id = SearchId(0);
            if let Some(value) = choice.source.value() {
                let info = SearchInfo {
                    depth: 1,
                    seldepth: 1,
                    multipv: 1,
                    score: Score::from_value(value),
                    nodes: 0,
                    nps: 0,
                    time: Duration::ZERO,
                    hashfull: 0,
                    tbhits: 1,
                    pv: vec![choice.mv],
                };
                say(
                    &self.out,
                    &format_event(&Event::Info { id, info }, chess960),
                );
            }
            let best = BestMove {
                mv: Some(choice.mv),
                ponder: None,
            };
            say(
                &self.out,
                &format_event(&Event::BestMove { id, best }, chess960),
            );
            return;
        }
        self.engine.go(GoRequest {
            position: self.position.clone(),
            history: self.history.clone(),
            limits,
            ponder,
            // The clock runs from the `go` line, even if the engine thread
            // is still busy (loading a table) when it arrives.
            clock_start: Some(std::time::Instant::now()),
        });
    }

    fn setoption(&mut self, args: &[&str]) {
        // setoption name <words...> [value <words...>]
        if args.first() != Some(&"name") {
            self.error("expected: setoption name <name> [value <value>]");
            return;
        }
        let value_at = args.iter().position(|&t| t == "value");
        let name = args[1..value_at.unwrap_or(args.len())]
            .join(" ")
            .to_lowercase();
        let value = value_at.map(|i| args[i + 1..].join(" "));
        let boolean = |v: &Option<String>| match v.as_deref().map(str::trim) {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        match name.as_str() {
            "hash" => match HASH.parse(value.as_deref()) {
                Ok(mb) => self.engine.set_hash(mb as usize),
                Err(e) => self.error(&e),
            },
            "threads" => match THREADS.parse(value.as_deref()) {
                Ok(n) => self.engine.set_threads(n as usize),
                Err(e) => self.error(&e),
            },
            "multipv" => match MULTIPV.parse(value.as_deref()) {
                Ok(n) => self.engine.set_multipv(n as usize),
                Err(e) => self.error(&e),
            },
            "move overhead" => match MOVE_OVERHEAD.parse(value.as_deref()) {
                Ok(ms) => self.move_overhead = Duration::from_millis(ms),
                Err(e) => self.error(&e),
            },
            "uci_chess960" => match boolean(&value) {
                Some(b) => self.chess960.store(b, Ordering::Relaxed),
                None => self.error("UCI_Chess960: expected true or false"),
            },
            "ponder" => match boolean(&value) {
                Some(b) => self.engine.set_ponder(b),
                None => self.error("Ponder: expected true or false"),
            },
            "timemanager" => match value.as_deref().and_then(TimeManager::parse) {
                Some(m) => self.engine.set_time_manager(m),
                None => self.error("TimeManager: expected adaptive or fixed"),
            },
            "clear hash" => self.engine.clear_hash(),
            "evalfile" => self.set_eval_file(value.as_deref().unwrap_or("")),
            "hashfile" => {
                self.hash_file = value
                    .as_deref()
                    .map(str::trim)
                    .filter(|v| !v.is_empty() && *v != "<empty>")
                    .map(std::path::PathBuf::from);
            }
            "save hash" | "load hash" => self.hash_file_io(name == "save hash"),
            "ownbook" => match boolean(&value) {
                Some(b) => {
                    self.book.own_book = b;
                    self.load_books();
                }
                None => self.error("OwnBook: expected true or false"),
            },
            "bookfile" => {
                self.book.files = value.unwrap_or_default().trim().to_owned();
                self.load_books();
            }
            "bookdepth" => match BOOK_DEPTH.parse(value.as_deref()) {
                Ok(n) => {
                    self.book.depth = n as u32;
                    self.load_books();
                }
                Err(e) => self.error(&e),
            },
            "bookselection" => match value.as_deref().map(str::trim).and_then(Selection::parse) {
                Some(sel) => {
                    self.book.selection = sel;
                    self.load_books();
                }
                None => self.error("BookSelection: expected weighted, best or uniform"),
            },
            "syzygypath" => self.set_syzygy_path(value.unwrap_or_default().trim()),
            _ => match name
                .strip_prefix("tune_")
                .filter(|_| cfg!(feature = "tune"))
                .and_then(tune::find)
            {
                Some(t) => {
                    let v = value.as_deref().and_then(|s| s.trim().parse::<i32>().ok());
                    if !v.is_some_and(|v| t.set(v)) {
                        self.error(&format!("tune_{}: expected {}..{}", t.name, t.min, t.max));
                    }
                }
                None => self.error(&format!("unknown option {name:?}")),
            },
        }
    }

    /// `EvalFile`: a net file, `<embedded>` or `classical`; a file that
    /// cannot be loaded leaves the evaluation as it was.
    fn set_eval_file(&mut self, value: &str) {
        match nnue::load_eval_file(value) {
            Ok(net) => {
                let what = match &net {
                    Some(n) => format!("nnue net {:016x}", n.checksum),
                    None => nnue::CLASSICAL.to_string(),
                };
                self.engine.set_net(net.clone());
                self.net = net;
                say(&self.out, &format!("info string evaluation: {what}"));
            }
            Err(e) => self.error(&format!("{e}; evaluation unchanged")),
        }
    }

    /// `Save Hash` / `Load Hash`: the table to or from `HashFile`, after
    /// the current search; the answer is an info string.
    fn hash_file_io(&mut self, save: bool) {
        let Some(path) = self.hash_file.clone() else {
            self.error("set HashFile first");
            return;
        };
        let reply = if save {
            self.engine.save_hash(path.clone())
        } else {
            self.engine.load_hash(path.clone())
        };
        // The answer comes after the current search, if any: wait
        // for it off the input loop.
        let out = self.out.clone();
        std::thread::spawn(move || {
            let line = match reply.blocking_recv() {
                Ok(Ok(info)) => format!(
                    "info string hash {} {}: {} MiB, {} entries",
                    if save { "saved to" } else { "loaded from" },
                    path.display(),
                    info.bytes >> 20,
                    info.used
                ),
                Ok(Err(e)) => format!("info string error: {e}; table unchanged"),
                Err(_) => "info string error: engine stopped".to_string(),
            };
            say(&out, &line);
        });
    }

    /// `SyzygyPath`: the tablebases in `dirs` (empty: none), for the
    /// search and the move sources.
    fn set_syzygy_path(&mut self, dirs: &str) {
        let tables = if dirs.is_empty() || dirs == "<empty>" {
            None
        } else {
            match Tablebases::open(dirs) {
                Ok(t) => {
                    say(
                        &self.out,
                        &format!(
                            "info string tablebases: {} files, up to {} pieces",
                            t.files(),
                            t.max_pieces()
                        ),
                    );
                    Some(Arc::new(t))
                }
                Err(e) => {
                    self.error(&format!("{e}; no tablebases"));
                    None
                }
            }
        };
        self.engine.set_tablebases(tables.clone());
        self.sources.tablebases = tables;
    }

    /// Opens the books of `BookFile` if `OwnBook` is on (a file that
    /// cannot be read is reported, and there is then no book).
    fn load_books(&mut self) {
        self.sources.books = Vec::new();
        if !self.book.own_book {
            return;
        }
        let mut books = Vec::new();
        for file in self.book.files.split(':').filter(|f| !f.trim().is_empty()) {
            match Book::open(std::path::Path::new(file.trim())) {
                Ok(b) => books.push(b),
                Err(e) => {
                    self.error(&format!("{e}; no book"));
                    return;
                }
            }
        }
        if books.is_empty() {
            self.error("OwnBook: BookFile names no file; no book");
            return;
        }
        say(
            &self.out,
            &format!(
                "info string book: {} entries",
                books.iter().map(Book::len).sum::<usize>()
            ),
        );
        self.sources.books = books
            .into_iter()
            .map(|book| PlayedBook {
                book,
                selection: self.book.selection,
                max_plies: 2 * self.book.depth,
                min_weight: 0,
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spin_defaults_are_the_engines_and_their_ranges_are_checked() {
        let engine = EngineOptions::default();
        assert_eq!(HASH.default as usize, engine.hash_mb);
        assert_eq!(THREADS.default as usize, engine.threads);
        assert_eq!(MULTIPV.default as usize, engine.multipv);
        assert_eq!(
            HASH.line(),
            "option name Hash type spin default 16 min 1 max 65536"
        );
        assert_eq!(MOVE_OVERHEAD.parse(Some(" 0 ")), Ok(0));
        assert_eq!(
            MOVE_OVERHEAD.parse(Some("5001")),
            Err("Move Overhead: expected 0..5000 (ms)".to_owned())
        );
        assert!(THREADS.parse(Some("0")).is_err());
        assert!(BOOK_DEPTH.parse(None).is_err());
    }
}
