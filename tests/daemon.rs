//! The daemon's challenge handling against the fake Lichess server: each
//! challenge is accepted or declined with the right reason.

use crate::support;

use std::time::Duration;

use kaissa::bot::daemon::Daemon;
use kaissa::config::{AcceptedSpeed, Config, PlayableVariant};
use kaissa::lichess::{Client, ClientOptions, RetryPolicy, Token};
use support::fake_lichess::{ChallengeSpec, FakeLichess, FakeTime, FakeVariant, Opponent};

const WAIT: Duration = Duration::from_secs(10);

fn client(fake: &FakeLichess) -> Client {
    let options = ClientOptions {
        base_url: fake.url(),
        rate_limit_pause: Duration::from_millis(300),
        stream_silence_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        },
        ..ClientOptions::default()
    };
    Client::new(Token::new(fake.token()).unwrap(), options).unwrap()
}

async fn outcome(fake: &FakeLichess, id: &str) -> (String, Option<String>) {
    fake.wait_until(&format!("challenge {id} answered"), WAIT, |v| {
        v.challenge(id).is_some_and(|c| c.status != "created")
    })
    .await
    .unwrap();
    let c = fake.challenge(id).unwrap();
    (c.status, c.decline_reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenges_are_accepted_or_declined_with_the_right_reason() {
    let fake = FakeLichess::start().await;
    let mut config = Config::default();
    config.bot.concurrency = 1;
    config.challenge.variants = vec![PlayableVariant::Standard];
    config.challenge.speeds = vec![
        AcceptedSpeed::Bullet,
        AcceptedSpeed::Blitz,
        AcceptedSpeed::Rapid,
    ];
    config.challenge.min_base = 60;
    config.challenge.max_base = 1200;
    config.challenge.rated = false;
    config.challenge.accept_bots = false;
    let (tx, rx) = tokio::sync::watch::channel(kaissa::bot::daemon::Stop::No);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    let declined = |reason: &str| ("declined".to_owned(), Some(reason.to_owned()));
    let c = fake.send_challenge(
        ChallengeSpec::default().variant(FakeVariant::Chess960 { position: Some(0) }),
    );
    // A variant where standard would do: "not accepting variant challenges".
    assert_eq!(outcome(&fake, &c).await, declined("standard"));
    let c = fake.send_challenge(ChallengeSpec::default().clock(15, 0));
    assert_eq!(outcome(&fake, &c).await, declined("tooFast"));
    let c = fake.send_challenge(ChallengeSpec::default().clock(1500, 0));
    assert_eq!(outcome(&fake, &c).await, declined("tooSlow"));
    let c =
        fake.send_challenge(ChallengeSpec::default().time(FakeTime::Correspondence { days: 2 }));
    assert_eq!(outcome(&fake, &c).await, declined("timeControl"));
    let c = fake.send_challenge(ChallengeSpec::default().rated(true));
    assert_eq!(outcome(&fake, &c).await, declined("rated"));
    let c = fake.send_challenge(ChallengeSpec::default().challenger(Opponent::bot("OtherBot")));
    assert_eq!(outcome(&fake, &c).await, declined("noBot"));

    // One slot: the first good challenge is accepted, the next is "later".
    let first = fake.send_challenge(ChallengeSpec::default().autoplay(None));
    assert_eq!(outcome(&fake, &first).await.0, "accepted");
    let c = fake.send_challenge(ChallengeSpec::default().autoplay(None));
    assert_eq!(outcome(&fake, &c).await, declined("later"));

    tx.send(kaissa::bot::daemon::Stop::Resign).unwrap();
    tokio::time::timeout(WAIT, daemon)
        .await
        .expect("the daemon stops on shutdown")
        .unwrap()
        .unwrap();
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kaissa_run_logs_each_decision_and_stops_on_sigterm() {
    let fake = FakeLichess::start().await;
    let secret = fake.token();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .arg("run")
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("RUST_LOG")
        .env("LICHESS_BOT_TOKEN", &secret)
        .env("KAISSA_LICHESS__URL", fake.url())
        .env("KAISSA_CHALLENGE__ACCEPT_BOTS", "false")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start kaissa run");
    fake.wait_event_stream(WAIT).await.unwrap();
    let c = fake.send_challenge(ChallengeSpec::default().challenger(Opponent::bot("OtherBot")));
    assert_eq!(
        outcome(&fake, &c).await,
        ("declined".to_owned(), Some("noBot".to_owned()))
    );

    let pid = child.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("kaissa run stops on SIGTERM")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains(&c))
        .unwrap_or_else(|| panic!("no log line for {c}: {stderr}"));
    assert!(line.contains("decline") && line.contains("noBot"), "{line}");
    assert!(!stderr.contains('\u{1b}'), "no colours in a pipe: {line}");
    assert!(!stderr.contains(&secret));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kaissa_run_stops_on_a_rejected_token_without_printing_it() {
    let fake = FakeLichess::start().await;
    let secret = "lip_wrong_secret_token_55555";
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .arg("run")
        .env_remove("CREDENTIALS_DIRECTORY")
        .env("LICHESS_BOT_TOKEN", secret)
        .env("KAISSA_LICHESS__URL", fake.url())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, out)
        .await
        .expect("kaissa run gives up on a 401")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 77: fatal, the systemd units do not restart it.
    assert_eq!(out.status.code(), Some(77), "stderr: {stderr}");
    assert!(stderr.contains("401"), "stderr: {stderr}");
    assert!(!stderr.contains(secret) && !String::from_utf8_lossy(&out.stdout).contains(secret));
}

/// Under journald (`JOURNAL_STREAM` names stderr) every line starts with
/// its syslog priority and has no timestamp of its own; with another
/// stderr the variable is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_journald_lines_have_a_priority_and_no_timestamp() {
    use std::os::unix::fs::MetadataExt;
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let run = |journal: bool| {
        let path = dir.path().join(format!("stderr-{journal}"));
        let file = std::fs::File::create(&path).unwrap();
        let meta = file.metadata().unwrap();
        let stream = if journal {
            format!("{}:{}", meta.dev(), meta.ino())
        } else {
            format!("{}:{}", meta.dev(), meta.ino() + 1)
        };
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"));
        command
            .arg("run")
            .env_remove("CREDENTIALS_DIRECTORY")
            .env("LICHESS_BOT_TOKEN", "lip_rejected_token_4321")
            .env("KAISSA_LICHESS__URL", fake.url())
            .env("RUST_LOG", "debug")
            .env("KAISSA_SOURCES__BOOK_FILES", "")
            .env("JOURNAL_STREAM", stream)
            .stderr(file)
            .kill_on_drop(true);
        async move {
            let status = tokio::time::timeout(WAIT, command.status())
                .await
                .expect("kaissa run gives up on a 401")
                .unwrap();
            assert_eq!(status.code(), Some(77));
            std::fs::read_to_string(path).unwrap()
        }
    };
    let journal = run(true).await;
    let lines: Vec<&str> = journal.lines().collect();
    assert!(lines.len() >= 2, "{journal}");
    for line in &lines {
        let priority = line.strip_prefix('<').and_then(|rest| rest.split_once('>'));
        assert!(
            priority.is_some_and(|(p, _)| matches!(p, "3" | "4" | "6" | "7")),
            "no priority: {line:?}"
        );
        let text = priority.map_or("", |(_, rest)| rest).trim_start();
        assert!(
            !text.starts_with("20") && !text.contains("Z "),
            "a timestamp? {line:?}"
        );
    }
    assert!(lines.last().unwrap().starts_with("<3>error: "), "{journal}");
    assert!(lines.iter().any(|l| l.starts_with("<7>")), "{journal}");

    let plain = run(false).await;
    assert!(plain.lines().all(|l| !l.starts_with('<')), "{plain}");
    assert!(
        plain.lines().any(|l| l.starts_with("20")),
        "timestamps: {plain}"
    );
}

/// A configuration whose games are quick: shallow searches, small hash.
fn fast_config() -> Config {
    let mut config = Config::default();
    config.engine.max_depth = 3;
    config.engine.hash_mb = 4;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_decline_reasons() {
    let fake = FakeLichess::start().await;
    let mut config = fast_config();
    config.bot.concurrency = 2;
    config.challenge.variants = vec![PlayableVariant::Chess960];
    config.challenge.only_bots = true;
    config.challenge.casual = false;
    config.challenge.block_list = vec!["Mallory".into()];
    let (tx, rx) = tokio::sync::watch::channel(kaissa::bot::daemon::Stop::No);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    let declined = |reason: &str| ("declined".to_owned(), Some(reason.to_owned()));
    let c = fake.send_challenge(ChallengeSpec::default().challenger(Opponent::bot("Mallory")));
    assert_eq!(outcome(&fake, &c).await, declined("generic"));
    let c = fake.send_challenge(ChallengeSpec::default().challenger(Opponent::human("Bob")));
    assert_eq!(outcome(&fake, &c).await, declined("onlyBot"));
    // Standard, which is not accepted: "not willing to play this variant".
    let c = fake.send_challenge(ChallengeSpec::default().challenger(Opponent::bot("Robo")));
    assert_eq!(outcome(&fake, &c).await, declined("variant"));
    let c = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::bot("Robo"))
            .variant(FakeVariant::Chess960 { position: None })
            .rated(false),
    );
    assert_eq!(outcome(&fake, &c).await, declined("casual"));

    tx.send(kaissa::bot::daemon::Stop::Resign).unwrap();
    tokio::time::timeout(WAIT, daemon)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// A challenge from a player without an account (`challenger: null`):
/// its line no longer parsed, so it was skipped and never answered. It is
/// declined (`generic`), and the next challenge is played as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_challenge_is_declined() {
    let fake = FakeLichess::start().await;
    let mut config = fast_config();
    config.bot.concurrency = 1;
    let (tx, rx) = tokio::sync::watch::channel(kaissa::bot::daemon::Stop::No);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    let anonymous = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::anonymous())
            .autoplay(None),
    );
    assert_eq!(
        outcome(&fake, &anonymous).await,
        ("declined".to_owned(), Some("generic".to_owned()))
    );
    // The same challenge from Alice: accepted, on the only slot.
    let alice = fake.send_challenge(ChallengeSpec::default().autoplay(None));
    assert_eq!(outcome(&fake, &alice).await.0, "accepted");

    tx.send(kaissa::bot::daemon::Stop::Resign).unwrap();
    tokio::time::timeout(WAIT, daemon)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_challenge_whose_game_never_starts_gives_its_slot_back() {
    let fake = FakeLichess::start().await;
    let mut config = fast_config();
    config.bot.concurrency = 1;
    config.bot.game_start_timeout_secs = 1;
    let (tx, rx) = tokio::sync::watch::channel(kaissa::bot::daemon::Stop::No);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    fake.accept_without_game(1);
    let ghost = fake.send_challenge(ChallengeSpec::default());
    assert_eq!(outcome(&fake, &ghost).await.0, "accepted");
    // The slot is held while the game may still start...
    let c = fake.send_challenge(ChallengeSpec::default());
    assert_eq!(outcome(&fake, &c).await.1.as_deref(), Some("later"));
    // ...and given back when it does not.
    let mut accepted = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let c = fake.send_challenge(ChallengeSpec::default());
        if outcome(&fake, &c).await.0 == "accepted" {
            accepted = Some(c);
            break;
        }
    }
    let game = accepted.expect("a slot is free again");
    let record = fake
        .wait_game_over(&game, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        record.illegal_moves.is_empty(),
        "{:?}",
        record.illegal_moves
    );

    tx.send(kaissa::bot::daemon::Stop::Resign).unwrap();
    tokio::time::timeout(WAIT, daemon)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_that_failed_on_our_side_but_not_on_the_server_is_played_within_the_limit() {
    let fake = FakeLichess::start().await;
    let mut config = fast_config();
    config.bot.concurrency = 1;
    config.bot.game_start_timeout_secs = 30;
    let (tx, rx) = tokio::sync::watch::channel(kaissa::bot::daemon::Stop::No);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    fake.accept_then_fail(1);
    // The opponent waits, so the game stays in progress.
    let game = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(support::fake_lichess::Side::White)
            .autoplay(None),
    );
    fake.wait_until("the game started", WAIT, |v| v.game(&game).is_some())
        .await
        .unwrap();
    // The bot's accept failed (503, then 404), yet the game holds the slot.
    let c = fake.send_challenge(ChallengeSpec::default());
    assert_eq!(outcome(&fake, &c).await.1.as_deref(), Some("later"));
    fake.opponent_move(&game, "e2e4").unwrap();
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&game).is_some_and(|g| g.moves.len() == 2)
    })
    .await
    .unwrap();
    fake.opponent_resigns(&game).unwrap();
    // The game is over: the slot is free again.
    let mut accepted = false;
    for _ in 0..50 {
        let c = fake.send_challenge(ChallengeSpec::default());
        if outcome(&fake, &c).await.0 == "accepted" {
            accepted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(accepted, "the slot was released after the game");
    assert_eq!(fake.max_simultaneous_games(), 1);

    tx.send(kaissa::bot::daemon::Stop::Resign).unwrap();
    tokio::time::timeout(WAIT, daemon)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// `password=-` reads the arena's password from standard input: an empty
/// input is refused before anything is sent (exit status 2), naming the
/// term, not a socket error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kaissa_ctl_reads_a_password_from_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .args(["ctl", "--socket"])
        .arg(dir.path().join("control.sock"))
        .args(["tournament", "join", "hL7vMrFQ", "password=-"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, out).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("password=-"), "stderr: {stderr}");
}
