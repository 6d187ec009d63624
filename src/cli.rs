//! The command line's definitions (clap): the subcommands and their
//! flags, and how the flags of each tool become its settings. `main.rs`
//! parses them and dispatches.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::engine::nnue::{NetworkLoadError, load_eval_file};
use crate::engine::timeman::TimeManager;
use crate::tools::clocktest::{self, ClockTestConfig};
use crate::tools::{datagen, train, tune};

#[derive(Parser)]
#[command(
    name = "kaissa",
    version,
    about = "A Lichess bot with its own chess engine"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Count the leaf nodes of the legal move tree (move generator check
    /// and speed test).
    Perft {
        /// Depth in plies.
        depth: u32,
        /// Position to start from (default: the start position).
        #[arg(long)]
        fen: Option<String>,
        /// Print the count below each root move.
        #[arg(long)]
        divide: bool,
        /// Write castling moves king-takes-rook (Chess960 style).
        #[arg(long)]
        chess960: bool,
    },
    /// Speak UCI on stdin/stdout (for chess GUIs and engine matches).
    Uci,
    /// Search a fixed set of positions to a fixed depth and print the
    /// total node count (the search signature) and speed.
    Bench {
        /// Depth in plies.
        depth: Option<u32>,
        /// Evaluation: `<embedded>` (the default net), `classical` (the
        /// hand-crafted evaluation) or the path of a net file.
        #[arg(long, default_value = crate::engine::nnue::EMBEDDED)]
        eval_file: String,
        /// Syzygy table directories (separated by `:`) probed by the
        /// search; the signature is taken without.
        #[arg(long)]
        syzygy: Option<String>,
        /// Only the endgame positions (at most 7 pieces).
        #[arg(long)]
        endgames: bool,
    },
    /// Play complete engine-against-engine games on clocks kept by the
    /// harness, with simulated lag; report time losses and clock use.
    Clocktest(ClocktestArgs),
    /// Generate training data by self-play: whole games in chunk files,
    /// one sealed every --chunk-minutes; a stopped run's last chunk is
    /// sealed by the next run.
    Datagen(DatagenArgs),
    /// Training-data chunks: inspect, seal, convert 32-byte records, and
    /// keep a directory's manifest.
    #[command(subcommand)]
    Chunk(ChunkCommand),
    /// Texel-tune the evaluation weights on labelled positions and write
    /// them as Rust source.
    Tune(TuneArgs),
    /// Train the NNUE on datagen records and write the quantized net
    /// (and a checkpoint) after every epoch.
    Train(TrainArgs),
    /// Check the configuration, the token and the Lichess account, then
    /// exit (non-zero when something is wrong).
    Check {
        /// Configuration file (TOML); default: built-in defaults and the
        /// `KAISSA_*` environment.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Turn the Lichess account into a BOT account. This cannot be undone,
    /// and Lichess allows it only for an account that never played a
    /// game: pass --yes-i-understand to confirm.
    Upgrade {
        /// Configuration file (TOML); default: built-in defaults and the
        /// `KAISSA_*` environment.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Confirm: the account becomes a BOT account for good.
        #[arg(long)]
        yes_i_understand: bool,
    },
    /// Talk to the running daemon through its control socket (the
    /// commands below).
    Ctl {
        /// The socket (default: /run/kaissa/control.sock, the service's;
        /// /run/kaissa/NAME/control.sock for the instance NAME of
        /// kaissa@.service).
        #[arg(long, default_value = "/run/kaissa/control.sock", global = true)]
        socket: PathBuf,
        #[command(subcommand)]
        command: crate::bot::control::CtlCommand,
    },
    /// Run the bot daemon: answer challenges until SIGTERM or Ctrl-C.
    Run {
        /// Configuration file (TOML); default: built-in defaults and the
        /// `KAISSA_*` environment.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

// The flags of `kaissa clocktest` (the variant's doc comment is its help;
// these structs have plain comments so that clap does not take theirs).
#[derive(Args)]
pub struct ClocktestArgs {
    /// Time controls, minutes+seconds (e.g. 1+0 0+1 3+2 10+5).
    #[arg(required = true)]
    pub controls: Vec<String>,
    /// Games per time control.
    #[arg(long, default_value_t = 10)]
    pub games: usize,
    /// Games played at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Simulated lag per move, milliseconds (uniform in min..=max).
    #[arg(long, default_value_t = 50)]
    pub lag_min: u64,
    #[arg(long, default_value_t = 150)]
    pub lag_max: u64,
    /// Move overhead given to the engines, milliseconds.
    #[arg(long, default_value_t = 150)]
    pub overhead: u64,
    /// Think on the opponent's time.
    #[arg(long)]
    pub ponder: bool,
    /// Hash per engine, MiB.
    #[arg(long, default_value_t = 16)]
    pub hash: usize,
    /// Time manager of one side (White in even games): adaptive|fixed.
    #[arg(long, default_value = "adaptive")]
    pub manager: String,
    /// Time manager of the other side.
    #[arg(long, default_value = "adaptive")]
    pub opponent: String,
    #[arg(long, default_value_t = 6)]
    pub random_plies: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print every game.
    #[arg(long)]
    pub verbose: bool,
}

impl ClocktestArgs {
    /// One configuration per control; bad time managers, lag bounds or
    /// controls are errors.
    pub fn configs(&self) -> anyhow::Result<Vec<ClockTestConfig>> {
        let tm = |s: &str| {
            TimeManager::parse(s)
                .ok_or_else(|| anyhow::anyhow!("time manager {s:?}: expected adaptive or fixed"))
        };
        let (manager, opponent) = (tm(&self.manager)?, tm(&self.opponent)?);
        let (lag_min, lag_max) = (self.lag_min, self.lag_max);
        if lag_min > lag_max {
            anyhow::bail!("--lag-min {lag_min} is above --lag-max {lag_max}");
        }
        let mut configs = Vec::new();
        for c in &self.controls {
            let control = clocktest::TimeControl::parse(c).map_err(anyhow::Error::msg)?;
            configs.push(ClockTestConfig {
                control,
                games: self.games,
                concurrency: self.concurrency,
                lag_min: Duration::from_millis(lag_min),
                lag_max: Duration::from_millis(lag_max),
                overhead: Duration::from_millis(self.overhead),
                ponder: self.ponder,
                hash_mb: self.hash.clamp(1, 65536),
                manager,
                opponent_manager: opponent,
                random_plies: self.random_plies,
                max_plies: 600,
                seed: self.seed,
            });
        }
        Ok(configs)
    }
}

// The flags of `kaissa datagen`.
#[derive(Args)]
pub struct DatagenArgs {
    /// Games per thread.
    #[arg(long, default_value_t = 1_000_000)]
    pub games: u64,
    /// Soft node limit per move (whole iterations; hard limit 10x).
    #[arg(long, default_value_t = 5000)]
    pub nodes: u64,
    /// Random plies after the opening: N or MIN-MAX.
    #[arg(long, default_value = "8-9", value_parser = parse_ply_range)]
    pub random_plies: (usize, usize),
    /// Opening book (EPD/FEN lines); default: the start position.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Output directory (chunks `s<seed>-w<thread>-c<chunk>.kgc`).
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the games; default: a new one each run.
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Transposition table per thread, MiB.
    #[arg(long, default_value_t = 16)]
    pub hash: usize,
    /// Evaluation of the players: `<embedded>` (the default net),
    /// `classical` (hand-crafted) or the path of a net file.
    #[arg(long, default_value = crate::engine::nnue::EMBEDDED)]
    pub eval_file: String,
    /// Seal each thread's chunk after this many minutes (a new one
    /// follows).
    #[arg(long, default_value_t = 40.0)]
    pub chunk_minutes: f64,
}

impl DatagenArgs {
    /// The generator's settings (threads and hash clamped to sane ranges),
    /// with the evaluation loaded.
    pub fn config(&self) -> Result<datagen::DatagenConfig, NetworkLoadError> {
        Ok(datagen::DatagenConfig {
            games: self.games,
            nodes: self.nodes,
            random_plies: self.random_plies,
            seed: self.seed.unwrap_or_else(datagen::fresh_seed),
            threads: self.threads.clamp(1, 256),
            hash_mb: self.hash.clamp(1, 4096),
            net: load_eval_file(&self.eval_file)?,
            chunk_time: Duration::from_secs_f64(self.chunk_minutes.clamp(0.0, 1e6) * 60.0),
        })
    }
}

/// `kaissa chunk ...`
#[derive(Subcommand)]
pub enum ChunkCommand {
    /// Check chunk files and print their headers, sizes and bytes a
    /// position.
    Info {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Seal the `.part` files a stopped `kaissa datagen` left in DIR.
    Seal { dir: PathBuf },
    /// Rebuild the games of a 32-byte record file (old `kaissa datagen`)
    /// into a chunk.
    Convert {
        /// The record file.
        input: PathBuf,
        /// The chunk to write (`NAME.kgc`).
        output: PathBuf,
        /// The datagen run's --seed.
        #[arg(long)]
        seed: u64,
        /// The datagen run's --random-plies.
        #[arg(long, default_value = "8-9", value_parser = parse_ply_range)]
        random_plies: (usize, usize),
        /// The datagen run's --nodes, for the header.
        #[arg(long, default_value_t = 5000)]
        nodes: u64,
        /// The commit that made the records, for the header.
        #[arg(long)]
        commit: String,
        /// The checksum (hex) of the net that played, for the header;
        /// default: the embedded net's.
        #[arg(long)]
        net: Option<String>,
    },
    /// Add DIR's new chunks to its MANIFEST.tsv and mark the ones gone as
    /// removed; with --check, only compare (exit 1 on a difference).
    Manifest {
        dir: PathBuf,
        #[arg(long)]
        check: bool,
    },
}

// The flags of `kaissa train`.
#[derive(Args)]
pub struct TrainArgs {
    /// Chunk files (`*.kgc`), 32-byte record files (`*.bin`), or
    /// directories of them.
    #[arg(required = true)]
    pub data: Vec<PathBuf>,
    /// Learn from chunk positions from this ply on (the start is ply 0).
    #[arg(long, default_value_t = 0)]
    pub min_ply: usize,
    /// Where the net file goes (every epoch); the epoch with the lowest
    /// validation loss also goes to NAME-best.EXT beside it.
    #[arg(long)]
    pub out: PathBuf,
    /// Checkpoint file (f32 weights and optimizer state).
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Continue from the checkpoint instead of starting afresh.
    #[arg(long)]
    pub resume: bool,
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    #[arg(long, default_value_t = 16_384)]
    pub batch: usize,
    /// Peak learning rate (cosine decay to 1%).
    #[arg(long, default_value_t = 0.001)]
    pub lr: f32,
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f32,
    /// Weight of the game result in the target (0: score only).
    #[arg(long, default_value_t = 0.25)]
    pub lambda: f32,
    /// Score scale of the target sigmoid, centipawns, written into the net
    /// as its output scale (default: fitted to the data's results).
    #[arg(long, value_parser = clap::value_parser!(u32).range(50..=2000))]
    pub k: Option<u32>,
    /// Games held out for validation, per mille.
    #[arg(long, default_value_t = 50)]
    pub val_permille: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Mirror each training position left-right half the time (the net
    /// sees no castling rights; doubles small data sets).
    #[arg(long)]
    pub mirror: bool,
    /// Output buckets: 1, or 8 chosen by the number of pieces on the board.
    #[arg(long, default_value_t = 1, value_parser = parse_buckets)]
    pub buckets: usize,
    /// King-mirrored inputs: each side's view of the board is mirrored
    /// left-right while its king stands on files e-h.
    #[arg(long)]
    pub king_mirror: bool,
}

/// `--buckets`: 1 or `OUTPUT_BUCKETS`.
fn parse_buckets(s: &str) -> Result<usize, String> {
    let n = crate::engine::nnue::OUTPUT_BUCKETS;
    match s.parse::<usize>() {
        Ok(b) if b == 1 || b == n => Ok(b),
        _ => Err(format!("expected 1 or {n}")),
    }
}

impl TrainArgs {
    /// The trainer's settings (clamped to sane ranges).
    pub fn config(&self) -> train::TrainConfig {
        train::TrainConfig {
            epochs: self.epochs,
            batch_size: self.batch.max(1),
            lr: self.lr,
            weight_decay: self.weight_decay,
            lambda: self.lambda.clamp(0.0, 1.0),
            k: self.k,
            val_permille: self.val_permille.min(1000),
            seed: self.seed,
            threads: self.threads.clamp(1, 256),
            mirror: self.mirror,
            filter: crate::tools::chunk::Filter {
                min_ply: self.min_ply,
            },
            buckets: self.buckets,
            king_mirror: self.king_mirror,
        }
    }
}

// The flags of `kaissa tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// Training files (`FEN [1.0]` or EPD with `c9 "1-0"`).
    #[arg(required = true)]
    pub data: Vec<PathBuf>,
    /// Adam epochs (full passes).
    #[arg(long, default_value_t = 2000)]
    pub epochs: usize,
    /// Adam step size, in centipawns.
    #[arg(long, default_value_t = 1.0)]
    pub lr: f64,
    /// Use at most this many positions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Where to write the weights (Rust source).
    #[arg(long, default_value = "src/engine/params.rs")]
    pub out: PathBuf,
    /// Extra header lines for the weights file (e.g. how the data
    /// was made).
    #[arg(long)]
    pub note: Vec<String>,
    /// L2 pull towards the starting weights.
    #[arg(long, default_value_t = 0.0)]
    pub l2: f64,
    /// Weight of the game result against the search score in the
    /// target (1 = result only).
    #[arg(long, default_value_t = 1.0)]
    pub lambda: f64,
    /// Hold out every tenth block of 100 lines for validation and
    /// keep the weights that predict it best.
    #[arg(long)]
    pub validate: bool,
    /// Keep the weights of every section whose name starts with this
    /// (e.g. "piece-square") at their current values.
    #[arg(long)]
    pub freeze: Vec<String>,
}

impl TuneArgs {
    /// The optimiser's settings and the rest.
    pub fn config(&self) -> (tune::TuneConfig, tune::TuneOptions) {
        let cfg = tune::TuneConfig {
            epochs: self.epochs,
            lr: self.lr,
            l2: self.l2,
        };
        let opts = tune::TuneOptions {
            lambda: self.lambda,
            validate: self.validate,
            limit: self.limit,
            freeze: self.freeze.clone(),
        };
        (cfg, opts)
    }
}

/// `N` or `MIN-MAX`.
pub fn parse_ply_range(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("expected N or MIN-MAX, got {s:?}");
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (usize, usize) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b || b > 64 {
        return Err(bad());
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    const README: &str = include_str!("../README.md");
    const MAN: &str = include_str!("../debian/kaissa.1");

    /// `word` set in bold in the man page (`.B word` or `\fBword`).
    fn in_man(word: &str) -> bool {
        MAN.lines().any(|l| {
            l.strip_prefix(".B ")
                .is_some_and(|rest| rest.starts_with(word))
                || l.contains(&format!("\\fB{word}"))
        })
    }

    /// The README's section that starts with `heading`, up to the next.
    fn readme_section(heading: &str) -> &'static str {
        let start = README.find(heading).expect(heading);
        let rest = &README[start + heading.len()..];
        &rest[..rest.find("\n#").unwrap_or(rest.len())]
    }

    #[test]
    fn every_command_is_in_the_readme_table_and_the_man_page() {
        let table = readme_section("## Commands");
        for command in Cli::command().get_subcommands() {
            let name = command.get_name();
            assert!(
                table.contains(&format!("`kaissa {name}")),
                "README's command table lacks kaissa {name}"
            );
            assert!(in_man(name), "the man page lacks {name}");
        }
    }

    #[test]
    fn every_ctl_command_is_in_the_man_page_and_the_readme() {
        let section = readme_section("### Control at run time");
        for line in crate::bot::control::usage().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let verb = match words[..] {
                ["tournament", sub, ..] => format!("tournament {sub}"),
                [first, ..] => first.to_owned(),
                [] => continue,
            };
            assert!(in_man(&verb), "the man page lacks ctl {verb}");
            assert!(section.contains(&verb), "README's ctl section lacks {verb}");
        }
    }

    #[test]
    fn the_ctl_help_lists_the_commands() {
        let help = Cli::command()
            .find_subcommand_mut("ctl")
            .expect("ctl")
            .render_help()
            .to_string();
        for line in crate::bot::control::usage().lines() {
            let verb = line.split_whitespace().next().expect("a command");
            assert!(help.contains(verb), "{verb} not in:\n{help}");
        }
    }
}
