//! `kaissa check` against the fake Lichess server, running the real binary.

mod support;

use std::process::Output;

use support::fake_lichess::{FakeConfig, FakeLichess};

async fn check(fake: &FakeLichess, token: &str, extra: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .arg("check")
        .args(extra)
        .env_remove("CREDENTIALS_DIRECTORY")
        .env("LICHESS_BOT_TOKEN", token)
        .env("KAISSA_LICHESS__URL", fake.url())
        .env("RUST_LOG", "debug")
        .output()
        .await
        .expect("run kaissa check")
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
    let fake = FakeLichess::start_with(FakeConfig {
        is_bot: false,
        ..FakeConfig::default()
    })
    .await;
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
async fn reports_the_move_sources_and_refuses_a_missing_book() {
    let fake = FakeLichess::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kaissa.toml");
    let book = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gnuchess-2ply.bin");
    std::fs::write(
        &config,
        format!(
            "[sources]\nbook_files = [\"{book}\"]\nbook_selection = \"best\"\n\
             cloud_eval = true\nonline_timeout_ms = 500\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = check(&fake, &fake.token(), &["--config", config]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("book: ")
            && stdout.contains("(407 entries, Best selection, first 20 moves)"),
        "stdout: {stdout}"
    );
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
