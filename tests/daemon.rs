//! The daemon's challenge handling against the fake Lichess server: each
//! challenge is accepted or declined with the right reason.

mod support;

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
    let (tx, rx) = tokio::sync::watch::channel(false);
    let daemon = tokio::spawn(Daemon::new(client(&fake), config).run(rx));
    fake.wait_event_stream(WAIT).await.unwrap();

    let declined = |reason: &str| ("declined".to_owned(), Some(reason.to_owned()));
    let c = fake.send_challenge(
        ChallengeSpec::default().variant(FakeVariant::Chess960 { position: Some(0) }),
    );
    assert_eq!(outcome(&fake, &c).await, declined("variant"));
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

    tx.send(true).unwrap();
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
    assert!(!out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("401"), "stderr: {stderr}");
    assert!(!stderr.contains(secret) && !String::from_utf8_lossy(&out.stdout).contains(secret));
}
