//! The real `kaissa run` binary as a child process of a test: a temporary
//! directory with its configuration and logs, started, signalled,
//! killed and restarted on the same configuration, and stopped with a
//! check of its exit and log (no token, no panic).
//!
//! Each test module writes its own settings and `start` (an `impl Bot` in
//! the test file) on top of [`Bot::configured`] and [`Bot::spawn`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::fake_lichess::{ChallengeSpec, FakeLichess};

/// How long a stopped or killed daemon may take to exit.
const EXIT_WAIT: Duration = Duration::from_secs(20);

/// A `kaissa run` process, restartable on the same configuration; each
/// run logs to its own file.
pub struct Bot {
    pub child: Option<tokio::process::Child>,
    pub dir: tempfile::TempDir,
    /// The configuration file.
    pub config: PathBuf,
    pub token: String,
    /// Runs started so far.
    pub runs: usize,
    /// Extra environment of the next runs.
    pub env: Vec<(String, String)>,
    /// `RUST_LOG` of the next runs.
    pub log_filter: String,
}

impl Bot {
    /// A bot in a fresh temporary directory, not started, configured by
    /// `config(dir)` (TOML; repeated sections are folded, see
    /// [`merge_sections`]). It presents the token of `fake`.
    pub fn configured(fake: &FakeLichess, config: impl FnOnce(&Path) -> String) -> Bot {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kaissa.toml");
        // No opening book unless the test asks for one: what the machine
        // has installed (gnuchess-book is the default) must not change the
        // games.
        let text = format!("[sources]\nbook_files = []\n{}", config(dir.path()));
        std::fs::write(&path, merge_sections(&text)).unwrap();
        Bot {
            child: None,
            dir,
            config: path,
            token: fake.token(),
            runs: 0,
            env: Vec::new(),
            log_filter: "info,kaissa=debug".to_owned(),
        }
    }

    /// Starts a run (without waiting for anything).
    pub fn spawn(&mut self) {
        self.runs += 1;
        let log = std::fs::File::create(self.log_path(self.runs)).unwrap();
        // `KAISSA_BIN` runs another build (a benchmark's "before").
        let bin = std::env::var_os("KAISSA_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_kaissa")),
            PathBuf::from,
        );
        let mut command = tokio::process::Command::new(bin);
        command
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .env_remove("CREDENTIALS_DIRECTORY")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env("RUST_LOG", &self.log_filter)
            .env("LICHESS_BOT_TOKEN", &self.token)
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        self.child = Some(command.spawn().expect("start kaissa run"));
    }

    pub fn log_path(&self, run: usize) -> PathBuf {
        self.dir.path().join(format!("kaissa-{run}.log"))
    }

    /// The log of every run so far.
    pub fn log(&self) -> String {
        (1..=self.runs)
            .map(|run| std::fs::read_to_string(self.log_path(run)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until the log holds `needle`; panics with the log after
    /// `timeout`.
    pub async fn wait_log(&self, needle: &str, timeout: std::time::Duration) {
        let until = std::time::Instant::now() + timeout;
        while !self.log().contains(needle) {
            assert!(
                std::time::Instant::now() < until,
                "no {needle:?} in the log: {}",
                self.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    pub fn pgn_dir(&self) -> PathBuf {
        self.dir.path().join("pgn")
    }

    /// The running process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().and_then(|c| c.id()).expect("running")
    }

    /// Sends a signal (`TERM`, `INT`, `KILL`...) to the running process.
    pub fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit; returns its exit status. It polls
    /// rather than wait for SIGCHLD: every test of the binary shares the
    /// process, and a wakeup is not what is tested here.
    pub async fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let until = tokio::time::Instant::now() + timeout;
        let child = self.child.as_mut().expect("running");
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if tokio::time::Instant::now() >= until {
                // Running, or stopped in what (for the next reader)?
                let pid = child.id().unwrap_or(0);
                let state = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|s| {
                        s.lines()
                            .find(|l| l.starts_with("State:"))
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                let stack =
                    std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
                panic!(
                    "kaissa run did not exit ({state}, wchan {stack}): {}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        self.child = None;
        status
    }

    /// SIGKILL: no goodbye, no cleanup.
    pub async fn kill(&mut self) {
        self.signal("KILL");
        let status = self.wait_exit(EXIT_WAIT).await;
        assert!(!status.success());
    }

    /// SIGTERM, expecting a clean exit; returns the whole log, checked for
    /// the token and panics. `KAISSA_E2E_SHOW_LOG=1` prints it.
    pub async fn stop(mut self) -> String {
        self.signal("TERM");
        let status = self.wait_exit(EXIT_WAIT).await;
        let log = self.log();
        if std::env::var_os("KAISSA_E2E_SHOW_LOG").is_some() {
            eprintln!("{log}");
        }
        assert!(status.success(), "exit {status}: {log}");
        check_log(&log, &self.token);
        log
    }
}

/// Runs `kaissa ctl --socket SOCKET words...`: success, and its output.
pub fn ctl(socket: &Path, words: &str) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kaissa"))
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words.split_whitespace())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A daemon's log never holds the token or a panic.
pub fn check_log(log: &str, token: &str) {
    assert!(!log.contains(token), "the token is in the log");
    assert!(!log.contains("panicked"), "{log}");
}

/// TOML does not allow a section or a key twice: fold repeated
/// `[section]`s, the later value of a key winning (each `[[array]]`
/// header stays an entry of its own).
pub fn merge_sections(text: &str) -> String {
    let mut sections: Vec<(String, Vec<String>)> = vec![(String::new(), Vec::new())];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("[[") {
            // An array of tables: each header is a new entry.
            sections.push((line.to_owned(), Vec::new()));
        } else if line.starts_with('[') {
            if !sections.iter().any(|(name, _)| name == line) {
                sections.push((line.to_owned(), Vec::new()));
            }
            let index = sections.iter().position(|(name, _)| name == line).unwrap();
            let entry = sections.remove(index);
            sections.push(entry);
        } else if let Some((_, lines)) = sections.last_mut() {
            // A key given twice: the later value wins.
            let key = line.split('=').next().unwrap_or("").trim().to_owned();
            lines.retain(|l| l.split('=').next().unwrap_or("").trim() != key);
            lines.push(line.to_owned());
        }
    }
    let mut out = String::new();
    for (name, lines) in sections {
        if !name.is_empty() {
            out.push_str(&name);
            out.push('\n');
        }
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// What [`bullet_beside_a_long_search`] saw.
pub struct SharedThread {
    pub slow: String,
    /// The bullet game's waits for a search thread on the clock (from
    /// ply 2: Lichess starts the clocks once both sides have moved), µs.
    pub queued: Vec<u64>,
    /// The longest wait of its first move (off the clock), µs.
    pub first_queued: u64,
    pub log: String,
}

impl SharedThread {
    /// The bullet game was served in time: its first move (off the
    /// clock) waited under 1.5 s (a 16th of 16 s, and the cut), at least
    /// three moves on the clock under 600 ms each (a 16th of its budget,
    /// about 125 ms for 1+0, and the cut search's answer).
    pub fn assert_served(&self) {
        let (queued, log) = (&self.queued, &self.log);
        assert!(
            self.first_queued < 1_500_000,
            "the first move waited {} us\n{log}",
            self.first_queued
        );
        assert!(queued.len() >= 3, "{queued:?}\n{log}");
        let worst = queued.iter().max().copied().unwrap_or(0);
        assert!(
            worst < 600_000,
            "a bullet move waited {worst} us: {queued:?}\n{log}"
        );
    }
}

/// What the lines of game `id`'s task carry: its span, `game{id=ID}`.
pub fn game_span(id: &str) -> String {
    format!("game{{id={id}}}")
}

/// The value of `key=` in a log line, parsed (a number, a bool...).
pub fn log_field<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    line[start..].split(' ').next()?.parse().ok()
}

/// The scheduling scene: `slow` (a long clock, the bot thinking long)
/// starts; once the bot searches its second move, `bullet` starts and
/// plays `plies` plies (or ends); the slow game must then move on. The
/// bot is stopped (twice: the slow game is resigned) and its log read.
pub async fn bullet_beside_a_long_search(
    fake: &FakeLichess,
    bot: Bot,
    slow: ChallengeSpec,
    bullet: ChallengeSpec,
    plies: usize,
) -> SharedThread {
    const WAIT: Duration = Duration::from_secs(20);
    const GAME: Duration = Duration::from_secs(240);
    let slow = fake.send_challenge(slow);
    fake.wait_until("the slow game's second move is searched", WAIT, |v| {
        v.game(&slow).is_some_and(|g| g.moves.len() >= 2)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bullet = fake.send_challenge(bullet);
    fake.wait_until("the bullet game's plies, or its end", GAME, |v| {
        v.game(&bullet)
            .is_some_and(|g| g.moves.len() >= plies || g.is_over())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    let slow_plies = fake.view(|v| v.game(&slow).map_or(0, |g| g.moves.len()));
    fake.wait_until("the slow game moves on", GAME, |v| {
        v.game(&slow).is_some_and(|g| g.moves.len() > slow_plies)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    // The first signal lets the slow game finish, the second resigns it.
    bot.signal("TERM");
    bot.wait_log("shutting down", WAIT).await;
    let log = bot.stop().await;
    let key = game_span(&bullet);
    let waits: Vec<(u64, u64)> = log
        .lines()
        .filter(|l| l.contains(&key))
        .filter_map(|l| Some((log_field(l, "ply")?, log_field(l, "queued_us")?)))
        .collect();
    SharedThread {
        slow,
        queued: waits.iter().filter(|w| w.0 >= 2).map(|w| w.1).collect(),
        first_queued: waits
            .iter()
            .filter(|w| w.0 < 2)
            .map(|w| w.1)
            .max()
            .unwrap_or(0),
        log,
    }
}
