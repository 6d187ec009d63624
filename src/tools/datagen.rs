//! Training data by self-play: `kaissa datagen`.
//!
//! Each worker thread plays its own games, one at a time: a random
//! opening (a line of the book, if given, then 8-9 random legal plies),
//! then moves searched to a soft node limit (whole iterations, about
//! 5,000 nodes), until mate, a draw by the rules, or adjudication. Every
//! quiet position is written as a 32-byte [`PackedBoard`] with the search
//! score and the game's result. Not written: positions in check, whose
//! best move is a capture or promotion (the evaluation would be taken
//! mid-exchange) or whose score is a mate.
//!
//! Worker k of n writes `DIR/s{seed}-w{k}of{n}.bin`; its games are
//! numbered k, k + n, k + 2n... and game g is played from a generator
//! seeded by (seed, g), so a run is reproducible for a given binary. A
//! run stopped at any point resumes where it stopped: the last game of
//! each file (maybe cut short) is dropped and played again, and the
//! worker goes on from there. Resume with the same seed and thread count.

use super::packed::{GameResult, PackedBoard, RECORD_BYTES};
use crate::chess::{Color, Outcome, Position};
use crate::engine::Limits;
use crate::engine::movepick::is_noisy;
use crate::engine::nnue::{self, Network};
use crate::engine::score::{MATE_BOUND, is_mate};
use crate::engine::search::{Searcher, search_blocking};
use crate::engine::tt::TranspositionTable;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
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
        }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// Games played by this run (not counting resumed files' old games).
    pub games: u64,
    /// Positions written by this run.
    pub positions: u64,
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

/// A small deterministic PRNG (xorshift64*), good enough for openings.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that nearby seeds differ everywhere.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
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

    /// Plays game number `game` from a random opening and returns its
    /// quiet positions, or nothing when the opening was unusable.
    pub fn play(
        &mut self,
        openings: &[Position],
        random_plies: (usize, usize),
        seed: u64,
        game: u32,
    ) -> Vec<PackedBoard> {
        let mut rng = Rng::new(seed ^ (u64::from(game) << 20) ^ 0xDA7A);
        let Some((mut pos, mut history)) = random_opening(openings, random_plies, &mut rng) else {
            return Vec::new();
        };
        self.tt.clear();
        self.searcher.clear();
        let mut kept: Vec<(Position, i16)> = Vec::new();
        let (mut win_streak, mut draw_streak) = (0, 0);
        let result = loop {
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
            let Some(best) = r.best else {
                return Vec::new();
            };
            let white = if pos.turn() == Color::White {
                r.value
            } else {
                -r.value
            };
            if kept.is_empty() && win_streak == 0 && white.abs() > OPENING_MAX_CP {
                return Vec::new();
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
            let quiet = !pos.in_check()
                && !is_noisy(&pos, best)
                && !best.is_promotion()
                && !is_mate(r.value)
                && r.value.abs() < MATE_BOUND;
            if quiet {
                kept.push((pos.clone(), white.clamp(-32_000, 32_000) as i16));
            }
            history.push(pos.key());
            pos = pos.play(best);
        };
        kept.iter()
            .map(|(p, s)| PackedBoard::from_position(p, *s, result, game))
            .collect()
    }
}

fn win_for(c: Color) -> GameResult {
    match c {
        Color::White => GameResult::WhiteWon,
        Color::Black => GameResult::BlackWon,
    }
}

/// A book line (or the start position) followed by random legal plies;
/// `None` if the game ended during them.
fn random_opening(
    openings: &[Position],
    (min, max): (usize, usize),
    rng: &mut Rng,
) -> Option<(Position, Vec<u64>)> {
    let mut pos = if openings.is_empty() {
        Position::startpos()
    } else {
        openings[rng.below(openings.len())].clone()
    };
    let plies = min + rng.below(max.saturating_sub(min) + 1);
    let mut history = Vec::new();
    for _ in 0..plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            return None;
        }
        history.push(pos.key());
        pos = pos.play(moves[rng.below(moves.len())]);
    }
    (!pos.legal_moves().is_empty()).then_some((pos, history))
}

/// The file of worker `k` of `n`.
pub fn worker_path(dir: &Path, seed: u64, k: usize, n: usize) -> PathBuf {
    dir.join(format!("s{seed}-w{k}of{n}.bin"))
}

/// Opens a worker's file for appending after dropping its last game
/// (which may have been cut short); returns the file and the number of
/// the next game to play.
fn open_resumable(path: &Path, first_game: u64, stride: u64) -> io::Result<(File, u64)> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let len = f.metadata()?.len();
    let mut end = len - len % RECORD_BYTES as u64;
    let mut next = first_game;
    if end > 0 {
        // The last record's game, then back to that game's first record.
        let mut rec = [0u8; RECORD_BYTES];
        f.seek(SeekFrom::Start(end - RECORD_BYTES as u64))?;
        f.read_exact(&mut rec)?;
        let last = u32::from_le_bytes(rec[28..32].try_into().expect("4 bytes"));
        while end > 0 {
            f.seek(SeekFrom::Start(end - RECORD_BYTES as u64))?;
            f.read_exact(&mut rec)?;
            if u32::from_le_bytes(rec[28..32].try_into().expect("4 bytes")) != last {
                break;
            }
            end -= RECORD_BYTES as u64;
        }
        if u64::from(last) % stride != first_game % stride {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: game {last} does not belong to this worker (another --threads?)",
                    path.display()
                ),
            ));
        }
        next = u64::from(last);
    }
    f.set_len(end)?;
    f.seek(SeekFrom::Start(end))?;
    Ok((f, next))
}

/// Runs `cfg.threads` workers writing into `dir` until each has played
/// `cfg.games` games; `progress` gets (games, positions) of this run
/// about every `report_every` games.
pub fn run(
    dir: &Path,
    openings: &[Position],
    cfg: &DatagenConfig,
    report_every: u64,
    progress: &(dyn Fn(u64, u64, Duration) + Sync),
) -> io::Result<Report> {
    std::fs::create_dir_all(dir)?;
    let n = cfg.threads.max(1);
    let start = Instant::now();
    let games = AtomicU64::new(0);
    let positions = AtomicU64::new(0);
    std::thread::scope(|scope| -> io::Result<()> {
        let mut handles = Vec::new();
        for k in 0..n {
            let path = worker_path(dir, cfg.seed, k, n);
            let (games, positions) = (&games, &positions);
            handles.push(scope.spawn(move || -> io::Result<()> {
                let (file, mut game) = open_resumable(&path, k as u64, n as u64)?;
                let mut out = BufWriter::new(file);
                let mut player = Player::new(cfg.nodes, cfg.hash_mb);
                player.searcher.set_net(cfg.net.clone());
                let end = (cfg.games.saturating_mul(n as u64)).min(u64::from(u32::MAX));
                while game < end {
                    let recs = player.play(openings, cfg.random_plies, cfg.seed, game as u32);
                    for r in &recs {
                        out.write_all(&r.to_bytes())?;
                    }
                    out.flush()?;
                    positions.fetch_add(recs.len() as u64, Ordering::Relaxed);
                    let g = games.fetch_add(1, Ordering::Relaxed) + 1;
                    if g % report_every.max(1) == 0 {
                        progress(g, positions.load(Ordering::Relaxed), start.elapsed());
                    }
                    game += n as u64;
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
        elapsed: start.elapsed(),
        threads: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::packed::read_records;

    fn small() -> DatagenConfig {
        DatagenConfig {
            games: 2,
            nodes: 300,
            random_plies: (8, 9),
            seed: 7,
            threads: 2,
            hash_mb: 1,
            net: None,
        }
    }

    #[test]
    fn writes_quiet_labelled_positions_by_game() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(dir.path(), &[], &small(), 1, &|_, _, _| {}).unwrap();
        assert_eq!(report.games, 4);
        let mut total = 0;
        for k in 0..2 {
            let bytes = std::fs::read(worker_path(dir.path(), 7, k, 2)).unwrap();
            assert_eq!(bytes.len() % RECORD_BYTES, 0);
            let (recs, bad) = read_records(&bytes);
            assert_eq!(bad, 0);
            total += recs.len();
            for r in &recs {
                assert_eq!(r.game as usize % 2, k);
                let pos = r.to_position().expect("a legal position");
                assert!(!pos.in_check(), "{r:?}");
                assert!(i32::from(r.score).abs() < MATE_BOUND);
            }
            // Games are contiguous and ascending, one result per game.
            for w in recs.windows(2) {
                assert!(w[0].game <= w[1].game);
                if w[0].game == w[1].game {
                    assert_eq!(w[0].result, w[1].result);
                }
            }
        }
        assert_eq!(total as u64, report.positions);
        assert!(total > 20, "{total}");
    }

    #[test]
    fn a_cut_run_resumes_to_the_same_data() {
        let whole = tempfile::tempdir().unwrap();
        let cfg = DatagenConfig {
            threads: 1,
            games: 3,
            ..small()
        };
        run(whole.path(), &[], &cfg, 1, &|_, _, _| {}).unwrap();
        let expected = std::fs::read(worker_path(whole.path(), 7, 0, 1)).unwrap();

        // Two games, then the file cut in the middle of the second game.
        let cut = tempfile::tempdir().unwrap();
        let two = DatagenConfig {
            games: 2,
            ..cfg.clone()
        };
        run(cut.path(), &[], &two, 1, &|_, _, _| {}).unwrap();
        let path = worker_path(cut.path(), 7, 0, 1);
        let bytes = std::fs::read(&path).unwrap();
        let (recs, _) = read_records(&bytes);
        let first_of_last = recs
            .iter()
            .position(|r| r.game == recs.last().unwrap().game)
            .unwrap();
        let keep = (first_of_last + 1) * RECORD_BYTES + 7;
        std::fs::write(&path, &bytes[..keep]).unwrap();

        let resumed = run(cut.path(), &[], &cfg, 1, &|_, _, _| {}).unwrap();
        assert_eq!(
            resumed.games, 2,
            "the cut game is played again, then one more"
        );
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_file_of_another_worker_is_refused_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        let rec = PackedBoard::from_position(&Position::startpos(), 0, GameResult::Draw, 4);
        std::fs::write(&path, rec.to_bytes()).unwrap();
        // Game 4 belongs to worker 0 of 2, not worker 1.
        let err = open_resumable(&path, 1, 2).unwrap_err();
        assert!(err.to_string().contains("another --threads"), "{err}");
        let (_, next) = open_resumable(&path, 0, 2).unwrap();
        assert_eq!(next, 4);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
