//! The control socket end to end: the real `kaissa run` against the fake
//! Lichess server, driven by the real `kaissa ctl`: the status (text and
//! JSON) with a game in it, matchmaking switched off, a user blocked and
//! unblocked (kept across a restart), a game resigned, a challenge sent.
//!
//! `KAISSA_E2E_SHOW_LOG=1` prints the daemon's log.

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use support::bot::{Bot, ctl};
use support::fake_lichess::{ChallengeSpec, FakeLichess, Opponent, Side};

const WAIT: Duration = Duration::from_secs(20);

/// Starts the daemon against `fake` with its control socket in its
/// directory; the socket's path.
async fn start(fake: &FakeLichess) -> (Bot, PathBuf) {
    start_with(fake, 2, 3600, 2).await
}

/// [`start`] with `bot.concurrency`, `matchmaking.idle_secs` and
/// `matchmaking.challenge_timeout_secs`.
async fn start_with(
    fake: &FakeLichess,
    concurrency: usize,
    idle_secs: u64,
    timeout_secs: u64,
) -> (Bot, PathBuf) {
    let mut bot = Bot::configured(fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             state_dir = \"{}\"\n[bot]\nabort_time_secs = 60\nconcurrency = {concurrency}\n\
             control_socket = \"{}\"\n[matchmaking]\nenabled = true\nidle_secs = {idle_secs}\n\
             challenge_timeout_secs = {timeout_secs}\n",
            fake.url(),
            dir.join("state").display(),
            dir.join("control.sock").display()
        )
    });
    let socket = bot.dir.path().join("control.sock");
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    (bot, socket)
}

async fn wait_status(fake: &FakeLichess, id: &str, status: &str) {
    fake.wait_until(&format!("challenge {id} {status}"), WAIT, |v| {
        v.challenge(id).is_some_and(|c| c.status == status)
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_runs_the_daemon_from_kaissa_ctl() {
    let fake = FakeLichess::start().await;
    let (mut bot, socket) = start(&fake).await;
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "only the service user (and root)");

    // A game by hand: the status shows it, with its opponent and clocks.
    let game = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::human("Carol"))
            .challenger_color(Side::Black)
            .autoplay(None),
    );
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&game).is_some_and(|g| !g.moves.is_empty())
    })
    .await
    .unwrap();
    fake.opponent_move(&game, "e7e5").unwrap();
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&game).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    let (ok, text) = ctl(&socket, "status");
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("{game} vs Carol (white blitz standard)")),
        "{text}"
    );
    assert!(text.contains("matchmaking: on"), "{text}");
    let (ok, text) = ctl(&socket, "status --json");
    assert!(ok, "{text}");
    let status: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(status["games"][0]["id"], game.as_str(), "{status}");
    assert_eq!(status["games"][0]["opponent"], "Carol", "{status}");
    assert_eq!(status["games"][0]["plies"], 3, "{status}");
    assert!(
        status["games"][0]["their_clock_ms"].as_u64().unwrap() > 100_000,
        "{status}"
    );
    assert!(status["games"][0]["score"].is_string(), "{status}");

    // Matchmaking off.
    assert!(ctl(&socket, "matchmaking off").0);
    let (_, text) = ctl(&socket, "status --json");
    let status: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(status["matchmaking"]["enabled"], false, "{status}");

    // A user blocked: declined; unblocked: accepted.
    assert!(ctl(&socket, "block Spammer").0);
    let spam = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::human("Spammer"))
            .autoplay(None),
    );
    wait_status(&fake, &spam, "declined").await;

    // The game resigned from the socket.
    let (ok, text) = ctl(&socket, &format!("resign {game}"));
    assert!(ok, "{text}");
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(over.status, "resign", "{over:?}");
    let (ok, text) = ctl(&socket, "resign nosuchgame");
    assert!(!ok && text.contains("no game nosuchgame"), "{text}");

    // A challenge sent on the operator's word.
    let (ok, text) = ctl(&socket, "challenge Somebody 1+0 white casual");
    assert!(ok, "{text}");
    let sent = fake
        .wait_for("the operator's challenge", WAIT, |v| {
            v.challenges().into_iter().find(|c| {
                c.direction == "out"
                    && c.dest
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case("somebody"))
            })
        })
        .await
        .unwrap();
    assert_eq!(sent.form.get("clock.limit").map(String::as_str), Some("60"));
    assert_eq!(sent.form.get("color").map(String::as_str), Some("white"));
    // It holds a slot while it waits: with the other slot taken by a
    // second one, a third is refused.
    let (ok, text) = ctl(&socket, "challenge Another 1+0");
    assert!(ok, "{text}");
    let (ok, text) = ctl(&socket, "challenge Third 1+0");
    assert!(!ok && text.contains("no free slot"), "{text}");
    // Not answered in matchmaking.challenge_timeout_secs (2 s): withdrawn,
    // and the slots free again.
    wait_status(&fake, &sent.id, "canceled").await;
    fake.wait_until("both withdrawn", WAIT, |v| {
        v.challenges()
            .iter()
            .filter(|c| c.direction == "out")
            .all(|c| c.status == "canceled")
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (ok, text) = ctl(&socket, "challenge Third 1+0");
    assert!(ok, "{text}");

    // Bad commands are named, and change nothing: refused by the client,
    // which knows the grammar, and by the daemon, sent the line as it is.
    let (ok, text) = ctl(&socket, "dance");
    assert!(
        !ok && text.contains("unrecognized subcommand 'dance'"),
        "{text}"
    );
    let reply = kaissa::bot::control::send(&socket, "dance").await.unwrap();
    assert!(
        !reply.ok && reply.text.contains("unknown command \"dance\""),
        "{}",
        reply.text
    );
    let reply = kaissa::bot::control::send(&socket, "block a/b")
        .await
        .unwrap();
    assert!(
        !reply.ok && reply.text.contains("not a Lichess id"),
        "{}",
        reply.text
    );

    // The block outlives a restart; unblocking lets the user in again.
    bot.signal("TERM");
    assert!(bot.wait_exit(WAIT).await.success());
    assert!(!socket.exists(), "the socket goes with the daemon");
    bot.spawn();
    fake.wait_until("the socket", WAIT, |_| socket.exists())
        .await
        .unwrap();
    let again = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::human("Spammer"))
            .autoplay(None),
    );
    wait_status(&fake, &again, "declined").await;
    assert!(ctl(&socket, "unblock Spammer").0);
    let welcome = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::human("Spammer"))
            .autoplay(None),
    );
    wait_status(&fake, &welcome, "accepted").await;
    fake.opponent_resigns(&welcome).unwrap();
    fake.wait_game_over(&welcome, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert!(log.contains("control socket open"), "{log}");
    assert!(log.contains("rule=\"block list\""), "{log}");
}

/// The operator's challenge held the only slot while matchmaking, idle,
/// created a challenge, found no slot for it and cancelled it, over and
/// over. And a matchmaking challenge pending when matchmaking was turned
/// off never timed out: it held its slot for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_waits_for_a_free_slot_and_its_challenge_times_out_when_off() {
    use support::fake_lichess::{Answer, OnlineBot};
    let fake = FakeLichess::start().await;
    let (bot, socket) = start_with(&fake, 1, 1, 4).await;
    let (ok, text) = ctl(&socket, "challenge Somebody 1+0");
    assert!(ok, "{text}");
    fake.set_online_bots(vec![OnlineBot::new("Silent", 2000, Answer::Ignore)]);
    let to_silent = |challenges: Vec<_>| -> Vec<_> {
        challenges
            .into_iter()
            .filter(|c: &support::fake_lichess::ChallengeRecord| {
                c.direction == "out"
                    && c.dest
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case("silent"))
            })
            .collect()
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = to_silent(fake.view(|v| v.challenges()));
    assert!(sent.is_empty(), "{sent:?}\n{}", bot.log());
    // The operator's challenge times out; matchmaking's turn comes.
    let ours = fake
        .wait_for("matchmaking's challenge", WAIT, |v| {
            to_silent(v.challenges()).first().map(|c| c.id.clone())
        })
        .await
        .unwrap();
    assert!(ctl(&socket, "matchmaking off").0);
    wait_status(&fake, &ours, "canceled").await;
    let sent = to_silent(fake.view(|v| v.challenges()));
    assert_eq!(sent.len(), 1, "{sent:?}\n{}", bot.log());
    bot.stop().await;
}

/// SIGTERM withdraws the operator's challenge still waiting for an answer:
/// the daemon does not wait for it (its game would start in the shutdown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_withdraws_the_operators_challenge() {
    use support::fake_lichess::{Answer, OnlineBot};
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Silent", 2000, Answer::Ignore)]);
    let (mut bot, socket) = start_with(&fake, 1, 3600, 300).await;
    let (ok, text) = ctl(&socket, "challenge Silent 1+1");
    assert!(ok, "{text}");
    let id = fake
        .wait_for("the operator's challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.id)
        })
        .await
        .unwrap();
    bot.wait_log("challenge sent by the control socket", WAIT)
        .await;
    bot.signal("TERM");
    let status = bot.wait_exit(WAIT).await;
    let log = bot.log();
    assert!(status.success(), "exit {status}: {log}");
    // Cancelled (or, the daemon gone first, ended with its stream).
    wait_status(&fake, &id, "canceled").await;
    assert!(
        log.contains("shutting down: cancelling our challenge"),
        "{log}"
    );
}

/// The operator's challenge held its slot in a task of its own, not for
/// its game: once accepted, the game ran on no slot, and at concurrency 1
/// the bot accepted a second game beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_game_keeps_the_challenges_slot() {
    use support::fake_lichess::{Answer, OnlineBot};
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Keen", 2000, Answer::Accept)]);
    let (bot, socket) = start_with(&fake, 1, 3600, 30).await;
    let (ok, text) = ctl(&socket, "challenge Keen 1+1");
    assert!(ok, "{text}");
    let game = fake
        .wait_for("the operator's game", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out" && c.status == "accepted")
                .and_then(|c| c.game_id)
        })
        .await
        .unwrap();
    // The opponent stops moving: the game stays on.
    fake.set_autoplay(&game, None).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!fake.game(&game).unwrap().is_over());
    let other = fake.send_challenge(
        ChallengeSpec::default()
            .challenger(Opponent::human("Carol"))
            .autoplay(None),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = fake.challenge(&other).map(|c| c.status);
    assert_eq!(status.as_deref(), Some("created"), "queued: {}", bot.log());
    // Its turn comes when the operator's game ends.
    fake.opponent_resigns(&game).unwrap();
    fake.wait_game_over(&game, WAIT).await.unwrap();
    wait_status(&fake, &other, "accepted").await;
    fake.wait_until("Carol's game", WAIT, |v| v.game(&other).is_some())
        .await
        .unwrap();
    fake.opponent_resigns(&other).unwrap();
    fake.wait_game_over(&other, WAIT).await.unwrap();
    bot.stop().await;
}

/// `kaissa ctl challenge USER ... pairs=1`: a pair of games against one
/// bot, White first, then Black once the first is over, same clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_asks_for_a_pair_of_games() {
    use support::fake_lichess::{Answer, OnlineBot};
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Keen", 2000, Answer::Accept)]);
    let (bot, socket) = start(&fake).await;
    let (ok, text) = ctl(&socket, "challenge Keen 1+1 pairs=1");
    assert!(ok && text.contains("1 pairs of games"), "{text}");
    for (n, color) in [(0, "white"), (1, "black")] {
        let challenge = fake
            .wait_for(&format!("game {n} of the pair"), WAIT, |v| {
                v.challenges()
                    .into_iter()
                    .filter(|c| c.direction == "out" && c.status == "accepted")
                    .nth(n)
            })
            .await
            .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
        assert!(
            challenge
                .dest
                .as_deref()
                .is_some_and(|d| d.eq_ignore_ascii_case("keen"))
        );
        assert_eq!(challenge.form.get("color").map(String::as_str), Some(color));
        assert_eq!(
            challenge.form.get("clock.limit").map(String::as_str),
            Some("60")
        );
        let game = challenge.game_id.unwrap();
        fake.wait_until("a move", WAIT, |v| {
            v.game(&game).is_some_and(|g| !g.moves.is_empty())
        })
        .await
        .unwrap();
        fake.opponent_resigns(&game).unwrap();
        fake.wait_game_over(&game, WAIT).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let out = fake
        .view(|v| v.challenges())
        .into_iter()
        .filter(|c| c.direction == "out")
        .count();
    assert_eq!(out, 2, "one pair, no more");
    bot.stop().await;
}

/// The requests the bot made about challenge `id` (accept, decline,
/// cancel).
fn answers_to(fake: &FakeLichess, id: &str) -> Vec<String> {
    let prefix = format!("/api/challenge/{id}/");
    fake.requests()
        .into_iter()
        .filter(|r| r.path.starts_with(&prefix))
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect()
}

/// Lichess echoes our own challenge on the event stream, with no
/// `direction` (lila's EventStream). It was taken for a challenge to us:
/// accepted (a 404, which freed the slot it held) or queued. Now the
/// challenger tells it is ours: it is not answered, it keeps its slot,
/// and its game is played.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_own_challenge_echoed_on_the_event_stream_keeps_its_slot() {
    let fake = FakeLichess::start().await;
    let (bot, socket) = start_with(&fake, 2, 3600, 60).await;
    let (ok, text) = ctl(&socket, "challenge Somebody 1+1");
    assert!(ok, "{text}");
    let sent = fake
        .wait_for("the operator's challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.id)
        })
        .await
        .unwrap();
    // The stream keeps its order: once a challenge sent after the echo is
    // answered, the echo was read.
    let later = fake.send_challenge(
        ChallengeSpec::default()
            .bot_compatible(false)
            .autoplay(None),
    );
    wait_status(&fake, &later, "declined").await;
    assert_eq!(
        answers_to(&fake, &sent),
        Vec::<String>::new(),
        "{}",
        bot.log()
    );
    assert_eq!(fake.challenge(&sent).unwrap().status, "created");
    let (ok, text) = ctl(&socket, "status --json");
    assert!(ok, "{text}");
    let status: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(status["slots_in_use"], 1, "{status}");
    assert_eq!(status["queue"], serde_json::json!([]), "{status}");

    // Accepted: its game is played.
    let game = fake.accept_bot_challenge(&sent).unwrap();
    fake.wait_until("a few moves", WAIT, |v| {
        v.game(&game).is_some_and(|g| g.moves.len() >= 4)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    fake.opponent_resigns(&game).unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(over.status, "resign");
    assert!(over.illegal_moves.is_empty(), "{over:?}");
    assert_eq!(
        answers_to(&fake, &sent),
        Vec::<String>::new(),
        "{}",
        bot.log()
    );
    bot.stop().await;
}
