//! The `kaissa` command line: one binary for the bot daemon, the UCI
//! engine and the developer tools. This file only dispatches: the flags
//! are defined in `kaissa::cli`, the work is done by the library (the
//! daemon in `bot`, the tools in `tools`); what is here is the glue of
//! each command (logging, the runtime, printing).

use anyhow::{Context, Result};
use clap::Parser;
use kaissa::bot::daemon::Daemon;
use kaissa::bot::preflight::{self, Caller, Finding, Level};
use kaissa::chess::{self, Position};
use kaissa::cli::{ChunkCommand, Cli, Command};
use kaissa::config::Config;
use kaissa::engine::bench;
use kaissa::exit::Status;
use kaissa::lichess::Error as LichessError;
use kaissa::lichess::client::Client;
use kaissa::shutdown;
use kaissa::tools::{chunk, clocktest, convert, datagen, manifest, packed, train, tune};
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            kaissa::logging::print_error(&format!("{e:#}"));
            Status::of(&e).into()
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
        Command::Clocktest(args) => {
            clocktest::run_controls(&args.configs()?, args.verbose).map(|()| ExitCode::SUCCESS)
        }
        Command::Uci => {
            kaissa::uci::run(std::io::stdin().lock(), Box::new(std::io::stdout()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            depth,
            eval_file,
            syzygy,
            endgames,
        } => run_bench(depth, &eval_file, syzygy.as_deref(), endgames).map(|()| ExitCode::SUCCESS),
        Command::Train(args) => {
            let cfg = args.config();
            train::run(&args.data, cfg, &args.out, &args.checkpoint, args.resume)
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Datagen(args) => run_datagen(&args.config()?, args.openings.as_deref(), &args.out)
            .map(|()| ExitCode::SUCCESS),
        Command::Chunk(cmd) => run_chunk(cmd),
        Command::Tune(args) => {
            let (cfg, opts) = args.config();
            tune::run(&args.data, &cfg, &opts, &args.out, &args.note).map(|()| ExitCode::SUCCESS)
        }
        Command::Check { config } => {
            kaissa::logging::init();
            run_check(config.as_deref())
        }
        Command::Upgrade {
            config,
            yes_i_understand,
        } => {
            kaissa::logging::init();
            run_upgrade(config.as_deref(), yes_i_understand)
        }
        Command::Ctl { socket, command } => run_ctl(&socket, &command.join(" ")),
        Command::Run { config } => {
            kaissa::logging::init();
            run_daemon(config.as_deref())
        }
    }
}

/// `kaissa ctl`: one command to the daemon's control socket; the answer
/// on stdout (an error on stderr, exit status 1).
fn run_ctl(socket: &Path, command: &str) -> Result<ExitCode> {
    let reply = runtime()?
        .block_on(kaissa::bot::control::send(socket, command))
        .map_err(anyhow::Error::msg)?;
    if reply.ok {
        println!("{}", reply.text);
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: {}", reply.text);
        Ok(ExitCode::FAILURE)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `kaissa check`: the preflight (configuration, sources, external
/// engines), the account and the token's scopes, printed. The token is
/// never printed (`Token` only ever displays as `***`).
fn run_check(config_path: Option<&Path>) -> Result<ExitCode> {
    let config = Config::load(config_path).context("configuration")?;
    let (found, _) = preflight::local(&config, Caller::Check).context("configuration")?;
    found.iter().for_each(Finding::print);
    let token = config.token().context("token")?;
    let client = Client::new(token, config.lichess.client_options())
        .context("cannot create the Lichess client")?;
    let url = config.lichess.url.clone();
    let runtime = runtime()?;
    // The external engines: each started once. One that cannot start
    // fails the check (its games would be declined).
    let mut failed = false;
    if !config.engines.is_empty() {
        let engines = kaissa::bot::engines::Engines::new(&config);
        let found = runtime.block_on(preflight::engines(&engines));
        found.iter().for_each(Finding::print);
        failed = found.iter().any(|f| f.level == Level::Error);
    }
    let account = match runtime.block_on(client.account()) {
        Ok(account) => account,
        Err(e @ LichessError::Unauthorized { .. }) => {
            eprintln!(
                "error: Lichess rejected the token ({e}); create a new token with the \
                 bot:play scope"
            );
            return Ok(Status::TokenRejected.into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("GET {url}/api/account"))),
    };
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
    match runtime.block_on(client.token_info()) {
        Ok(Some(info)) => {
            let found = preflight::scopes(&info, &config);
            found.iter().for_each(Finding::print);
            if found.iter().any(|f| f.level == Level::Error) {
                return Ok(Status::TokenRejected.into());
            }
        }
        Ok(None) => eprintln!("warning: Lichess does not know the token's scopes"),
        Err(e) => eprintln!("warning: cannot read the token's scopes: {e}"),
    }
    Ok(if failed {
        Status::Config.into()
    } else {
        ExitCode::SUCCESS
    })
}

/// `kaissa upgrade`: turns the account into a BOT account, only with the
/// explicit confirmation flag (Lichess cannot undo it).
fn run_upgrade(config_path: Option<&Path>, confirmed: bool) -> Result<ExitCode> {
    let config = Config::load(config_path).context("configuration")?;
    let token = config.token().context("token")?;
    let client = Client::new(token, config.lichess.client_options())
        .context("cannot create the Lichess client")?;
    let url = config.lichess.url.clone();
    let runtime = runtime()?;
    let account = runtime
        .block_on(client.account())
        .with_context(|| format!("GET {url}/api/account"))?;
    let name = if account.username.is_empty() {
        account.id.clone()
    } else {
        account.username.clone()
    };
    if account.is_bot() {
        println!("{name} is a BOT account already: nothing to do");
        return Ok(ExitCode::SUCCESS);
    }
    if !confirmed {
        eprintln!(
            "error: upgrading {name} ({url}) to a BOT account cannot be undone, and works only \
             for an account that never played a game; run again with --yes-i-understand"
        );
        return Ok(Status::Usage.into());
    }
    runtime
        .block_on(client.upgrade_to_bot())
        .with_context(|| format!("POST {url}/api/bot/account/upgrade"))?;
    println!("{name} is now a BOT account");
    Ok(ExitCode::SUCCESS)
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

fn run_bench(
    depth: Option<u32>,
    eval_file: &str,
    syzygy: Option<&str>,
    endgames_only: bool,
) -> Result<()> {
    let depth = depth.unwrap_or(bench::DEFAULT_DEPTH).clamp(1, 64);
    let net = kaissa::engine::nnue::load_eval_file(eval_file)?;
    let tablebases = match syzygy {
        Some(dirs) => Some(std::sync::Arc::new(
            kaissa::engine::tablebase::Tablebases::open(dirs).context("--syzygy")?,
        )),
        None => None,
    };
    let options = bench::BenchOptions {
        net,
        tablebases,
        endgames_only,
    };
    let r = bench::run(depth, options, &mut |i, fen, nodes| {
        println!("position {:>2} nodes {:>10}  {fen}", i + 1, nodes);
    });
    println!();
    println!("Total time (ms) : {}", r.time.as_millis());
    println!("Nodes searched  : {}", r.nodes);
    println!("Nodes/second    : {}", r.nps());
    if syzygy.is_some() {
        println!("Table hits      : {}", r.tb_hits);
    }
    Ok(())
}

/// `kaissa run`: the daemon. The first SIGTERM or Ctrl-C lets the running
/// games finish (or hands them over when systemd restarts the unit), the
/// second resigns them; SIGUSR1 hands them over (see `shutdown`).
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
        Err(e) => {
            tracing::error!("engine.eval_file: {e}; playing with the embedded net")
        }
    }
    let (found, sources) = preflight::local(&config, Caller::Run).context("configuration")?;
    found.iter().for_each(Finding::log);
    let token = config.token().context("token")?;
    let client = Client::new(token, config.lichess.client_options())
        .context("cannot create the Lichess client")?;
    let notifier = kaissa::systemd::Notifier::from_env().unwrap_or_else(|e| {
        tracing::warn!("NOTIFY_SOCKET unusable, not reporting to systemd: {e}");
        kaissa::systemd::Notifier::disabled()
    });
    runtime()?.block_on(async move {
        Daemon::new(client, config)
            .with_notifier(notifier)
            .with_sources(sources)
            .run(shutdown::listen())
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
    eprintln!(
        "datagen: seed {}, {} threads, {} nodes, chunks into {} every {:.0} min",
        cfg.seed,
        cfg.threads,
        cfg.nodes,
        out.display(),
        cfg.chunk_time.as_secs_f64() / 60.0
    );
    let report = datagen::run(out, &book, cfg, 100, &|games, positions, elapsed| {
        eprintln!(
            "games {games} positions {positions} ({:.0} s)",
            elapsed.as_secs_f64()
        );
    })
    .with_context(|| format!("datagen into {}", out.display()))?;
    println!(
        "{} games, {} positions in {:.0} s on {} threads: {:.0} positions per core-hour; \
         {} chunks, {:.2} bytes a position",
        report.games,
        report.positions,
        report.elapsed.as_secs_f64(),
        report.threads,
        report.per_core_hour(),
        report.chunks,
        report.bytes as f64 / report.positions.max(1) as f64
    );
    Ok(())
}

/// `kaissa chunk ...`.
fn run_chunk(cmd: ChunkCommand) -> Result<ExitCode> {
    match cmd {
        ChunkCommand::Info { files } => {
            for f in files {
                let c = chunk::read_file(&f).with_context(|| format!("reading {}", f.display()))?;
                let h = &c.header;
                let positions = c.positions(&chunk::Filter::default());
                println!(
                    "{}: {} games, {} plies, {} scored, {} positions kept by default; \
                     {} bytes: {:.2} a ply, {:.2} a position kept; nodes {}, seed {}, \
                     net {:016x}, commit {}",
                    f.display(),
                    h.games,
                    h.plies,
                    h.scored,
                    positions,
                    c.bytes,
                    c.bytes as f64 / h.plies.max(1) as f64,
                    c.bytes as f64 / positions.max(1) as f64,
                    h.nodes,
                    h.seed,
                    h.net,
                    h.commit
                );
            }
        }
        ChunkCommand::Seal { dir } => {
            for (path, games) in datagen::seal_leftovers(&dir)? {
                println!("sealed {} ({games} games)", path.display());
            }
        }
        ChunkCommand::Convert {
            input,
            output,
            seed,
            random_plies,
            nodes,
            commit,
            net,
        } => {
            let net = match net {
                Some(hex) => u64::from_str_radix(&hex, 16)
                    .with_context(|| format!("--net {hex:?} is not a hex checksum"))?,
                None => kaissa::engine::nnue::embedded().checksum,
            };
            let bytes =
                std::fs::read(&input).with_context(|| format!("reading {}", input.display()))?;
            let (records, bad) = packed::read_records(&bytes);
            anyhow::ensure!(bad == 0, "{}: {bad} bad records", input.display());
            let origin = convert::Origin { seed, random_plies };
            let (games, stats) = convert::convert(&records, &origin);
            let dir = output.parent().filter(|p| !p.as_os_str().is_empty());
            let dir = dir.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let name = output
                .file_stem()
                .context("the output needs a file name")?
                .to_string_lossy();
            let header = chunk::Header {
                commit,
                net,
                nodes,
                seed,
                stride: 1,
                ..chunk::Header::default()
            };
            let mut w = chunk::ChunkWriter::create(dir, &name, header)?;
            for g in &games {
                w.append(g)?;
            }
            let sealed = w.seal()?;
            let size = std::fs::metadata(&sealed)?.len();
            println!(
                "{}: {} records of {} games -> {} games ({} breaks, {} openings not found, \
                 {} bridged plies); {size} bytes, {:.2} a record",
                sealed.display(),
                stats.records,
                stats.source_games,
                stats.games,
                stats.breaks,
                stats.openings_missed,
                stats.bridged,
                size as f64 / stats.records.max(1) as f64
            );
        }
        ChunkCommand::Manifest { dir, check } => {
            let t = if check {
                manifest::check(&dir)?
            } else {
                manifest::update(&dir)?
            };
            println!(
                "{}: {} chunks, {} games, {} positions, {} bytes ({:.2} a position), {} removed",
                dir.display(),
                t.chunks,
                t.games,
                t.positions,
                t.bytes,
                t.bytes as f64 / t.positions.max(1) as f64,
                t.removed
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
