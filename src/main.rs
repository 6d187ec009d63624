//! The `kaissa` command line: one binary for the bot daemon, the UCI
//! engine and the developer tools.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kaissa::bot::daemon::Daemon;
use kaissa::chess::{self, Position};
use kaissa::config::Config;
use kaissa::engine::timeman::TimeManager;
use kaissa::engine::{bench, clocktest, tune};
use kaissa::lichess::client::{Client, Error as LichessError};
use kaissa::tools::{datagen, packed, train};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "kaissa",
    version,
    about = "A Lichess bot with its own chess engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
        #[arg(long, default_value = "<embedded>")]
        eval_file: String,
    },
    /// Play complete engine-against-engine games on clocks kept by the
    /// harness, with simulated lag; report time losses and clock use.
    Clocktest {
        /// Time controls, minutes+seconds (e.g. 1+0 0+1 3+2 10+5).
        #[arg(required = true)]
        controls: Vec<String>,
        /// Games per time control.
        #[arg(long, default_value_t = 10)]
        games: usize,
        /// Games played at once.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Simulated lag per move, milliseconds (uniform in min..=max).
        #[arg(long, default_value_t = 50)]
        lag_min: u64,
        #[arg(long, default_value_t = 150)]
        lag_max: u64,
        /// Move overhead given to the engines, milliseconds.
        #[arg(long, default_value_t = 150)]
        overhead: u64,
        /// Think on the opponent's time.
        #[arg(long)]
        ponder: bool,
        /// Hash per engine, MiB.
        #[arg(long, default_value_t = 16)]
        hash: usize,
        /// Time manager of one side (White in even games): adaptive|fixed.
        #[arg(long, default_value = "adaptive")]
        manager: String,
        /// Time manager of the other side.
        #[arg(long, default_value = "adaptive")]
        opponent: String,
        #[arg(long, default_value_t = 6)]
        random_plies: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print every game.
        #[arg(long)]
        verbose: bool,
    },
    /// Generate training data by self-play (32-byte records, resumable:
    /// run it again with the same seed and threads to continue).
    Datagen {
        /// Games per thread (games already in the files count).
        #[arg(long, default_value_t = 1_000_000)]
        games: u64,
        /// Soft node limit per move (whole iterations; hard limit 10x).
        #[arg(long, default_value_t = 5000)]
        nodes: u64,
        /// Random plies after the opening: N or MIN-MAX.
        #[arg(long, default_value = "8-9", value_parser = parse_ply_range)]
        random_plies: (usize, usize),
        /// Opening book (EPD/FEN lines); default: the start position.
        #[arg(long)]
        openings: Option<std::path::PathBuf>,
        /// Output directory (one file per thread).
        #[arg(long)]
        out: std::path::PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Transposition table per thread, MiB.
        #[arg(long, default_value_t = 16)]
        hash: usize,
        /// Evaluation of the players: `<embedded>` (the default net),
        /// `classical` (hand-crafted) or the path of a net file.
        #[arg(long, default_value = "<embedded>")]
        eval_file: String,
    },
    /// Train the NNUE on datagen records and write the quantized net
    /// (and a checkpoint) after every epoch.
    Train {
        /// Record files (`*.bin`) or directories of them.
        #[arg(required = true)]
        data: Vec<std::path::PathBuf>,
        /// Where the net file goes.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Checkpoint file (f32 weights and optimizer state).
        #[arg(long)]
        checkpoint: std::path::PathBuf,
        /// Continue from the checkpoint instead of starting afresh.
        #[arg(long)]
        resume: bool,
        #[arg(long, default_value_t = 10)]
        epochs: usize,
        #[arg(long, default_value_t = 16_384)]
        batch: usize,
        /// Peak learning rate (cosine decay to 1%).
        #[arg(long, default_value_t = 0.001)]
        lr: f32,
        #[arg(long, default_value_t = 0.01)]
        weight_decay: f32,
        /// Weight of the game result in the target (0: score only).
        #[arg(long, default_value_t = 0.25)]
        lambda: f32,
        /// Score scale of the target sigmoid, centipawns.
        #[arg(long, default_value_t = 400.0)]
        k: f32,
        /// Games held out for validation, per mille.
        #[arg(long, default_value_t = 50)]
        val_permille: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
    /// Texel-tune the evaluation weights on labelled positions and write
    /// them as Rust source.
    Tune {
        /// Training files (`FEN [1.0]` or EPD with `c9 "1-0"`).
        #[arg(required = true)]
        data: Vec<std::path::PathBuf>,
        /// Adam epochs (full passes).
        #[arg(long, default_value_t = 2000)]
        epochs: usize,
        /// Adam step size, in centipawns.
        #[arg(long, default_value_t = 1.0)]
        lr: f64,
        /// Use at most this many positions.
        #[arg(long)]
        limit: Option<usize>,
        /// Where to write the weights (Rust source).
        #[arg(long, default_value = "src/engine/params.rs")]
        out: std::path::PathBuf,
        /// Extra header lines for the weights file (e.g. how the data
        /// was made).
        #[arg(long)]
        note: Vec<String>,
        /// L2 pull towards the starting weights.
        #[arg(long, default_value_t = 0.0)]
        l2: f64,
        /// Weight of the game result against the search score in the
        /// target (1 = result only).
        #[arg(long, default_value_t = 1.0)]
        lambda: f64,
        /// Hold out every tenth block of 100 lines for validation and
        /// keep the weights that predict it best.
        #[arg(long)]
        validate: bool,
        /// Keep the weights of every section whose name starts with this
        /// (e.g. "piece-square") at their current values.
        #[arg(long)]
        freeze: Vec<String>,
    },
    /// Check the configuration, the token and the Lichess account, then
    /// exit (non-zero when something is wrong).
    Check {
        /// Configuration file (TOML); default: built-in defaults and the
        /// `KAISSA_*` environment.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Run the bot daemon: answer challenges until SIGTERM or Ctrl-C.
    Run {
        /// Configuration file (TOML); default: built-in defaults and the
        /// `KAISSA_*` environment.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Perft {
            depth,
            fen,
            divide,
            chess960,
        } => run_perft(depth, fen.as_deref(), divide, chess960).map(|()| ExitCode::SUCCESS),
        Command::Clocktest {
            controls,
            games,
            concurrency,
            lag_min,
            lag_max,
            overhead,
            ponder,
            hash,
            manager,
            opponent,
            random_plies,
            seed,
            verbose,
        } => {
            let tm = |s: &str| {
                TimeManager::parse(s).ok_or_else(|| {
                    anyhow::anyhow!("time manager {s:?}: expected adaptive or fixed")
                })
            };
            let (manager, opponent) = (tm(&manager)?, tm(&opponent)?);
            if lag_min > lag_max {
                anyhow::bail!("--lag-min {lag_min} is above --lag-max {lag_max}");
            }
            let mut configs = Vec::new();
            for c in &controls {
                let control = clocktest::TimeControl::parse(c).map_err(anyhow::Error::msg)?;
                configs.push(clocktest::ClockTestConfig {
                    control,
                    games,
                    concurrency,
                    lag_min: std::time::Duration::from_millis(lag_min),
                    lag_max: std::time::Duration::from_millis(lag_max),
                    overhead: std::time::Duration::from_millis(overhead),
                    ponder,
                    hash_mb: hash.clamp(1, 65536),
                    manager,
                    opponent_manager: opponent,
                    random_plies,
                    max_plies: 600,
                    seed,
                });
            }
            // All controls at once, `concurrency` games each.
            let reports: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = configs
                    .iter()
                    .map(|config| {
                        scope.spawn(move || {
                            let control = config.control;
                            clocktest::run(config, &|i, g| {
                                if verbose || g.flagged.is_some() {
                                    eprintln!(
                                        "{} game {i}: {} {} plies {} share {:.0}%/{:.0}% min left {}/{} ms ponder {}/{}",
                                        control.name(),
                                        g.result,
                                        g.reason,
                                        g.plies,
                                        g.share_used[0] * 100.0,
                                        g.share_used[1] * 100.0,
                                        g.min_left[0].as_millis(),
                                        g.min_left[1].as_millis(),
                                        g.ponder_hits,
                                        g.ponders
                                    );
                                }
                            })
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join()).collect()
            });
            let mut losses = 0;
            for (config, report) in configs.iter().zip(reports) {
                let report = report.map_err(|_| anyhow::anyhow!("a game thread panicked"))?;
                losses += report.time_losses();
                println!("{}", report.summary(&config.control));
            }
            if losses > 0 {
                anyhow::bail!("{losses} game(s) lost on time");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Uci => {
            kaissa::uci::run(std::io::stdin().lock(), Box::new(std::io::stdout()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { depth, eval_file } => {
            run_bench(depth, &eval_file).map(|()| ExitCode::SUCCESS)
        }
        Command::Datagen {
            games,
            nodes,
            random_plies,
            openings,
            out,
            seed,
            threads,
            hash,
            eval_file,
        } => {
            let net = kaissa::engine::nnue::load_eval_file(&eval_file)?;
            let cfg = datagen::DatagenConfig {
                games,
                nodes,
                random_plies,
                seed,
                threads: threads.clamp(1, 256),
                hash_mb: hash.clamp(1, 4096),
                net,
            };
            run_datagen(&cfg, openings.as_deref(), &out).map(|()| ExitCode::SUCCESS)
        }
        Command::Train {
            data,
            out,
            checkpoint,
            resume,
            epochs,
            batch,
            lr,
            weight_decay,
            lambda,
            k,
            val_permille,
            seed,
            threads,
        } => {
            let cfg = train::TrainConfig {
                epochs,
                batch_size: batch.max(1),
                lr,
                weight_decay,
                lambda: lambda.clamp(0.0, 1.0),
                k: k.max(1.0),
                val_permille: val_permille.min(1000),
                seed,
                threads: threads.clamp(1, 256),
            };
            run_train(&data, cfg, &out, &checkpoint, resume).map(|()| ExitCode::SUCCESS)
        }
        Command::Tune {
            data,
            epochs,
            lr,
            limit,
            out,
            note,
            l2,
            lambda,
            validate,
            freeze,
        } => {
            let cfg = tune::TuneConfig { epochs, lr, l2 };
            let opts = TuneOptions {
                lambda,
                validate,
                limit,
                freeze,
            };
            run_tune(&data, &cfg, &opts, &out, &note).map(|()| ExitCode::SUCCESS)
        }
        Command::Check { config } => {
            init_logging();
            run_check(config.as_deref())
        }
        Command::Run { config } => {
            init_logging();
            run_daemon(config.as_deref())
        }
    }
}

/// Logs to stderr; `RUST_LOG` overrides the default `info` level.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `kaissa check`: configuration, token, account. The token is never
/// printed (`Token` only ever displays as `***`).
fn run_check(config_path: Option<&Path>) -> Result<ExitCode> {
    let config = Config::load(config_path).context("configuration")?;
    println!("configuration: ok");
    let token = config.token().context("token")?;
    let client = Client::new(token, config.lichess.client_options())
        .context("cannot create the Lichess client")?;
    let url = config.lichess.url.clone();
    let account = runtime()?.block_on(client.account());
    match account {
        Ok(account) => {
            let name = if account.username.is_empty() {
                &account.id
            } else {
                &account.username
            };
            println!("account: {name} ({url})");
            if account.is_bot() {
                println!("bot account: yes");
            } else {
                eprintln!(
                    "warning: {name} is not a BOT account; upgrade it (irreversible) before \
                     running the bot"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ LichessError::Unauthorized { .. }) => {
            eprintln!(
                "error: Lichess rejected the token ({e}); create a new token with the \
                 bot:play scope"
            );
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("GET {url}/api/account"))),
    }
}

fn run_perft(depth: u32, fen: Option<&str>, divide: bool, chess960: bool) -> Result<()> {
    let pos = match fen {
        Some(f) => Position::from_fen(f).context("invalid --fen")?,
        None => Position::startpos(),
    };
    let start = Instant::now();
    let nodes = if divide {
        let mut total = 0;
        for (m, n) in chess::divide(&pos, depth, chess960) {
            println!("{m}: {n}");
            total += n;
        }
        println!();
        total
    } else {
        chess::perft(&pos, depth)
    };
    let secs = start.elapsed().as_secs_f64();
    println!("nodes {nodes}");
    println!("time {:.3} s", secs);
    println!("speed {:.1} Mnps", nodes as f64 / secs.max(1e-9) / 1e6);
    Ok(())
}

fn run_bench(depth: Option<u32>, eval_file: &str) -> Result<()> {
    let depth = depth.unwrap_or(bench::DEFAULT_DEPTH).clamp(1, 64);
    let net = kaissa::engine::nnue::load_eval_file(eval_file)?;
    let r = bench::run(depth, net, &mut |i, fen, nodes| {
        println!("position {:>2} nodes {:>10}  {fen}", i + 1, nodes);
    });
    println!();
    println!("Total time (ms) : {}", r.time.as_millis());
    println!("Nodes searched  : {}", r.nodes);
    println!("Nodes/second    : {}", r.nps());
    Ok(())
}

/// `kaissa train`: loads the records (files in the order given,
/// directories' `*.bin` sorted), trains, writes the net every epoch.
fn run_train(
    data: &[PathBuf],
    cfg: train::TrainConfig,
    out: &Path,
    checkpoint: &Path,
    resume: bool,
) -> Result<()> {
    let mut files = Vec::new();
    for p in data {
        if p.is_dir() {
            let mut in_dir: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .collect();
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(p.clone());
        }
    }
    let mut set = train::Data::default();
    let mut bad = 0;
    for (i, f) in files.iter().enumerate() {
        let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        let (records, b) = packed::read_records(&bytes);
        bad += b;
        set.add_file(i as u64, records, &cfg);
    }
    println!(
        "{} files: {} training positions, {} validation positions, {bad} bad records skipped",
        files.len(),
        set.train.len(),
        set.val.len()
    );
    let mut trainer = if resume {
        train::Trainer::load_checkpoint(cfg, checkpoint)?
    } else {
        train::Trainer::new(cfg)
    };
    if trainer.epoch == 0 {
        println!("epoch 0  val loss {:.6}", trainer.loss(&set.val));
    }
    while trainer.epoch < trainer.cfg.epochs {
        let start = Instant::now();
        let r = trainer.train_epoch(&set)?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "epoch {}/{}  train loss {:.6}  val loss {:.6}  lr {:.6}  {:.0} pos/s",
            r.epoch,
            trainer.cfg.epochs,
            r.train_loss,
            r.val_loss,
            r.lr,
            set.train.len() as f64 / secs.max(1e-9)
        );
        trainer.save_checkpoint(checkpoint)?;
        train::write_atomically(out, &trainer.net_bytes())?;
    }
    println!("net written to {}", out.display());
    Ok(())
}

/// `kaissa run`: the daemon. The first SIGTERM or Ctrl-C lets the running
/// games finish, the second resigns them.
fn run_daemon(config_path: Option<&Path>) -> Result<ExitCode> {
    let config = Config::load(config_path).context("configuration")?;
    if let Some(path) = config_path {
        warn_if_others_can_read(path);
    }
    match kaissa::engine::nnue::load_eval_file(&config.engine.eval_file) {
        Ok(net) => {
            let what = net
                .as_ref()
                .map_or("classical".to_owned(), |n| format!("{n:?}"));
            tracing::info!("evaluation: {what}");
            kaissa::engine::nnue::set_default(net);
        }
        Err(e) => tracing::error!("engine.eval_file: {e}; playing with the embedded net"),
    }
    let token = config.token().context("token")?;
    let client = Client::new(token, config.lichess.client_options())
        .context("cannot create the Lichess client")?;
    let notifier = kaissa::systemd::Notifier::from_env().unwrap_or_else(|e| {
        tracing::warn!("NOTIFY_SOCKET unusable, not reporting to systemd: {e}");
        kaissa::systemd::Notifier::disabled()
    });
    runtime()?.block_on(async move {
        let (tx, rx) = tokio::sync::watch::channel(0u32);
        tokio::spawn(async move {
            loop {
                wait_for_signal().await;
                tx.send_modify(|count| *count += 1);
                if *tx.borrow() >= kaissa::bot::daemon::IMMEDIATE {
                    break;
                }
            }
            // Keep the sender: a dropped one would read as "stop now".
            std::future::pending::<()>().await;
        });
        Daemon::new(client, config)
            .with_notifier(notifier)
            .run(rx)
            .await
            .context("the daemon stopped")?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Warns when others than the owner can read `path` (the configuration
/// names the token file and the bot's policy).
fn warn_if_others_can_read(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o004 != 0 {
                tracing::warn!(
                    "configuration file {} is readable by others (mode {mode:o}); chmod o-r it",
                    path.display()
                );
            }
        }
    }
}

/// The next SIGTERM or SIGINT.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn read_openings(path: &Path) -> Result<Vec<Position>> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut out = Vec::new();
    for line in std::io::BufReader::new(f).lines() {
        let line = line?;
        let fen = line.split(';').next().unwrap_or("").trim();
        if fen.is_empty() {
            continue;
        }
        if let Ok(p) = Position::from_fen(fen) {
            out.push(p);
        }
    }
    anyhow::ensure!(!out.is_empty(), "no valid positions in {}", path.display());
    Ok(out)
}

fn run_datagen(cfg: &datagen::DatagenConfig, openings: Option<&Path>, out: &Path) -> Result<()> {
    let book = match openings {
        Some(p) => read_openings(p)?,
        None => Vec::new(),
    };
    let report = datagen::run(out, &book, cfg, 100, &|games, positions, elapsed| {
        eprintln!(
            "games {games} positions {positions} ({:.0} s)",
            elapsed.as_secs_f64()
        );
    })
    .with_context(|| format!("datagen into {}", out.display()))?;
    println!(
        "{} games, {} positions in {:.0} s on {} threads: {:.0} positions per core-hour",
        report.games,
        report.positions,
        report.elapsed.as_secs_f64(),
        report.threads,
        report.per_core_hour()
    );
    Ok(())
}

/// `N` or `MIN-MAX`.
fn parse_ply_range(s: &str) -> Result<(usize, usize), String> {
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

/// `kaissa tune` settings beyond the optimiser's.
struct TuneOptions {
    lambda: f64,
    validate: bool,
    limit: Option<usize>,
    /// Section name prefixes whose weights stay fixed.
    freeze: Vec<String>,
}

fn run_tune(
    data: &[PathBuf],
    cfg: &tune::TuneConfig,
    opts: &TuneOptions,
    out: &Path,
    note: &[String],
) -> Result<()> {
    use kaissa::engine::weights::{MATERIAL, N_PARAMS, SECTIONS};
    let TuneOptions {
        lambda,
        validate,
        limit,
        ..
    } = *opts;
    use kaissa::engine::params::WEIGHTS;
    let mut ds = tune::Dataset::default();
    let mut valid = tune::Dataset::default();
    let mut skipped = 0usize;
    let mut line_no = 0usize;
    'files: for path in data {
        if path.extension().is_some_and(|e| e == "bin") {
            // `kaissa datagen` records; the validation split is by game.
            let bytes = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
            let (records, bad) = packed::read_records(&bytes);
            skipped += bad;
            for r in records {
                let set = if validate && r.game % 10 == 9 {
                    &mut valid
                } else {
                    &mut ds
                };
                let score = Some(i32::from(r.score));
                match r.to_position() {
                    Some(pos) if set.push(&pos, r.result.white_score(), score, &WEIGHTS) => {}
                    _ => skipped += 1,
                }
                if limit.is_some_and(|l| ds.len() + valid.len() >= l) {
                    break 'files;
                }
            }
            continue;
        }
        let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
        for line in std::io::BufReader::new(f).lines() {
            let line = line?;
            line_no += 1;
            let set = if validate && (line_no / 100) % 10 == 9 {
                &mut valid
            } else {
                &mut ds
            };
            match tune::parse_line(&line) {
                Some((pos, r, score)) if set.push(&pos, r, score, &WEIGHTS) => {}
                _ => skipped += 1,
            }
            if limit.is_some_and(|l| ds.len() + valid.len() >= l) {
                break 'files;
            }
        }
    }
    anyhow::ensure!(!ds.is_empty(), "no usable positions");
    eprintln!(
        "{} training and {} validation positions ({skipped} lines skipped)",
        ds.len(),
        valid.len()
    );
    let mut w = tune::unpack(&WEIGHTS);
    // K is fitted on the results alone, then the targets are blended.
    let k = tune::fit_k(&ds, &w);
    ds.set_targets(k, lambda);
    valid.set_targets(k, lambda);
    let start_err = ds.error(&w, k);
    if valid.is_empty() {
        eprintln!("K = {k:.6}, error {start_err:.6}");
    } else {
        eprintln!(
            "K = {k:.6}, error {start_err:.6} validation {:.6}",
            valid.error(&w, k)
        );
    }
    // The king's material is a constant: keep it at zero.
    let mut frozen = vec![false; N_PARAMS];
    frozen[MATERIAL + 5] = true;
    for prefix in &opts.freeze {
        let mut matched = false;
        for &(name, start, len) in SECTIONS {
            if name.starts_with(prefix.as_str()) {
                frozen[start..start + len].fill(true);
                matched = true;
            }
        }
        anyhow::ensure!(
            matched,
            "--freeze {prefix:?}: no section name starts with it"
        );
    }
    let t0 = Instant::now();
    tune::optimise(&ds, &valid, &mut w, k, cfg, &frozen, &mut |e, err, verr| {
        eprintln!(
            "epoch {e:>5} error {err:.6} validation {verr:.6} ({:.0} s)",
            t0.elapsed().as_secs_f64()
        );
    });
    let end_err = ds.error(&w, k);
    let cmd: Vec<String> = std::env::args().collect();
    let mut header: Vec<String> = note.to_vec();
    header.extend([
        format!("Tuned by: {}", cmd.join(" ")),
        format!(
            "{} training + {} validation positions, K = {k:.6}, error {start_err:.6} -> {end_err:.6}",
            ds.len(),
            valid.len()
        ),
    ]);
    let mut f = BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    f.write_all(tune::params_source(&w, &header).as_bytes())?;
    f.flush()?;
    println!(
        "wrote {} (error {start_err:.6} -> {end_err:.6})",
        out.display()
    );
    Ok(())
}
