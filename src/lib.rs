//! kaissa: a Lichess bot daemon with its own chess engine.
//!
//! `chess` holds the rules (no I/O), `engine` searches with them, `uci`
//! and `bot` are the two front ends, `lichess` talks to the server,
//! `config` loads and validates the daemon's settings, `metrics` counts
//! what the daemon does (served by `bot::web`), `systemd` speaks
//! the service manager's notification protocol (`logging` and `exit`: the
//! daemon's log lines and exit status), `shutdown` turns signals into the
//! daemon's stop requests, `cli` defines the command line, and `tools` are
//! the offline programs that drive the engine from outside (training data,
//! tuning, clock tests).
//! Dependencies point one way: `chess` <- `engine` <- `uci`, `bot`,
//! `tools`; `lichess` knows no chess.
//!
//! # Four walks
//!
//! Where a change starts, in one place each:
//! - **How challenges are accepted**: `decide` in
//!   `src/bot/policy/challenge.rs`, the rules in order, each with the
//!   reason Lichess shows; the daemon only applies its answer.
//! - **Time management**: `src/bot/game/clock.rs`, the limits a game
//!   gives whichever engine plays (the built-in engine's time manager,
//!   `src/engine/timeman.rs`, turns them into a search's soft and hard
//!   limits).
//! - **A new Lichess endpoint**: a line in the table of
//!   `src/lichess/routes.rs`; its call follows in `src/lichess/client/mod.rs`.
//! - **A new variant engine**: a `[engines.NAME]` section that claims the
//!   variant (`src/config/engines.rs`); nothing in the code changes unless
//!   the variant's rules are new to shakmaty's board
//!   (`src/bot/board/variant.rs`).
//!
//! # Where to change what
//!
//! - **A challenge rule** (accept or decline): `src/bot/policy/challenge.rs`,
//!   `decide` (the rules in order, each with the reason Lichess shows)
//!   and the per-setting checks beside it. A new setting: see "a
//!   configuration key".
//! - **A fair limit** (who gets a slot, who waits): `fair` in
//!   `src/bot/policy/challenge.rs`; the queue's order in `src/bot/policy/queue.rs`; the
//!   daily bot quota in `src/bot/policy/quota.rs`; the online block lists in
//!   `src/bot/policy/blocklists.rs`; whom matchmaking challenges in
//!   `pick`/`offer` of `src/bot/policy/matchmaker.rs`. The daemon only applies
//!   them: incoming challenges in `src/bot/daemon/incoming.rs`, our own
//!   in `src/bot/daemon/outgoing.rs`.
//! - **Something the daemon does** (`src/bot/daemon/`, one concern a
//!   file): the event loop and its dispatch in `mod.rs`, game tasks and
//!   reconciling in `games.rs`, challenges to us in `incoming.rs`, ours
//!   in `outgoing.rs`, shutdown in `stop.rs`, the control socket's
//!   commands in `operator.rs` (their words, the socket and `kaissa ctl`'s
//!   client in `src/bot/control.rs`), arena tournaments in
//!   `arena_requests.rs` (what to ask Lichess and when, the slots they keep:
//!   `src/bot/policy/arenas.rs`).
//! - **A chat command**: `src/bot/chat.rs`, `reply` (text in, text out)
//!   and its `!help` line; the game task (`src/bot/game/mod.rs`) posts the
//!   answer.
//! - **An eval term**: the recipe in `src/engine/weights.rs` (offset,
//!   `N_PARAMS`, `SECTIONS`), its weights in `src/engine/params.rs`, its
//!   count in `src/engine/eval.rs`. The bench signature changes; re-tune
//!   and measure.
//! - **A UCI option**: `src/uci.rs` (the `option name` lines sent on
//!   `uci`, and `setoption`); what the engine needs from it in
//!   `EngineOptions` (`src/engine/thread.rs`).
//! - **A move source** (a book, a tablebase) in front of the search: a
//!   local one (instant, no I/O per move) in `Sources::choose`
//!   (`src/engine/sources.rs`, asked by both the bot and `go` in
//!   `src/uci.rs`); an online one in `src/lichess/online.rs` (the HTTP
//!   call) and `src/bot/game/lookup.rs` (when it applies, asked in its
//!   own task); its settings in `[sources]` (`src/config/sources.rs`).
//!   The engine stays a searcher (the tables also score its leaves).
//! - **An external engine or a variant**: which engine plays a game in
//!   `src/config/engines.rs` (`[engines.NAME]`, `claims`) and
//!   `src/bot/external/roster.rs` (probing, health, the choice the daemon
//!   applies); the UCI process in `src/bot/external/mod.rs`; how the game
//!   drives it (go, ponder, ponderhit, stop, the same as the built-in
//!   engine) in `src/bot/game/player.rs`; a variant's rules (shakmaty) in
//!   `src/bot/board/variant.rs`, seen by the game through
//!   `src/bot/board/mod.rs`.
//! - **A configuration key**: its field, default and doc in
//!   `src/config/sections.rs`, the same in the shipped
//!   `config/kaissa.toml` (a test holds them equal), a list key also in
//!   `src/config/env.rs`, a rule across values in
//!   `src/config/validate.rs`.
//! - **A Lichess endpoint**: one line in the table of
//!   `src/lichess/routes.rs` (method, path as the API specification
//!   writes it, the rate-limit gate of `src/lichess/gates.rs`), the call
//!   in `src/lichess/client/mod.rs`, and its types in `src/lichess/model.rs`
//!   (with a fixture from the specification under `tests/data/lichess/`
//!   and a test in `tests/lichess_spec.rs`, which also holds the table to
//!   the specification); the token scope a feature needs in
//!   `src/bot/scopes.rs`.
//! - **An offline tool** (data generation, tuning, clock tests): a module
//!   in `src/tools/`; its subcommand and flags in `src/cli.rs`, one arm in
//!   the dispatch of `src/main.rs`.
//! - **What the bot checks before it plays** (the configuration's
//!   summary and warnings, the sources, the external engines, the token's
//!   scopes): `src/bot/preflight.rs`, printed by `kaissa check` and
//!   logged by `kaissa run` (`src/main.rs`).
//! - **How long a move may take**: `src/engine/timeman.rs` turns a clock
//!   into soft and hard limits (the overhead kept for the moves to come,
//!   the share of a thread when games share them); the bot's side, what
//!   it tells the engine, in `src/bot/game/clock.rs` (the measured lag,
//!   the first move, correspondence, the move budget, the clocks an
//!   external engine is told) and the share in `src/bot/scheduler.rs`.
//! - **What an operator watches**: a metric in `src/metrics.rs` (its
//!   line in `CATALOGUE`, updated where the thing happens); the web
//!   server's routes in `src/bot/web/mod.rs`, the status page in
//!   `src/bot/web/page.html` and its drawings in `src/bot/web/svg.rs`.
//! - **What a signal does**: `src/shutdown.rs` turns SIGTERM/SIGINT/SIGUSR1
//!   into a `Stop` request; the daemon (`src/bot/daemon/stop.rs`)
//!   carries it out. `systemctl restart` sends SIGUSR1 from the unit's `ExecStop=`.

pub mod bot;
pub mod chess;
pub mod cli;
pub mod config;
pub mod engine;
pub mod exit;
pub mod lichess;
pub mod logging;
pub mod metrics;
pub mod shutdown;
pub mod systemd;
pub mod tools;
pub mod uci;
