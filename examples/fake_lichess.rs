//! The fake Lichess server of the integration tests (`tests/support`),
//! run on its own for `scripts/systemd-test.sh`: it serves on 127.0.0.1,
//! prints `URL TOKEN` as its first line, then takes commands on stdin, one
//! per line, and answers each with one line on stdout:
//!
//! - `challenge LIMIT INC THINK_MS [VARIANT]`: a human challenges the
//!   bot to a game (LIMIT+INC seconds; standard chess, or Lichess's
//!   VARIANT key such as `crazyhouse`) and plays it by itself, thinking
//!   THINK_MS per move; answers the challenge id (the game id).
//! - `wait-stream SECS`: `ok` once the bot's event stream is open.
//! - `wait-plies ID N SECS`: `ok PLIES` once game ID has N plies.
//! - `wait-over ID SECS`: `over` and the game's record once it is over.
//! - `game ID`: the game's record now (`status=started` while it runs).
//! - `challenge-status ID`: `created`, `accepted`, `declined`...
//! - `connections`: how many event streams the bot has opened so far.
//!
//! A wait that times out answers `timeout` and what it waited for; an
//! unknown command answers `error` and why.
//!
//! ```sh
//! cargo run --release --example fake_lichess
//! ```

#[path = "../tests/support/fake_lichess/mod.rs"]
#[allow(dead_code)]
mod fake_lichess;

use fake_lichess::{AutoPlay, ChallengeSpec, FakeLichess, GameRecord, Policy};
use std::io::Write;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let fake = FakeLichess::start().await;
    say(&format!("{} {}", fake.url(), fake.token()));
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match answer(&fake, &words).await {
            Ok(text) | Err(text) => text,
        };
        say(&answer);
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn answer(fake: &FakeLichess, words: &[&str]) -> Result<String, String> {
    let num = |i: usize| -> Result<u64, String> {
        words
            .get(i)
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| format!("error: argument {i} of {words:?} is not a number"))
    };
    let id = || words.get(1).copied().ok_or("error: no game id".to_owned());
    let timeout = |e: String| format!("timeout: {e}");
    match words.first().copied() {
        Some("challenge") => {
            let think = Duration::from_millis(num(3)?);
            let autoplay = AutoPlay {
                policy: Policy::Greedy,
                think,
                accept_draws: false,
            };
            let mut spec = ChallengeSpec::default()
                .clock(num(1)? as u32, num(2)? as u32)
                .autoplay(Some(autoplay));
            if let Some(key) = words.get(4) {
                spec = spec.variant_key(key);
            }
            Ok(fake.send_challenge(spec))
        }
        Some("wait-stream") => {
            let secs = Duration::from_secs(num(1)?);
            fake.wait_event_stream(secs).await.map_err(timeout)?;
            Ok("ok".to_owned())
        }
        Some("wait-plies") => {
            let (id, plies, secs) = (id()?, num(2)? as usize, Duration::from_secs(num(3)?));
            let what = format!("{plies} plies in game {id}");
            let n = fake
                .wait_for(&what, secs, |v| {
                    v.game(id).map(|g| g.moves.len()).filter(|&n| n >= plies)
                })
                .await
                .map_err(timeout)?;
            Ok(format!("ok {n}"))
        }
        Some("wait-over") => {
            let secs = Duration::from_secs(num(2)?);
            let game = fake.wait_game_over(id()?, secs).await.map_err(timeout)?;
            Ok(format!("over {}", describe(&game)))
        }
        Some("game") => fake
            .game(id()?)
            .map(|g| describe(&g))
            .ok_or_else(|| "error: no such game".to_owned()),
        Some("challenge-status") => fake
            .challenge(id()?)
            .map(|c| c.status)
            .ok_or_else(|| "error: no such challenge".to_owned()),
        Some("connections") => Ok(fake.view(|v| v.event_stream_connections()).to_string()),
        _ => Err(format!("error: unknown command {words:?}")),
    }
}

/// One line: status, winner, the bot's colour, plies, clocks, illegal
/// moves tried and game streams opened.
fn describe(g: &GameRecord) -> String {
    let color = |c: shakmaty::Color| if c.is_white() { "white" } else { "black" };
    format!(
        "status={} winner={} bot={} plies={} wtime_ms={} btime_ms={} illegal={} streams={}",
        g.status,
        g.winner.map_or("none", color),
        color(g.bot_color),
        g.moves.len(),
        g.wtime_ms,
        g.btime_ms,
        g.illegal_moves.len(),
        g.stream_connections
    )
}
