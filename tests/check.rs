//! `kaissa check` against the fake Lichess server, running the real binary.

use crate::support;

use std::process::Output;

use support::fake_lichess::{FakeConfig, FakeLichess};

async fn check(fake: &FakeLichess, token: &str, extra: &[&str]) -> Output {
    kaissa(fake, token, "check", extra).await
}

async fn kaissa(fake: &FakeLichess, token: &str, command: &str, extra: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .arg(command)
        .args(extra)
        .env_remove("CREDENTIALS_DIRECTORY")
        .env("LICHESS_BOT_TOKEN", token)
        .env("KAISSA_LICHESS__URL", fake.url())
        .env("RUST_LOG", "debug")
        .output()
        .await
        .expect("run kaissa check")
}

/// A fake whose account is not a BOT account.
async fn human_account() -> FakeLichess {
    FakeLichess::start_with(FakeConfig {
        is_bot: false,
        ..FakeConfig::default()
    })
    .await
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn good_token_prints_the_account() {
    let fake = FakeLichess::start().await;
    let out = check(&fake, &fake.token(), &[]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("KaissaBot"), "stdout: {stdout}");
    assert!(!stderr.contains("not a BOT"), "stderr: {stderr}");
    assert!(!stdout.contains(&fake.token()) && !stderr.contains(&fake.token()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_account_is_warned_about() {
    let fake = human_account().await;
    let out = check(&fake, &fake.token(), &[]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.contains("not a BOT"), "stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_token_fails_without_printing_it() {
    let fake = FakeLichess::start().await;
    let secret = "lip_wrong_secret_token_987654";
    let out = check(&fake, secret, &[]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(77),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("401"), "stderr: {stderr}");
    assert!(!stdout.contains(secret), "stdout: {stdout}");
    assert!(!stderr.contains(secret), "stderr: {stderr}");
    assert!(!stderr.contains("wrong_secret"), "stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_config_key_is_named() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(&path, "[challenge]\nmax_bse = 600\n").unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(78),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("max_bse"), "stderr: {stderr}");
    // Nothing was asked of the server.
    assert!(fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_config_value_is_named() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(&path, "[bot]\nconcurrency = \"many\"\n").unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(78),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("concurrency"), "stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_the_queue_fair_limits_matchmaking_and_pgns() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(
        &path,
        "[bot]\nconcurrency = 3\npgn_dir = \"/srv/pgn\"\npgn_file = \"opponent\"\n\
         pgn_comments = [\"clock\", \"pv\"]\n\
         [challenge]\nreserved_for_humans = 1\nqueue_order = \"rating\"\n\
         [matchmaking]\nenabled = true\ntime_controls = [\"1+1\"]\n",
    )
    .unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    for line in [
        "games at once: 3 (kept for humans: 1, per opponent: 1)",
        "challenge queue: up to 10, by rating",
        "bot games per day: 100",
        "takebacks per game: 0",
        "PGN: in /srv/pgn, one file per opponent (appended); comments: clock pv",
        "matchmaking: on: after 300 s idle, rating -300..=+300 (target +0), 1+1 standard, casual, timeout 30 s; \
         declined: that clock or variant skipped 86400 s, later/generic 14400 s, no answer 3600 s, \
         blocked 604800 s after 3 in a row",
    ] {
        assert!(stdout.contains(line), "{line:?} not in: {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_each_challenge_policy() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(
        &path,
        "[challenge]\nqueue_first = [\"titled\", \"humans\"]\n\
         [challenge.humans]\nspeeds = [\"rapid\", \"classical\"]\nrated = false\n\
         [challenge.bots]\nvariants = [\"standard\"]\nspeeds = [\"bullet\", \"blitz\"]\n\
         bullet_requires_increment = true\nmax_game_secs = 900\nmin_rating = 1800\n",
    )
    .unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    for line in [
        "challenges from humans: standard chess960 fromPosition; rapid classical; \
         base 0..=10800 s, increment 0..=180 s; casual only; rating 0..=4000 ([challenge.humans])",
        "challenges from bots: standard; bullet blitz; base 0..=10800 s, increment 0..=180 s, \
         bullet needs an increment, games up to 900 s; rated or casual; rating 1800..=4000 \
         ([challenge.bots])",
        "challenge queue: up to 10, titled, humans first, then by arrival",
    ] {
        assert!(stdout.contains(line), "{line:?} not in: {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_matchmaking_and_limit_keys_are_named() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    for (config, key) in [
        (
            "[matchmaking]\ntime_controls = [\"fast\"]\n",
            "matchmaking.time_controls",
        ),
        (
            "[challenge]\nreserved_for_humans = 1\n",
            "challenge.reserved_for_humans",
        ),
        (
            "[challenge]\nmax_days_per_turn = 30\n",
            "challenge.max_days_per_turn",
        ),
        ("[bot]\nbot_games_per_day = 101\n", "bot.bot_games_per_day"),
        (
            "[challenge.bots]\nmin_base = 900\nmax_base = 300\n",
            "challenge.bots.min_base",
        ),
        (
            "[challenge.humans]\nspeedz = [\"blitz\"]\n",
            "challenge.humans.speedz",
        ),
        (
            "[challenge.humans]\nvariants = [\"atomic\"]\n",
            "challenge.humans.variants",
        ),
        (
            "[challenge]\nqueue_first = [\"grandmasters\"]\n",
            "challenge.queue_first",
        ),
    ] {
        std::fs::write(&path, config).unwrap();
        let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(78),
            "stdout: {stdout}\nstderr: {stderr}"
        );
        assert!(stderr.contains(key), "{key} not in: {stderr}");
    }
}

/// A clock Lichess does not take for a challenge: the key and the
/// allowed values are named, before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matchmaking_clock_lichess_refuses_is_named_with_the_allowed_values() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(
        &path,
        "[matchmaking]\nenabled = true\ntime_controls = [\"3+2\", \"2.5+1\"]\n",
    )
    .unwrap();
    for command in ["check", "run"] {
        let out = kaissa(
            &fake,
            &fake.token(),
            command,
            &["--config", path.to_str().unwrap()],
        )
        .await;
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(78),
            "stdout: {stdout}\nstderr: {stderr}"
        );
        assert!(stderr.contains("matchmaking.time_controls"), "{stderr}");
        assert!(stderr.contains("\"2.5+1\""), "{stderr}");
        assert!(
            stderr.contains("0, 0.25, 0.5, 0.75, 1 or 1.5 minutes or whole minutes up to 180")
                && stderr.contains("0 to 60 seconds"),
            "{stderr}"
        );
    }
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
}

/// The token's scopes against the features configured: no `bot:play` is
/// an error (exit 77, at `check` and at `run`); a `bot:play` token needs
/// nothing more for matchmaking and arenas (lila takes it there), only
/// `team:write` for a team battle's team.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_scopes_are_checked_against_the_features() {
    let fake = FakeLichess::start_with(FakeConfig {
        scopes: "challenge:read,board:play".to_owned(),
        ..FakeConfig::default()
    })
    .await;
    for command in ["check", "run"] {
        let out = kaissa(&fake, &fake.token(), command, &[]).await;
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(77),
            "stdout: {stdout}\nstderr: {stderr}"
        );
        assert!(stderr.contains("bot:play"), "{command}: {stderr}");
        assert!(!stdout.contains(&fake.token()) && !stderr.contains(&fake.token()));
    }
    let fake = FakeLichess::start_with(FakeConfig {
        scopes: "bot:play".to_owned(),
        ..FakeConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(
        &path,
        "[matchmaking]\nenabled = true\n\
         [[tournaments.arenas]]\nid = \"arena001\"\nteam = \"coders\"\njoin_team = true\n",
    )
    .unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("token scopes: bot:play"), "{stdout}");
    assert!(!stderr.contains("challenge:write"), "{stderr}");
    assert!(!stderr.contains("tournament:write"), "{stderr}");
    assert!(
        stderr.contains("lacks the team:write scope, needed for joining the teams"),
        "{stderr}"
    );
    assert!(!stdout.contains(&fake.token()) && !stderr.contains(&fake.token()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_needs_the_confirmation_flag() {
    let fake = human_account().await;
    let out = kaissa(&fake, &fake.token(), "upgrade", &[]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("--yes-i-understand"), "stderr: {stderr}");
    assert!(!fake.view(|v| v.is_bot()));
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.path == "/api/bot/account/upgrade")
    );
    let out = kaissa(&fake, &fake.token(), "upgrade", &["--yes-i-understand"]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("KaissaBot is now a BOT account"),
        "{stdout}"
    );
    assert!(fake.view(|v| v.is_bot()));
    // Once more: nothing to do.
    let out = kaissa(&fake, &fake.token(), "upgrade", &["--yes-i-understand"]).await;
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(stdout.contains("already"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_move_sources_and_refuses_a_missing_book() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kaissa.toml");
    let book = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gnuchess-2ply.bin");
    std::fs::write(
        &config,
        format!(
            "[sources]\nbook_files = [\"{book}\"]\nbook_selection = \"best\"\n\
             cloud_eval = true\nonline_timeout_ms = 500\n\
             [sources.books.zh]\nfile = \"{book}\"\nvariants = [\"crazyhouse\", \"atomic\"]\n\
             speeds = [\"blitz\", \"rapid\"]\ncolors = [\"white\"]\nselection = \"uniform\"\n\
             depth = 6\nmin_weight = 10\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = check(&fake, &fake.token(), &["--config", config]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    // Each book with the games it is asked in and how it plays, in the
    // order they are asked.
    let zh = format!(
        "book zh: {book} (407 entries; variants crazyhouse, atomic; speeds blitz, rapid; \
         colours white; uniform selection, first 6 moves, min weight 10)"
    );
    let files = format!(
        "book book_files: {book} (407 entries; variants standard, fromPosition; speeds all; \
         colours both; best selection, first 20 moves, min weight 0)"
    );
    let (Some(at_zh), Some(at_files)) = (stdout.find(&zh), stdout.find(&files)) else {
        panic!("stdout: {stdout}");
    };
    assert!(at_zh < at_files, "stdout: {stdout}");
    assert!(stdout.contains("tablebases: none"), "stdout: {stdout}");
    assert!(
        stdout.contains("online sources: cloud eval (first 20 moves, depth >= 20) (timeout 500 ms"),
        "stdout: {stdout}"
    );
    let missing = tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .args(["check", "--config", config])
        .env_remove("CREDENTIALS_DIRECTORY")
        .env("LICHESS_BOT_TOKEN", fake.token())
        .env("KAISSA_LICHESS__URL", fake.url())
        .env("KAISSA_SOURCES__BOOK_FILES", "/nonexistent/book.bin")
        .output()
        .await
        .unwrap();
    let (_, stderr) = text(&missing);
    assert_eq!(missing.status.code(), Some(78), "stderr: {stderr}");
    assert!(
        stderr.contains("sources.book_files: cannot read /nonexistent/book.bin"),
        "stderr: {stderr}"
    );
}

/// `kaissa check` starts each external engine once and names it with what
/// it plays; an engine that cannot start fails the check (exit 78) with
/// its path named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_names_the_external_engines_and_what_they_play() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        return;
    };
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kaissa.toml");
    std::fs::write(
        &path,
        format!(
            "[challenge]\nvariants = [\"standard\", \"crazyhouse\", \"atomic\"]\n\
             [engines.fairy]\ncommand = \"{}\"\nvariants = [\"crazyhouse\", \"atomic\"]\n\
             speeds = [\"blitz\", \"rapid\"]\nopponents = \"humans\"\n",
            engine.display()
        ),
    )
    .unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    // The name as the engine gives it: a build from source carries its
    // build date (ddmmyy) as its version.
    let (name, author) = engine_id(&engine);
    assert!(name.starts_with("Fairy-Stockfish "), "id name {name}");
    assert!(
        stdout.contains(&format!(
            "engine fairy: {name} by {author}; plays crazyhouse, atomic \
             (blitz, rapid; humans only)"
        )),
        "stdout: {stdout}"
    );

    std::fs::write(
        &path,
        "[challenge]\nvariants = [\"standard\", \"horde\"]\n\
         [engines.broken]\ncommand = \"/nonexistent/engine\"\nvariants = [\"horde\"]\n",
    )
    .unwrap();
    let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(78),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("engine broken: UNUSABLE"),
        "stdout: {stdout}"
    );
    assert!(stdout.contains("/nonexistent/engine"), "stdout: {stdout}");
}

/// The `id name` and `id author` an engine answers to `uci`.
fn engine_id(engine: &std::path::Path) -> (String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(engine)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"uci\nquit\n")
        .unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    let field = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no `{key}` in {out}"))
            .trim()
            .to_string()
    };
    (field("id name "), field("id author "))
}

/// More games than search threads with bullet allowed: `kaissa check`
/// says a game may wait and what kaissa does about it; with a thread a
/// game, or without bullet, it says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_games_than_threads_with_bullet_is_warned_about() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("[bot]\nconcurrency = 6\n[engine]\nthreads = 1", true),
        ("[bot]\nconcurrency = 6\n[engine]\nthreads = 6", false),
        (
            "[bot]\nconcurrency = 6\n[engine]\nthreads = 2\n\
             [challenge]\nspeeds = [\"blitz\", \"rapid\"]",
            false,
        ),
    ];
    for (i, (config, warned)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("k{i}.toml"));
        std::fs::write(&path, config).unwrap();
        let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "{config}\nstdout: {stdout}\nstderr: {stderr}"
        );
        assert_eq!(
            stderr.contains("bot.concurrency (6) is above engine.threads"),
            warned,
            "{config}\nstderr: {stderr}"
        );
        assert!(stdout.contains("search threads: "), "{stdout}");
        if warned {
            assert!(stderr.contains("cuts a longer search short"), "{stderr}");
            assert!(stdout.contains("shared by urgency"), "{stdout}");
        }
    }
}

/// External engines whose tables cannot fit the shipped unit's memory
/// limit: `kaissa check` says how much the configuration can take and
/// what to raise; the shipped configuration fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_that_cannot_fit_the_memory_limit_are_warned_about() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[bot]\nconcurrency = 1\n[engine]\nhash_mb = 64",
            false,
            "up to about 224 MiB",
        ),
        (
            "[bot]\nconcurrency = 2\n[engine]\nhash_mb = 32\n\
             [engines.fairy]\ncommand = \"/nonexistent/fairy\"\nvariants = [\"crazyhouse\"]\n\
             options = { Hash = 256 }",
            true,
            "up to about 764 MiB (192 for kaissa, 572 for external engines)",
        ),
    ];
    for (i, (config, warned, summary)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("m{i}.toml"));
        std::fs::write(&path, config).unwrap();
        let out = check(&fake, &fake.token(), &["--config", path.to_str().unwrap()]).await;
        let (stdout, stderr) = text(&out);
        assert!(stdout.contains(summary), "{config}\nstdout: {stdout}");
        assert_eq!(
            stderr.contains("more than the shipped unit's MemoryMax (256 MiB)"),
            warned,
            "{config}\nstderr: {stderr}"
        );
    }
}
