//! The `kaissa` command line: one binary for the bot daemon, the UCI
//! engine and the developer tools. This file only dispatches: the flags
//! are defined in `kaissa::cli`, the work is done by the library (the
//! daemon in `bot`, the tools in `tools`); what is here is the glue of
//! the daemon commands (logging, the runtime, printing); the offline
//! commands' glue is `tools::commands`.

use anyhow::{Context, Result};
use clap::Parser;
use kaissa::bot::daemon::Daemon;
use kaissa::bot::preflight::{self, Caller, Finding, Level};
use kaissa::cli::{Cli, Command};
use kaissa::config::Config;
use kaissa::exit::Status;
use kaissa::lichess::Error as LichessError;
use kaissa::lichess::client::Client;
use kaissa::shutdown;
use kaissa::tools::{clocktest, commands, train, tune};
use std::path::Path;
use std::process::ExitCode;

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
        } => commands::perft(depth, fen.as_deref(), divide, chess960).map(|()| ExitCode::SUCCESS),
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
        } => commands::bench(depth, &eval_file, syzygy.as_deref(), endgames)
            .map(|()| ExitCode::SUCCESS),
        Command::Train(args) => {
            let cfg = args.config();
            train::run(&args.data, cfg, &args.out, &args.checkpoint, args.resume)
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Datagen(args) => {
            commands::datagen(&args.config()?, args.openings.as_deref(), &args.out)
                .map(|()| ExitCode::SUCCESS)
        }
        Command::Chunk(cmd) => commands::chunk(cmd),
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
        Command::Ctl {
            socket,
            mut command,
        } => {
            if let Err(e) = command.read_password(std::io::stdin().lock()) {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
            run_ctl(&socket, &command.line())
        }
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

/// The daemon's blocking work (an ended game's engine thread joined, a
/// file written, the hash files swept) is short: a few threads serve it,
/// so a burst of ended games cannot grow the process by hundreds of
/// threads (tokio allows 512 by default).
const BLOCKING_THREADS: usize = 4;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(BLOCKING_THREADS)
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
        let engines = kaissa::bot::external::roster::Engines::new(&config);
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
    let mut sources = sources;
    if let Some(online) = sources.online.as_mut() {
        // Lichess's explorer needs a token; its other hosts take one.
        online.authenticate(token.clone(), &config.lichess.url);
    }
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
