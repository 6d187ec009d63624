//! Training data by self-play: `kaissa datagen`.
//!
//! Each worker thread plays its own games, one at a time: a random
//! opening (a line of the book, if given, then 8-9 random legal plies),
//! then moves searched to a soft node limit (whole iterations, about
//! 5,000 nodes), until mate, a draw by the rules, or adjudication. Every
//! game is stored whole in a chunk ([`super::chunk`]): its start, every move
//! and the score of every searched position; `kaissa train` chooses the
//! positions to learn from when it loads them.
//!
//! Worker k of n plays games numbered k, k + n, k + 2n..., game g from a
//! generator seeded by (seed, g), so a run is reproducible for a given
//! binary and seed. It writes `DIR/s{seed}-w{k}-c{i}.part`, flushed after
//! each game, and seals it into an immutable `.kgc` chunk every
//! `chunk_minutes` (and at the end), then starts chunk i + 1. A run that
//! is stopped loses at most the game it was playing: the next run (or
//! `kaissa chunk seal`) seals the `.part` files it left, and goes on with
//! a new seed. A run holds the lock of each `.part` file it writes, so
//! runs sharing a directory never seal each other's.

use super::chunk::{self, ChunkWriter, Filter, Game, Header};
use super::packed::GameResult;
use crate::chess::{Color, Outcome, Position};
use crate::engine::Limits;
use crate::engine::nnue::{self, Network};
use crate::engine::search::{Searcher, search_blocking};
use crate::engine::tt::TranspositionTable;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Settings of a data generation run.
#[derive(Clone, Debug)]
pub struct DatagenConfig {
    /// Games per worker (games already in its file count).
    pub games: u64,
    /// Soft node limit per move; the hard limit is ten times that.
    pub nodes: u64,
    /// Random plies after the opening: at least `.0`, at most `.1`.
    pub random_plies: (usize, usize),
    pub seed: u64,
    pub threads: usize,
    /// Transposition table per worker, MiB.
    pub hash_mb: usize,
    /// The evaluation of the players (`None`: hand-crafted).
    pub net: Option<Arc<Network>>,
    /// A chunk is sealed after this long (and at the end of the run).
    pub chunk_time: Duration,
}

impl Default for DatagenConfig {
    fn default() -> Self {
        DatagenConfig {
            games: 1_000_000,
            nodes: 5_000,
            random_plies: (8, 9),
            seed: 1,
            threads: 1,
            hash_mb: 16,
            net: Some(nnue::embedded()),
            chunk_time: Duration::from_secs(40 * 60),
        }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Games played by this run (not counting resumed files' old games).
    pub games: u64,
    /// Positions written by this run that `kaissa train` keeps by default.
    pub positions: u64,
    /// Chunks sealed by this run.
    pub chunks: u64,
    /// Bytes of the games written by this run.
    pub bytes: u64,
    pub elapsed: Duration,
    pub threads: usize,
}

impl Report {
    /// Positions per core-hour of this run.
    pub fn per_core_hour(&self) -> f64 {
        let core_hours = self.elapsed.as_secs_f64() * self.threads as f64 / 3600.0;
        self.positions as f64 / core_hours.max(1e-9)
    }
}

/// Adjudication: a side this far ahead for `WIN_PLIES` plies in a row
/// has won; a score this close to zero for `DRAW_PLIES` plies after
/// `DRAW_FROM_PLY` is a draw; a game this long is a draw.
const WIN_CP: i32 = 1_500;
const WIN_PLIES: u32 = 6;
const DRAW_CP: i32 = 8;
const DRAW_PLIES: u32 = 12;
const DRAW_FROM_PLY: usize = 80;
const MAX_PLIES: usize = 400;
/// An opening scored beyond this after the random plies is discarded.
const OPENING_MAX_CP: i32 = 1_000;

/// Searcher and table of one worker, reused from game to game.
pub struct Player {
    searcher: Searcher,
    tt: TranspositionTable,
    limits: Limits,
}

impl Player {
    pub fn new(nodes: u64, hash_mb: usize) -> Player {
        Player {
            searcher: Searcher::new(),
            tt: TranspositionTable::new(hash_mb.max(1)),
            limits: Limits {
                soft_nodes: Some(nodes.max(1)),
                nodes: Some(nodes.max(1).saturating_mul(10)),
                ..Limits::default()
            },
        }
    }

    /// Plays game number `game` from a random opening; `None` when the
    /// opening was unusable (the game ended in it, or a side was too far
    /// ahead after it).
    pub fn play(
        &mut self,
        openings: &[Position],
        random_plies: (usize, usize),
        seed: u64,
        game: u32,
    ) -> Option<Game> {
        let (mut record, mut history) = opening(openings, random_plies, seed, game)?;
        let mut pos = record.positions().pop().expect("a game has a position");
        self.tt.clear();
        self.searcher.clear();
        let (mut win_streak, mut draw_streak) = (0, 0);
        let opening_plies = record.moves.len();
        record.result = loop {
            if let Some(outcome) = pos.outcome(&history) {
                break match outcome {
                    Outcome::Checkmate { winner } => win_for(winner),
                    _ => GameResult::Draw,
                };
            }
            if history.len() >= MAX_PLIES {
                break GameResult::Draw;
            }
            self.tt.new_search();
            let r = search_blocking(&mut self.searcher, &self.tt, &pos, &history, &self.limits);
            let best = r.best?;
            let white = if pos.turn() == Color::White {
                r.value
            } else {
                -r.value
            };
            if record.moves.len() == opening_plies && white.abs() > OPENING_MAX_CP {
                return None;
            }
            if white.abs() >= WIN_CP {
                win_streak += 1;
                if win_streak >= WIN_PLIES {
                    break win_for(if white > 0 {
                        Color::White
                    } else {
                        Color::Black
                    });
                }
            } else {
                win_streak = 0;
            }
            if history.len() >= DRAW_FROM_PLY && white.abs() <= DRAW_CP {
                draw_streak += 1;
                if draw_streak >= DRAW_PLIES {
                    break GameResult::Draw;
                }
            } else {
                draw_streak = 0;
            }
            record.push(best, Some(white));
            history.push(pos.key());
            pos = pos.play(best);
        };
        Some(record)
    }
}

fn win_for(c: Color) -> GameResult {
    match c {
        Color::White => GameResult::WhiteWon,
        Color::Black => GameResult::BlackWon,
    }
}

/// The opening of game number `game` of a run seeded `seed`: a book line
/// (or the start position) and then random legal plies, unscored, with
/// the keys of the positions before the last; `None` if the game ended
/// during them.
pub fn opening(
    openings: &[Position],
    (min, max): (usize, usize),
    seed: u64,
    game: u32,
) -> Option<(Game, Vec<u64>)> {
    let mut rng = fastrand::Rng::with_seed(seed ^ (u64::from(game) << 20) ^ 0xDA7A);
    let mut pos = if openings.is_empty() {
        Position::startpos()
    } else {
        openings[rng.usize(..openings.len())].clone()
    };
    let mut record = Game::new(pos.clone());
    let plies = min + rng.usize(..max.saturating_sub(min) + 1);
    let mut history = Vec::new();
    for _ in 0..plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            return None;
        }
        let m = moves.as_slice()[rng.usize(..moves.len())];
        record.push(m, None);
        history.push(pos.key());
        pos = pos.play(m);
    }
    (!pos.legal_moves().is_empty()).then_some((record, history))
}

/// A seed for a run that names none: the clock and the process.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    fastrand::Rng::with_seed(nanos ^ u64::from(std::process::id()) << 40).u64(..) >> 16
}

/// What `seal_leftovers` did.
#[derive(Debug, Default)]
pub struct Leftovers {
    /// The chunks sealed, with their games.
    pub sealed: Vec<(PathBuf, u64)>,
    /// `.part` files left alone: a running datagen is writing them.
    pub in_use: Vec<PathBuf>,
}

/// Seals the `.part` chunks stopped runs left in `dir`, and leaves alone
/// those a running datagen is writing.
pub fn seal_leftovers(dir: &Path) -> Result<Leftovers, chunk::ChunkError> {
    let mut out = Leftovers::default();
    for part in chunk::parts_in(dir)? {
        match chunk::seal_part(&part) {
            Ok(sealed) => out.sealed.push(sealed),
            Err(chunk::ChunkError::InUse) => out.in_use.push(part),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Runs `cfg.threads` workers writing chunks into `dir` until each has
/// played `cfg.games` games; `progress` gets (games, positions) of this
/// run about every `report_every` games. `.part` files left in `dir` by a
/// stopped run are sealed first (not those another running datagen
/// writes: several runs may share a directory).
pub fn run(
    dir: &Path,
    openings: &[Position],
    cfg: &DatagenConfig,
    report_every: u64,
    progress: &(dyn Fn(u64, u64, Duration) + Sync),
) -> io::Result<Report> {
    std::fs::create_dir_all(dir)?;
    seal_leftovers(dir).map_err(io::Error::other)?;
    let n = cfg.threads.max(1);
    let start = Instant::now();
    let (games, positions) = (AtomicU64::new(0), AtomicU64::new(0));
    let (chunks, bytes) = (AtomicU64::new(0), AtomicU64::new(0));
    let header = Header {
        commit: chunk::BUILD_COMMIT.to_owned(),
        net: cfg.net.as_ref().map_or(0, |n| n.checksum),
        nodes: cfg.nodes,
        seed: cfg.seed,
        stride: n as u32,
        ..Header::default()
    };
    let end = cfg.games.min(u64::from(u32::MAX) / n as u64);
    std::thread::scope(|scope| -> io::Result<()> {
        let mut handles = Vec::new();
        for k in 0..n {
            let counters = (&games, &positions, &chunks, &bytes);
            let header = header.clone();
            handles.push(scope.spawn(move || -> io::Result<()> {
                let (games, positions, chunks, bytes) = counters;
                let mut player = Player::new(cfg.nodes, cfg.hash_mb);
                player.searcher.set_net(cfg.net.clone());
                let mut i = 0;
                for index in 0.. {
                    if i >= end {
                        break;
                    }
                    let name = format!("s{}-w{k}-c{index:03}", cfg.seed);
                    let first_game = k as u64 + i * n as u64;
                    let mut writer = ChunkWriter::create(
                        dir,
                        &name,
                        Header {
                            first_game,
                            ..header.clone()
                        },
                    )?;
                    let opened = Instant::now();
                    // At least one game a chunk, however short its time.
                    loop {
                        let game = (k as u64 + i * n as u64) as u32;
                        i += 1;
                        if let Some(record) =
                            player.play(openings, cfg.random_plies, cfg.seed, game)
                        {
                            writer.append(&record)?;
                            let kept = Filter::default().records(&record, 0).len() as u64;
                            positions.fetch_add(kept, Ordering::Relaxed);
                            let g = games.fetch_add(1, Ordering::Relaxed) + 1;
                            if g % report_every.max(1) == 0 {
                                progress(g, positions.load(Ordering::Relaxed), start.elapsed());
                            }
                        }
                        if i >= end || opened.elapsed() >= cfg.chunk_time {
                            break;
                        }
                    }
                    let sealed = writer.seal()?;
                    bytes.fetch_add(std::fs::metadata(&sealed)?.len(), Ordering::Relaxed);
                    chunks.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }));
        }
        for h in handles {
            h.join()
                .map_err(|_| io::Error::other("datagen worker panicked"))??;
        }
        Ok(())
    })?;
    Ok(Report {
        games: games.load(Ordering::Relaxed),
        positions: positions.load(Ordering::Relaxed),
        chunks: chunks.load(Ordering::Relaxed),
        bytes: bytes.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
        threads: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> DatagenConfig {
        DatagenConfig {
            games: 2,
            nodes: 300,
            random_plies: (8, 9),
            seed: 7,
            threads: 2,
            hash_mb: 1,
            net: None,
            chunk_time: Duration::from_secs(3600),
        }
    }

    #[test]
    fn writes_whole_games_in_one_chunk_a_worker() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(dir.path(), &[], &small(), 1, &|_, _, _| {}).unwrap();
        assert_eq!(report.chunks, 2);
        let files = chunk::chunks_in(dir.path()).unwrap();
        let names: Vec<_> = files.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["s7-w0-c000.kgc", "s7-w1-c000.kgc"]);
        let (mut games, mut kept) = (0, 0);
        for (k, path) in files.iter().enumerate() {
            let c = chunk::read_file(path).unwrap();
            assert_eq!(
                (c.header.seed, c.header.first_game, c.header.stride),
                (7, k as u64, 2)
            );
            assert_eq!(c.header.commit, chunk::BUILD_COMMIT);
            for g in &c.games {
                assert_eq!(g.start, Position::startpos());
                // The random plies are unscored, every searched ply scored.
                let unscored = g.scores.iter().take_while(|s| s.is_none()).count();
                assert!((8..=9).contains(&unscored), "{unscored}");
                assert!(
                    g.scores[unscored..g.moves.len()]
                        .iter()
                        .all(Option::is_some)
                );
                assert!(g.moves.len() <= MAX_PLIES);
            }
            games += c.games.len() as u64;
            kept += c.positions(&Filter::default());
        }
        assert_eq!((games, kept), (report.games, report.positions));
        assert!(kept > 20, "{kept}");
    }

    #[test]
    fn a_run_is_reproducible_and_a_stopped_one_loses_nothing_whole() {
        let cfg = DatagenConfig {
            threads: 1,
            games: 3,
            ..small()
        };
        let a = tempfile::tempdir().unwrap();
        run(a.path(), &[], &cfg, 1, &|_, _, _| {}).unwrap();
        let b = tempfile::tempdir().unwrap();
        run(b.path(), &[], &cfg, 1, &|_, _, _| {}).unwrap();
        let whole = std::fs::read(a.path().join("s7-w0-c000.kgc")).unwrap();
        assert_eq!(
            whole,
            std::fs::read(b.path().join("s7-w0-c000.kgc")).unwrap()
        );

        // A run stopped in its third game: its part has two whole games
        // and a cut one. The next run seals it and starts a new chunk.
        let games = chunk::read(&whole).unwrap().games;
        let mut bytes = Vec::new();
        chunk::encode_game(&games[0], &mut bytes);
        chunk::encode_game(&games[1], &mut bytes);
        let two = bytes.len();
        chunk::encode_game(&games[2], &mut bytes);
        let cut = tempfile::tempdir().unwrap();
        let mut w = ChunkWriter::create(cut.path(), "s7-w0-c000", Header::default()).unwrap();
        w.append(&games[0]).unwrap();
        drop(w);
        let path = cut.path().join("s7-w0-c000.part");
        let mut raw = std::fs::read(&path).unwrap();
        raw.truncate(chunk::HEADER_BYTES);
        raw.extend_from_slice(&bytes[..two + 5]);
        std::fs::write(&path, &raw).unwrap();
        assert!(whole.len() > raw.len());

        let again = DatagenConfig {
            seed: 8,
            games: 1,
            ..cfg.clone()
        };
        let report = run(cut.path(), &[], &again, 1, &|_, _, _| {}).unwrap();
        assert_eq!(report.chunks, 1);
        let sealed = chunk::read_file(&cut.path().join("s7-w0-c000.kgc")).unwrap();
        assert_eq!(sealed.games, games[..2]);
        assert!(cut.path().join("s8-w0-c000.kgc").exists());
        assert!(chunk::parts_in(cut.path()).unwrap().is_empty());
    }

    #[test]
    fn a_chunk_is_sealed_when_its_time_is_up() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = DatagenConfig {
            threads: 1,
            games: 2,
            chunk_time: Duration::ZERO,
            ..small()
        };
        let report = run(dir.path(), &[], &cfg, 1, &|_, _, _| {}).unwrap();
        // With no time a chunk still takes one game.
        let files = chunk::chunks_in(dir.path()).unwrap();
        assert_eq!(report.chunks as usize, files.len());
        assert!(files.len() >= 2, "{files:?}");
    }
}
