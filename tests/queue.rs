//! The bot keeps itself busy, end to end: the real `kaissa run` binary
//! against the fake Lichess server. The challenge queue, the fair limits
//! (per-opponent cap, slots kept for humans), the daily bot quota,
//! matchmaking, and correspondence games that hold nothing while they
//! wait. Games are ended early by the opponent resigning, and searches are
//! depth-limited, so each test takes seconds.
//!
//! `KAISSA_E2E_SHOW_LOG=1` prints each daemon's log.

use crate::support;

use std::time::Duration;

use shakmaty::Color;
use support::bot::Bot;
use support::fake_lichess::{
    Answer, AutoPlay, ChallengeSpec, FakeConfig, FakeLichess, FakeTime, OnlineBot, Opponent,
    Policy, RequestRecord, Side,
};

const WAIT: Duration = Duration::from_secs(20);

/// Starts the daemon against `fake`: depth 4, an 8 MiB hash, its state
/// in the bot's directory, plus `extra` (TOML lines).
async fn start(fake: &FakeLichess, extra: &str) -> Bot {
    let mut bot = Bot::configured(fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             state_dir = \"{}\"\n[bot]\nabort_time_secs = 60\n{extra}\n",
            fake.url(),
            dir.join("state").display()
        )
    });
    bot.spawn();
    *LAST_LOG.lock().unwrap() = Some(bot.log_path(1));
    fake.wait_event_stream(WAIT).await.unwrap();
    bot
}

fn quick() -> Option<AutoPlay> {
    Some(AutoPlay {
        policy: Policy::Greedy,
        think: Duration::from_millis(5),
        accept_draws: false,
    })
}

/// A challenge from `who`, 3+2, the bot playing White (it moves first).
fn from(who: Opponent) -> ChallengeSpec {
    ChallengeSpec::default()
        .challenger(who)
        .challenger_color(Side::Black)
        .autoplay(quick())
}

async fn wait_status(fake: &FakeLichess, id: &str, status: &str) {
    fake.wait_until(&format!("challenge {id} {status}"), WAIT, |v| {
        v.challenge(id).is_some_and(|c| c.status == status)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
}

/// The log of the last daemon started, for failure messages.
fn last_log() -> String {
    LAST_LOG
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

static LAST_LOG: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Waits until game `id` has `plies` moves, then the opponent resigns.
async fn play_then_resign(fake: &FakeLichess, id: &str, plies: usize) {
    fake.wait_until(&format!("{plies} plies in {id}"), WAIT, |v| {
        v.game(id).is_some_and(|g| g.moves.len() >= plies)
    })
    .await
    .unwrap();
    fake.opponent_resigns(id).unwrap();
    let game = fake.wait_game_over(id, WAIT).await.unwrap();
    assert!(game.illegal_moves.is_empty(), "{game:?}");
}

/// Requests to `path` so far.
fn requests_to(fake: &FakeLichess, method: &str, path: &str) -> Vec<RequestRecord> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == method && r.path == path)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_challenges_at_concurrency_one_give_two_games_in_turn() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 1").await;
    let first = fake.send_challenge(from(Opponent::human("Ann")).autoplay(None));
    let second = fake.send_challenge(from(Opponent::human("Ben")));
    let third = fake.send_challenge(from(Opponent::human("Cid")));
    wait_status(&fake, &first, "accepted").await;
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&first).is_some_and(|g| !g.moves.is_empty())
    })
    .await
    .unwrap();
    // The other two wait: neither accepted nor declined.
    for id in [&second, &third] {
        assert_eq!(fake.challenge(id).unwrap().status, "created");
    }
    fake.opponent_says(&first, "player", "!queue").unwrap();
    fake.wait_until("the !queue answer", WAIT, |v| {
        v.game(&first).is_some_and(|g| {
            g.bot_chat("player")
                .iter()
                .any(|t| t.starts_with("2 challenges are waiting"))
        })
    })
    .await
    .unwrap();
    // Ben withdraws; then the event stream drops and Lichess resends the
    // open challenge (Cid's): it keeps its place, once.
    fake.cancel_challenge(&second).unwrap();
    // (Let the cancel event reach the bot before the cut.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    fake.cut_event_stream();
    fake.wait_until("the event stream reopened", WAIT, |v| {
        v.event_stream_connections() >= 2 && v.event_stream_connected()
    })
    .await
    .unwrap();
    assert_eq!(fake.challenge(&third).unwrap().status, "created");
    fake.opponent_move(&first, "e7e5")
        .or_else(|_| fake.opponent_move(&first, "e7e6"))
        .unwrap();
    play_then_resign(&fake, &first, 3).await;
    // The slot frees: Cid, next in the queue, is accepted and plays.
    wait_status(&fake, &third, "accepted").await;
    play_then_resign(&fake, &third, 2).await;
    assert_eq!(fake.challenge(&second).unwrap().status, "canceled");
    assert!(fake.game(&second).is_none());
    assert!(requests_to(&fake, "POST", &format!("/api/challenge/{second}/accept")).is_empty());
    assert_eq!(fake.max_simultaneous_games(), 1);
    let log = bot.stop().await;
    assert_eq!(
        log.matches("queued: every slot is taken").count(),
        2,
        "{log}"
    );
    assert!(log.contains("removed from the queue"), "{log}");
    assert!(log.contains("taking the next queued challenge"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_opponent_gets_one_game_at_a_time() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 3").await;
    let ann = Opponent::human("Ann");
    let first = fake.send_challenge(from(ann.clone()).autoplay(None));
    wait_status(&fake, &first, "accepted").await;
    let again = fake.send_challenge(from(ann.clone()));
    let other = fake.send_challenge(from(Opponent::human("Ben")).autoplay(None));
    wait_status(&fake, &again, "declined").await;
    assert_eq!(
        fake.challenge(&again).unwrap().decline_reason.as_deref(),
        Some("later")
    );
    wait_status(&fake, &other, "accepted").await;
    fake.opponent_resigns(&first).unwrap();
    fake.opponent_resigns(&other).unwrap();
    // Ann's game is over: she may play again.
    fake.wait_until("Ann's game over", WAIT, |v| {
        v.game(&first).is_some_and(|g| g.is_over())
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = fake.send_challenge(from(ann).autoplay(None));
    wait_status(&fake, &later, "accepted").await;
    fake.opponent_resigns(&later).unwrap();
    let log = bot.stop().await;
    assert!(log.contains("rule=\"per-opponent cap\""), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_gets_the_reserved_slot_while_bots_wait() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\n[challenge]\nreserved_for_humans = 1",
    )
    .await;
    let robo = fake.send_challenge(from(Opponent::bot("Robo")).autoplay(None));
    wait_status(&fake, &robo, "accepted").await;
    // Only the slot kept for humans is free: the next bot waits...
    let droid = fake.send_challenge(from(Opponent::bot("Droid")).autoplay(None));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.challenge(&droid).unwrap().status, "created");
    // ...and a human takes the slot.
    let human = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &human, "accepted").await;
    assert_eq!(fake.challenge(&droid).unwrap().status, "created");
    // The human's game ends: the bot still waits (that slot is kept);
    // Robo's ends: Droid plays.
    fake.opponent_resigns(&human).unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(fake.challenge(&droid).unwrap().status, "created");
    fake.opponent_resigns(&robo).unwrap();
    wait_status(&fake, &droid, "accepted").await;
    fake.opponent_resigns(&droid).unwrap();
    fake.wait_game_over(&droid, WAIT).await.unwrap();
    assert_eq!(fake.max_simultaneous_games(), 2);
    bot.stop().await;
}

/// An accept refused for the challenger's own daily cap (a 400 with
/// `ratelimit`, lila's `BotLimit.OpponentLimit`) leaves the challenge
/// open on Lichess: it is declined (`later`) and its slot freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_refused_for_the_challengers_cap_is_declined() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 1").await;
    fake.opponent_cap_on_accept(1);
    let robo = fake.send_challenge(from(Opponent::bot("Robo")));
    wait_status(&fake, &robo, "declined").await;
    assert_eq!(
        fake.challenge(&robo).unwrap().decline_reason.as_deref(),
        Some("later")
    );
    // The one slot is free: the next challenge is played.
    let human = fake.send_challenge(from(Opponent::human("Hugo")));
    wait_status(&fake, &human, "accepted").await;
    fake.opponent_resigns(&human).unwrap();
    fake.wait_game_over(&human, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert!(log.contains("cannot play more bot games today"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_bot_quota_429_on_an_accept_stops_only_bot_games() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 2").await;
    fake.bot_vs_bot_day_on_accept(1);
    let robo = fake.send_challenge(from(Opponent::bot("Robo")));
    wait_status(&fake, &robo, "declined").await;
    assert_eq!(
        fake.challenge(&robo).unwrap().decline_reason.as_deref(),
        Some("later")
    );
    // A human right after: accepted at once (no minute-long pause).
    let sent = tokio::time::Instant::now();
    let human = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &human, "accepted").await;
    // (The request is logged once its answer is out.)
    let path = format!("/api/challenge/{human}/accept");
    let accepted_at = fake
        .wait_for("the accept logged", WAIT, |v| {
            v.requests()
                .iter()
                .find(|r| r.method == "POST" && r.path == path)
                .map(|r| r.at)
        })
        .await
        .unwrap();
    let took = accepted_at.duration_since(sent);
    eprintln!("human challenge accepted {took:?} after it was sent");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // Another bot: declined without an accept being tried.
    let droid = fake.send_challenge(from(Opponent::bot("Droid")));
    wait_status(&fake, &droid, "declined").await;
    assert!(requests_to(&fake, "POST", &format!("/api/challenge/{droid}/accept")).is_empty());
    fake.opponent_resigns(&human).unwrap();
    fake.wait_game_over(&human, WAIT).await.unwrap();
    let state = bot.dir.path().join("state/bot-games.json");
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("blocked_until"), "{saved}");
    let log = bot.stop().await;
    assert!(log.contains("daily bot-game quota reached"), "{log}");
    assert!(log.contains("rule=\"daily bot quota\""), "{log}");
    assert!(!log.contains("pausing these requests"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_picks_inside_the_window_skips_a_decliner_and_stops_at_the_quota() {
    let fake = FakeLichess::start().await;
    // Our bullet rating is 2000 (the fake's account).
    fake.set_online_bots(vec![
        OnlineBot::new("FarBot", 2400, Answer::Accept),
        OnlineBot::new("Shy", 2010, Answer::Decline("tooFast".to_owned())),
        OnlineBot::new("Keen", 2080, Answer::Accept),
        OnlineBot::new("KaissaBot", 2000, Answer::Accept),
    ]);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\nmin_rating_diff = -100\nmax_rating_diff = 100\n\
         time_controls = [\"1+1\"]\nchallenge_timeout_secs = 10\nselection = \"nearest\"\n\
         played_cooldown_secs = 0",
    )
    .await;
    // Shy, the closest, declines; Keen is next and accepts.
    let game = fake
        .wait_for("a game from matchmaking", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out" && c.status == "accepted")
                .and_then(|c| c.game_id)
        })
        .await
        .unwrap();
    let record = fake.game(&game).unwrap();
    assert_eq!(record.opponent.name, "Keen");
    // Lichess's daily quota is reached meanwhile: no more challenges.
    fake.exhaust_bot_vs_bot_games(true);
    play_then_resign(&fake, &game, 2).await;
    fake.wait_until("a challenge refused by the quota", WAIT, |v| {
        v.requests()
            .iter()
            .any(|r| r.path.starts_with("/api/challenge/") && r.status == 429)
    })
    .await
    .unwrap();
    let created = |fake: &FakeLichess| {
        fake.requests()
            .into_iter()
            .filter(|r| {
                r.method == "POST"
                    && r.path.starts_with("/api/challenge/")
                    && r.path.matches('/').count() == 3
            })
            .count()
    };
    let before = created(&fake);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(created(&fake), before, "challenged again after the quota");
    let out: Vec<_> = fake
        .view(|v| v.challenges())
        .into_iter()
        .filter(|c| c.direction == "out")
        .collect();
    let dests: Vec<String> = out.iter().filter_map(|c| c.dest.clone()).collect();
    assert_eq!(dests, ["shy", "keen"], "{out:?}");
    assert_eq!(
        out[1].form.get("clock.limit").map(String::as_str),
        Some("60")
    );
    assert_eq!(out[1].form.get("rated").map(String::as_str), Some("false"));
    let declined = std::fs::read_to_string(bot.dir.path().join("state/declined.json")).unwrap();
    assert!(
        declined.contains("\"shy\"") && declined.contains("time 60+1"),
        "{declined}"
    );
    let log = bot.stop().await;
    assert!(log.contains("matchmaking: challenging"), "{log}");
    assert!(log.contains("stopped until it resets"), "{log}");
}

/// Another bot's rematch loop ends at `challenge.max_bot_rematches`,
/// and a bot gets `max_games_per_bot_per_day` games a day; a human's
/// rematches are not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bots_rematch_loop_and_daily_games_are_capped() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[challenge]\nmax_bot_rematches = 1\nmax_games_per_bot_per_day = 3",
    )
    .await;
    let looper = || from(Opponent::bot("Looper")).autoplay(None);
    // A game, one rematch (accepted), a second rematch in a row (declined).
    let mut previous: Option<String> = None;
    for expected in ["accepted", "accepted", "declined"] {
        let spec = match &previous {
            Some(game) => looper().rematch_of(game),
            None => looper(),
        };
        let id = fake.send_challenge(spec);
        wait_status(&fake, &id, expected).await;
        if expected == "accepted" {
            play_then_resign(&fake, &id, 1).await;
        } else {
            let challenge = fake.challenge(&id).unwrap();
            assert_eq!(challenge.decline_reason.as_deref(), Some("later"));
        }
        previous = Some(id);
    }
    // A fresh challenge is a third game today, the last one allowed.
    let third = fake.send_challenge(looper());
    wait_status(&fake, &third, "accepted").await;
    play_then_resign(&fake, &third, 1).await;
    let fourth = fake.send_challenge(looper());
    wait_status(&fake, &fourth, "declined").await;
    // Humans are not capped so.
    let human = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &human, "accepted").await;
    play_then_resign(&fake, &human, 1).await;
    let log = bot.stop().await;
    assert!(log.contains("rule=\"rematch limit\""), "{log}");
    assert!(log.contains("rule=\"per-bot daily cap\""), "{log}");
}

/// An online block list: fetched at start, its users declined and never
/// challenged; when its host is down at the next start, the last copy
/// still applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_block_lists_apply_both_ways_and_survive_a_dead_host() {
    let fake = FakeLichess::start().await;
    fake.set_block_list(Some("# shared list\nSpammer\nBadBot  # loops\n"));
    // Our bullet rating is 2000 (the fake's account): BadBot is the
    // nearest.
    fake.set_online_bots(vec![
        OnlineBot::new("BadBot", 2000, Answer::Accept),
        OnlineBot::new("Fine", 2050, Answer::Accept),
    ]);
    let mut bot = start(
        &fake,
        &format!(
            "[challenge]\nonline_block_lists = [\"{}/test/block-list\"]\n\
             [matchmaking]\nenabled = true\nidle_secs = 1\nmin_rating_diff = -100\nmax_rating_diff = 100\n\
             time_controls = [\"1+1\"]\nselection = \"nearest\"",
            fake.url()
        ),
    )
    .await;
    let game = fake
        .wait_for("a game from matchmaking", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out" && c.status == "accepted")
                .and_then(|c| c.game_id)
        })
        .await
        .unwrap();
    assert_eq!(fake.game(&game).unwrap().opponent.name, "Fine");
    let spam = fake.send_challenge(from(Opponent::human("Spammer")));
    wait_status(&fake, &spam, "declined").await;
    play_then_resign(&fake, &game, 2).await;
    let cache = std::fs::read_to_string(bot.dir.path().join("state/block-lists.json")).unwrap();
    assert!(
        cache.contains("spammer") && cache.contains("badbot"),
        "{cache}"
    );

    // The list's host is down when the bot starts again.
    fake.set_block_list(None);
    bot.signal("TERM");
    assert!(bot.wait_exit(WAIT).await.success());
    bot.spawn();
    fake.wait_until("a failed fetch", WAIT, |v| {
        v.requests()
            .iter()
            .any(|r| r.path == "/test/block-list" && r.status == 503)
    })
    .await
    .unwrap();
    let again = fake.send_challenge(from(Opponent::human("Spammer")));
    wait_status(&fake, &again, "declined").await;
    let welcome = fake.send_challenge(from(Opponent::human("Welcome")));
    wait_status(&fake, &welcome, "accepted").await;
    let dests: Vec<String> = fake
        .view(|v| v.challenges())
        .into_iter()
        .filter(|c| c.direction == "out")
        .filter_map(|c| c.dest)
        .collect();
    assert!(!dests.iter().any(|d| d == "badbot"), "{dests:?}");
    let log = bot.stop().await;
    assert!(log.contains("rule=\"block list\""), "{log}");
    assert!(log.contains("online block list not fetched"), "{log}");
}

/// Matchmaking's variety: each game against another bot of the window
/// (a bot just played cools down), never one on the block list, nor one
/// in a game now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_spreads_its_games_over_the_window_and_obeys_the_block_list() {
    let fake = FakeLichess::start().await;
    // Our bullet rating is 2000 (the fake's account). 110 bots far away
    // come first: the list is asked for with nb=512 (the fake, as the
    // spec, gives 100 by default).
    let far: Vec<String> = (0..110).map(|i| format!("Remote{i}")).collect();
    let mut bots: Vec<OnlineBot> = far
        .iter()
        .map(|name| OnlineBot::new(name, 2900, Answer::Accept))
        .collect();
    bots.extend(vec![
        OnlineBot::new("Blocked", 2000, Answer::Accept),
        OnlineBot::new("Busy", 2005, Answer::Accept).playing(),
        OnlineBot::new("Ann", 2010, Answer::Accept),
        OnlineBot::new("Ben", 2050, Answer::Accept),
        OnlineBot::new("Cid", 2090, Answer::Accept),
        OnlineBot::new("Far", 2500, Answer::Accept),
    ]);
    fake.set_online_bots(bots);
    let bot = start(
        &fake,
        "[challenge]\nblock_list = [\"blocked\"]\n\
         [matchmaking]\nenabled = true\nidle_secs = 1\nmin_rating_diff = -100\nmax_rating_diff = 100\n\
         time_controls = [\"1+1\"]\nselection = \"weighted\"\nplayed_cooldown_secs = 3600",
    )
    .await;
    let mut opponents = Vec::new();
    for n in 1..=3 {
        let game = fake
            .wait_for("a game from matchmaking", WAIT, |v| {
                let games: Vec<String> = v
                    .challenges()
                    .into_iter()
                    .filter(|c| c.direction == "out" && c.status == "accepted")
                    .filter_map(|c| c.game_id)
                    .collect();
                (games.len() == n).then(|| games[n - 1].clone())
            })
            .await
            .unwrap();
        opponents.push(fake.game(&game).unwrap().opponent.name);
        play_then_resign(&fake, &game, 2).await;
    }
    opponents.sort();
    assert_eq!(opponents, ["Ann", "Ben", "Cid"]);
    // All three cool down: nobody else fits (Far is outside the window).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let dests: Vec<String> = fake
        .view(|v| v.challenges())
        .into_iter()
        .filter(|c| c.direction == "out")
        .filter_map(|c| c.dest)
        .collect();
    assert_eq!(dests.len(), 3, "{dests:?}");
    let played = std::fs::read_to_string(bot.dir.path().join("state/played.json")).unwrap();
    for name in ["ann", "ben", "cid"] {
        assert!(played.contains(&format!("\"{name}\"")), "{played}");
    }
    let log = bot.stop().await;
    assert!(log.contains("matchmaking: no bot online fits"), "{log}");
    // Our account (our rating) is read once for all these searches (GET
    // /api/account is limited to 30 per 5 minutes), besides the start's.
    let requests = fake.requests();
    let count = |path: &str| requests.iter().filter(|r| r.path == path).count();
    assert!(count("/api/bot/online") >= 4, "{requests:?}");
    assert!(count("/api/account") <= 2, "{requests:?}");
    assert!(
        requests
            .iter()
            .filter(|r| r.path == "/api/bot/online")
            .all(|r| r.query.as_deref() == Some("nb=512")),
        "{requests:?}"
    );
}

/// Lichess's answers to a challenge that are not the opponent's word on
/// us: a form error (our clock) blames nobody, an opponent's daily cap
/// (a 400 with `ratelimit`) skips it for as long as Lichess says, and a
/// challenge kept open by its stream outlives the 20 s (here 1 s) that
/// Lichess gives one without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_blames_no_one_for_its_own_clock_waits_out_a_capped_bot_and_keeps_its_challenge_alive()
 {
    let fake = FakeLichess::start_with(FakeConfig {
        challenge_expiry: Duration::from_secs(1),
        ..FakeConfig::default()
    })
    .await;
    fake.set_online_bots(vec![
        OnlineBot::new("Capped", 2005, Answer::DailyCapReached(5000)),
        OnlineBot::new("Late", 2050, Answer::Ignore),
    ]);
    fake.refuse_challenge_form(1);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\nmin_rating_diff = -100\nmax_rating_diff = 100\n\
         time_controls = [\"1+1\"]\nchallenge_timeout_secs = 60\nselection = \"nearest\"",
    )
    .await;
    let late = fake
        .wait_for("a challenge to Late", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.dest.as_deref() == Some("late"))
                .map(|c| c.id)
        })
        .await
        .unwrap();
    // Twice the fake's expiry: still open, because its stream is.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let game = fake.accept_bot_challenge(&late).unwrap();
    let challenge = fake.challenge(&late).unwrap();
    assert_eq!(
        challenge.form.get("keepAliveStream").map(String::as_str),
        Some("true")
    );
    let to_capped: Vec<u16> = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/api/challenge/capped")
        .map(|r| r.status)
        .collect();
    // The form error, then the cap: the first blamed nobody.
    assert_eq!(to_capped, [400, 400]);
    let declined = std::fs::read_to_string(bot.dir.path().join("state/declined.json")).unwrap();
    let skips: serde_json::Value = serde_json::from_str(&declined).unwrap();
    let until = skips["skips"]["capped"]["until"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(until > now + 4900 && until <= now + 5000, "{declined}");
    assert!(
        skips["skips"]["capped"]["reason"]
            .as_str()
            .unwrap()
            .contains("bot.vsBot.day"),
        "{declined}"
    );
    fake.opponent_resigns(&game).unwrap();
    fake.wait_game_over(&game, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert!(log.contains("check matchmaking.time_controls"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_challenge_takes_the_slot_of_our_pending_one() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Sleepy", 2000, Answer::Ignore)]);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\ntime_controls = [\"1+1\"]\n\
         challenge_timeout_secs = 60",
    )
    .await;
    let ours = fake
        .wait_for("our challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.id)
        })
        .await
        .unwrap();
    let human = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &human, "accepted").await;
    wait_status(&fake, &ours, "canceled").await;
    fake.opponent_resigns(&human).unwrap();
    fake.wait_game_over(&human, WAIT).await.unwrap();
    bot.stop().await;
}

/// Matchmaking's challenge comes back on the event stream, with no
/// `direction` (lila's EventStream): the challenger is this bot, so it is
/// ours. It was taken for a challenge to us, which found its own slot
/// taken and cancelled it to make room; now it is left alone, pending,
/// and its game is played once accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmakings_challenge_echoed_on_the_event_stream_is_left_alone() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Sleepy", 2000, Answer::Ignore)]);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\ntime_controls = [\"1+1\"]\n\
         challenge_timeout_secs = 60",
    )
    .await;
    let ours = fake
        .wait_for("our challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.id)
        })
        .await
        .unwrap();
    // Once a challenge the stream sent after the echo is answered, the
    // echo was read.
    let later = fake.send_challenge(from(Opponent::human("Hugo")).bot_compatible(false));
    wait_status(&fake, &later, "declined").await;
    let prefix = format!("/api/challenge/{ours}/");
    let answers = |fake: &FakeLichess| -> Vec<RequestRecord> {
        fake.requests()
            .into_iter()
            .filter(|r| r.path.starts_with(&prefix))
            .collect()
    };
    assert!(
        answers(&fake).is_empty(),
        "{:?}\n{}",
        answers(&fake),
        last_log()
    );
    assert_eq!(fake.challenge(&ours).unwrap().status, "created");
    let game = fake.accept_bot_challenge(&ours).unwrap();
    play_then_resign(&fake, &game, 4).await;
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert!(over.illegal_moves.is_empty(), "{over:?}");
    assert!(
        answers(&fake).is_empty(),
        "{:?}\n{}",
        answers(&fake),
        last_log()
    );
    bot.stop().await;
}

/// Our pending challenge is accepted just as a challenge to us needs its
/// slot: the stream gives the challenge to us first, so the daemon,
/// not told of the game yet, cancels ours. lila aborts a game so young
/// (`apiCancel` of a challenge no longer open: the game, while
/// `abortableByUser`) and answers 200; its `gameStart` and `gameFinish`
/// (aborted) follow. The slot goes to the game of the challenge to us,
/// the aborted game is let go, and matchmaking goes on after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_challenge_cancelled_as_it_is_accepted_aborts_its_game_cleanly() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Sleepy", 2000, Answer::Ignore)]);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\ntime_controls = [\"1+1\"]\n\
         challenge_timeout_secs = 60",
    )
    .await;
    let ours = fake
        .wait_for("our challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.id)
        })
        .await
        .unwrap();
    // The daemon knows it created it (it holds the slot).
    bot.wait_log(
        &format!("matchmaking: challenge sent; waiting for an answer challenge={ours}"),
        WAIT,
    )
    .await;
    let human = fake.send_challenge(from(Opponent::human("Hugo")));
    let game = fake.accept_bot_challenge(&ours).unwrap();
    // Its opponent never moves: only the cancel can end it soon.
    fake.set_autoplay(&game, None).unwrap();
    let aborted = fake
        .wait_game_over(&game, WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    assert_eq!(aborted.status, "aborted");
    // The request log is written once the answer is out.
    let cancel = format!("/api/challenge/{ours}/cancel");
    fake.wait_until("the cancel logged", WAIT, |v| {
        v.requests().iter().any(|r| r.path == cancel)
    })
    .await
    .unwrap();
    let cancels: Vec<u16> = requests_to(&fake, "POST", &cancel)
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(cancels, [200], "{}", last_log());
    wait_status(&fake, &human, "accepted").await;
    play_then_resign(&fake, &human, 4).await;
    // Nothing held on: idle again, matchmaking challenges again.
    fake.wait_until("our next challenge", WAIT, |v| {
        v.challenges()
            .iter()
            .filter(|c| c.direction == "out")
            .count()
            == 2
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    let log = bot.stop().await;
    assert!(!log.contains("ERROR"), "{log}");
}

fn correspondence(days: u32) -> ChallengeSpec {
    ChallengeSpec::default()
        .time(FakeTime::Correspondence { days })
        .challenger(Opponent::human("Corrie"))
        .autoplay(None)
}

/// The fake's own reply in the correspondence game, when it is its turn.
fn reply(fake: &FakeLichess, id: &str) {
    for uci in [
        "e2e4", "d2d4", "g1f3", "e7e5", "e7e6", "d7d5", "d7d6", "g8f6", "b8c6", "a7a6", "h7h6",
    ] {
        if fake.opponent_move(id, uci).is_ok() {
            return;
        }
    }
    panic!("no reply found in {id}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correspondence_game_holds_no_slot_while_waiting() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 1\ncorrespondence_move_secs = 1\ncorrespondence_park_secs = 0\n\
         playing_check_secs = 1\n\
         [challenge]\ncorrespondence = true",
    )
    .await;
    let corr = fake.start_game(correspondence(3), Color::White).unwrap();
    fake.wait_until("the bot's first move, then parked", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 1) && !v.game_stream_open(&corr)
    })
    .await
    .unwrap();
    // Waiting for the opponent, it holds no slot: a real-time game is
    // accepted at concurrency 1.
    let blitz = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &blitz, "accepted").await;
    play_then_resign(&fake, &blitz, 1).await;
    // The opponent moves: the bot is told (gameStart) and answers.
    reply(&fake, &corr);
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    fake.wait_until("parked again", WAIT, |v| !v.game_stream_open(&corr))
        .await
        .unwrap();
    let corr_game = fake.game(&corr).unwrap();
    assert!(corr_game.illegal_moves.is_empty(), "{corr_game:?}");
    // Greeted once, not at every check-in.
    assert_eq!(corr_game.bot_chat("player").len(), 1, "{corr_game:?}");
    fake.opponent_resigns(&corr).unwrap();
    let log = bot.stop().await;
    assert!(
        log.contains("correspondence game parked until our turn"),
        "{log}"
    );
}

/// After its move in a correspondence game the bot keeps the game open a
/// while (`bot.correspondence_park_secs`): a quick reply is answered at
/// once, on the same stream; with none, the game is parked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_correspondence_reply_is_answered_before_the_game_is_parked() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\ncorrespondence_move_secs = 1\ncorrespondence_park_secs = 3\n\
         abort_time_secs = 1\n[challenge]\ncorrespondence = true",
    )
    .await;
    let corr = fake.start_game(correspondence(3), Color::White).unwrap();
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 1)
    })
    .await
    .unwrap();
    // Past abort_time_secs: a game without a clock is never aborted (the
    // opponent has days for a first move).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    reply(&fake, &corr);
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    // Not parked in between: the first stream is still the one.
    assert_eq!(fake.game(&corr).unwrap().stream_connections, 1);
    let since = std::time::Instant::now();
    fake.wait_until("parked", WAIT, |v| !v.game_stream_open(&corr))
        .await
        .unwrap();
    assert!(
        since.elapsed() >= Duration::from_secs(2),
        "{:?}",
        since.elapsed()
    );
    fake.opponent_resigns(&corr).unwrap();
    let log = bot.stop().await;
    assert!(
        log.contains("correspondence game parked until our turn"),
        "{log}"
    );
}

/// A shutdown does not wait for a quick reply in a correspondence game:
/// the game is parked at once and left for the next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_parks_a_correspondence_game_waiting_for_a_reply() {
    let fake = FakeLichess::start().await;
    let mut bot = start(
        &fake,
        "[bot]\ncorrespondence_move_secs = 1\ncorrespondence_park_secs = 600\n\
         [challenge]\ncorrespondence = true",
    )
    .await;
    let corr = fake.start_game(correspondence(3), Color::White).unwrap();
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 1) && v.game_stream_open(&corr)
    })
    .await
    .unwrap();
    bot.signal("TERM");
    let status = bot.wait_exit(Duration::from_secs(10)).await;
    let log = bot.log();
    assert!(status.success(), "exit {status}: {log}");
    let game = fake.game(&corr).unwrap();
    assert!(!game.is_over(), "{game:?}");
    assert!(
        log.contains("correspondence game parked until our turn"),
        "{log}"
    );
}

/// A shutdown leaves correspondence games for the next run: the one
/// still thinking at the deadline stops without resigning, and one whose
/// turn comes during the shutdown is not taken up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_leaves_correspondence_games_for_the_next_run() {
    let fake = FakeLichess::start().await;
    let mut bot = start(
        &fake,
        "[engine]\nmax_depth = 0\n[bot]\ncorrespondence_move_secs = 60\n\
         correspondence_park_secs = 0\nplaying_check_secs = 1\n\
         shutdown_deadline_secs = 2\n[challenge]\ncorrespondence = true",
    )
    .await;
    let thinking = fake.start_game(correspondence(3), Color::White).unwrap();
    let waiting = fake.start_game(correspondence(3), Color::Black).unwrap();
    fake.wait_until("the bot thinking in one, the other parked", WAIT, |v| {
        v.game_stream_open(&thinking) && !v.game_stream_open(&waiting)
    })
    .await
    .unwrap();
    bot.wait_log("correspondence game parked until our turn", WAIT)
        .await;
    bot.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    reply(&fake, &waiting);
    let status = bot.wait_exit(WAIT).await;
    let log = bot.log();
    assert!(status.success(), "exit {status}: {log}");
    for id in [&thinking, &waiting] {
        let game = fake.game(id).unwrap();
        assert!(!game.is_over(), "{game:?}");
    }
    assert!(fake.game(&thinking).unwrap().moves.is_empty());
    assert_eq!(fake.game(&waiting).unwrap().moves.len(), 1);
    assert!(log.contains("shutdown deadline passed"), "{log}");
    assert!(
        log.contains("shutting down: correspondence game left for the next run"),
        "{log}"
    );
}

/// A list of the games in progress computed just before a game ended
/// (it still shows it on) does not take the finished game up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_list_of_games_does_not_take_up_a_game_just_over() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    let id = fake.send_challenge(from(Opponent::human("Hugo")).autoplay(None));
    wait_status(&fake, &id, "accepted").await;
    play_then_resign(&fake, &id, 1).await;
    bot.wait_log("game task ended", WAIT).await;
    // The reconnected event stream checks the games in progress.
    fake.stale_playing(1);
    fake.reconnect_and_check_playing(WAIT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = bot.stop().await;
    assert!(!log.contains("resuming a game nobody watched"), "{log}");
    assert_eq!(
        requests_to(&fake, "GET", &format!("/api/bot/game/stream/{id}")).len(),
        1,
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playing_check_takes_up_correspondence_turns_and_missed_games() {
    // Lichess announces no correspondence turn: only the check finds it.
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\ncorrespondence_move_secs = 1\nplaying_check_secs = 1\n\
         correspondence_park_secs = 0\n\
         [challenge]\ncorrespondence = true",
    )
    .await;
    // A correspondence game where the opponent moves first: parked at
    // once, no stream opened until its turn.
    let corr = fake.start_game(correspondence(2), Color::Black).unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!fake.view(|v| v.game_stream_open(&corr)));
    reply(&fake, &corr);
    fake.wait_until("the bot's move, found by the playing check", WAIT, |v| {
        v.game(&corr).is_some_and(|g| g.moves.len() == 2)
    })
    .await
    .unwrap();
    // A real-time game whose gameStart never came: found and played.
    fake.drop_game_starts(1);
    let missed = fake
        .start_game(
            ChallengeSpec::default()
                .challenger(Opponent::human("Quiet"))
                .autoplay(None),
            Color::White,
        )
        .unwrap();
    fake.wait_until("a move in the missed game", WAIT, |v| {
        v.game(&missed).is_some_and(|g| !g.moves.is_empty())
    })
    .await
    .unwrap();
    fake.opponent_resigns(&missed).unwrap();
    fake.opponent_resigns(&corr).unwrap();
    fake.wait_game_over(&missed, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert!(
        log.contains("correspondence: our turn (playing check)"),
        "{log}"
    );
    assert!(log.contains("resuming a game nobody watched"), "{log}");
}

/// Lichess counts every game between two bots against its daily cap,
/// whoever started it: a game the bot did not accept or create (an arena
/// pairing, a `kaissa ctl` challenge) counts too, each once; and when
/// Lichess's 429 names a lower cap than `bot.bot_games_per_day`, the bot
/// keeps to Lichess's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_game_between_bots_counts_and_lichess_cap_is_learned() {
    let fake = FakeLichess::start_with(FakeConfig {
        bot_games_per_day: 2,
        ..FakeConfig::default()
    })
    .await;
    let mut bot = Bot::configured(&fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             state_dir = \"{}\"\n[bot]\nabort_time_secs = 60\ncontrol_socket = \"{}\"\n",
            fake.url(),
            dir.join("state").display(),
            dir.join("control.sock").display()
        )
    });
    bot.spawn();
    *LAST_LOG.lock().unwrap() = Some(bot.log_path(1));
    fake.wait_event_stream(WAIT).await.unwrap();
    let status = |bot: &Bot| support::bot::ctl(&bot.dir.path().join("control.sock"), "status").1;
    // Started on Lichess, not by an accept of ours: a bot, then a human.
    for (i, who) in [Opponent::bot("Arenabot"), Opponent::human("Hugo")]
        .into_iter()
        .enumerate()
    {
        let spec = ChallengeSpec {
            resign_after: Some(1),
            ..ChallengeSpec::default().challenger(who).autoplay(quick())
        };
        let game = fake.start_game(spec, Color::White).unwrap();
        let over = fake.wait_game_over(&game, WAIT).await.unwrap();
        assert_eq!(over.status, "resign", "game {i}: {over:?}");
    }
    let text = status(&bot);
    assert!(
        text.contains("bot games today: 1 of 100"),
        "{text}\n{}",
        last_log()
    );
    // One more bot game reaches Lichess's cap of 2.
    let spec = ChallengeSpec {
        resign_after: Some(1),
        ..ChallengeSpec::default()
            .challenger(Opponent::bot("Otherbot"))
            .autoplay(quick())
    };
    let game = fake.start_game(spec, Color::Black).unwrap();
    fake.wait_game_over(&game, WAIT).await.unwrap();
    // A bot's challenge: Lichess refuses the accept, naming its cap.
    let robo = fake.send_challenge(from(Opponent::bot("Robo")));
    wait_status(&fake, &robo, "declined").await;
    let text = status(&bot);
    assert!(text.contains("bot games today: 2 of 2"), "{text}");
    let saved = std::fs::read_to_string(bot.dir.path().join("state/bot-games.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["games"].as_array().unwrap().len(), 2, "{saved}");
    assert_eq!(saved["games"][1]["id"], game.as_str(), "{saved}");
    assert_eq!(saved["learned"][0], 2, "{saved}");
    let log = bot.stop().await;
    assert!(log.contains("lower than bot.bot_games_per_day"), "{log}");
}

/// lila lets an account create 25 challenge credits a minute and 200 a
/// day (a bot costs 1, a human 5). The bot counts what it sent (kept
/// across a restart) and sends nothing the budget cannot pay for:
/// matchmaking waits, and `kaissa ctl challenge` says how long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenges_keep_within_lichess_creation_limit() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Keen", 2010, Answer::Accept)]);
    let mut bot = Bot::configured(&fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             state_dir = \"{}\"\n[bot]\ncontrol_socket = \"{}\"\n\
             [matchmaking]\nenabled = true\nidle_secs = 1\ntime_controls = [\"1+1\"]\n",
            fake.url(),
            dir.join("state").display(),
            dir.join("control.sock").display()
        )
    });
    // A previous run spent the day's 200 credits, the last an hour ago.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sent: Vec<(u64, u32)> = (0..40).map(|i| (now - 3600 - i * 60, 5)).collect();
    let state = bot.dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("challenges-sent.json"),
        serde_json::json!({ "sent": sent }).to_string(),
    )
    .unwrap();
    bot.spawn();
    *LAST_LOG.lock().unwrap() = Some(bot.log_path(1));
    fake.wait_event_stream(WAIT).await.unwrap();
    bot.wait_log("limit on challenges we create is reached", WAIT)
        .await;
    let (ok, text) = support::bot::ctl(&bot.dir.path().join("control.sock"), "challenge Keen");
    assert!(!ok, "{text}");
    assert!(
        text.contains("200 today") && text.contains("try again in 22h"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        requests_to(&fake, "POST", "/api/challenge/keen").is_empty()
            && requests_to(&fake, "POST", "/api/challenge/Keen").is_empty(),
        "a challenge was sent"
    );
    let (_, status) = support::bot::ctl(&bot.dir.path().join("control.sock"), "status");
    assert!(
        status.contains("challenges sent: 0 of 25 credits this minute, 200 of 200 today"),
        "{status}"
    );
    bot.stop().await;
}

/// `[challenge.humans]` and `[challenge.bots]`: the same clock is
/// accepted from a human and declined from a bot; a bot's bullet game
/// without increment is declined `timeControl`; and with
/// `queue_first = ["titled", "humans"]` a titled player who challenged
/// last plays before the human, and the human before the bot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn humans_and_bots_have_their_own_policy_and_titled_players_go_first() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 1\n[challenge]\nqueue_first = [\"titled\", \"humans\"]\n\
         [challenge.bots]\nmax_base = 300\nbullet_requires_increment = true\n",
    )
    .await;
    // A bot's rapid game is beyond the bots' max_base: declined at once.
    let bot_rapid = fake.send_challenge(from(Opponent::bot("RoboRapid")).clock(600, 5));
    wait_status(&fake, &bot_rapid, "declined").await;
    assert_eq!(
        fake.challenge(&bot_rapid)
            .unwrap()
            .decline_reason
            .as_deref(),
        Some("tooSlow")
    );
    let bot_bullet = fake.send_challenge(from(Opponent::bot("RoboBullet")).clock(60, 0));
    wait_status(&fake, &bot_bullet, "declined").await;
    assert_eq!(
        fake.challenge(&bot_bullet)
            .unwrap()
            .decline_reason
            .as_deref(),
        Some("timeControl")
    );
    // The same rapid clock from a human is played; the next three wait.
    let human_rapid = fake.send_challenge(from(Opponent::human("Ann")).clock(600, 5));
    wait_status(&fake, &human_rapid, "accepted").await;
    let waiting_bot = fake.send_challenge(from(Opponent::bot("Robo")));
    let human = fake.send_challenge(from(Opponent::human("Ben")));
    let gm = fake.send_challenge(from(Opponent {
        title: Some("GM".to_owned()),
        ..Opponent::human("Gia")
    }));
    fake.wait_until("three challenges seen", WAIT, |v| {
        [&waiting_bot, &human, &gm]
            .iter()
            .all(|id| v.challenge(id).is_some_and(|c| c.status == "created"))
    })
    .await
    .unwrap();
    // Each game ends after two plies: the slot goes to the GM, then Ben,
    // then the bot.
    for id in [&human_rapid, &gm, &human] {
        wait_status(&fake, id, "accepted").await;
        play_then_resign(&fake, id, 2).await;
    }
    // The request is recorded once answered: wait for it, not the status.
    let accept = format!("/api/challenge/{waiting_bot}/accept");
    fake.wait_until("the bot's challenge accepted", WAIT, |v| {
        v.requests().iter().any(|r| r.path == accept)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    let accepted_at = |id: &str| {
        fake.requests()
            .iter()
            .position(|r| r.path == format!("/api/challenge/{id}/accept"))
            .unwrap()
    };
    assert!(accepted_at(&gm) < accepted_at(&human));
    assert!(accepted_at(&human) < accepted_at(&waiting_bot));
    bot.stop().await;
}

/// Matchmaking learns from declines: a bot that declines our 1+1 as
/// `tooFast` is offered the next clock (3+2), not 1+1 again; after
/// `block_after_declines` (2) declines in a row it is left alone and the
/// next bot is challenged. With `pairs`, that bot plays White first and
/// gets the return game (Black) at once, same clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_learns_from_declines_and_plays_pairs() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![
        OnlineBot::new("Picky", 2010, Answer::Decline("tooFast".to_owned())),
        OnlineBot::new("Keen", 2080, Answer::Accept),
    ]);
    let bot = start(
        &fake,
        "[matchmaking]\nenabled = true\nidle_secs = 1\nmin_rating_diff = -100\n\
         max_rating_diff = 100\ntime_controls = [\"1+1\", \"3+2\"]\nchallenge_timeout_secs = 10\n\
         selection = \"nearest\"\nplayed_cooldown_secs = 0\nblock_after_declines = 2\npairs = true",
    )
    .await;
    let out = |fake: &FakeLichess| -> Vec<_> {
        fake.view(|v| v.challenges())
            .into_iter()
            .filter(|c| c.direction == "out")
            .collect()
    };
    let first = fake
        .wait_for("the first game of the pair", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out" && c.status == "accepted")
                .and_then(|c| c.game_id)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    play_then_resign(&fake, &first, 2).await;
    let second = fake
        .wait_for("the return game", WAIT, |v| {
            v.challenges()
                .into_iter()
                .filter(|c| c.direction == "out" && c.status == "accepted")
                .filter_map(|c| c.game_id)
                .find(|g| *g != first)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    play_then_resign(&fake, &second, 2).await;
    let out = out(&fake);
    let summary: Vec<(String, String, String)> = out
        .iter()
        .take(4)
        .map(|c| {
            let form = |k: &str| c.form.get(k).cloned().unwrap_or_default();
            (
                c.dest.clone().unwrap_or_default(),
                form("clock.limit"),
                form("color"),
            )
        })
        .collect();
    let row =
        |who: &str, limit: &str, color: &str| (who.to_owned(), limit.to_owned(), color.to_owned());
    assert_eq!(
        summary,
        [
            // Picky declines 1+1, then 3+2: blocked after two in a row.
            row("picky", "60", "white"),
            row("picky", "180", "white"),
            // Keen gets the next offer (1+1), then the return game.
            row("keen", "60", "white"),
            row("keen", "60", "black"),
        ],
        "{out:?}"
    );
    let declined = std::fs::read_to_string(bot.dir.path().join("state/declined.json")).unwrap();
    let state: serde_json::Value = serde_json::from_str(&declined).unwrap();
    assert!(
        state["skips"]["picky"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("2 declines in a row"),
        "{declined}"
    );
    let log = bot.stop().await;
    assert!(log.contains("a planned game of a pair"), "{log}");
}

/// Correspondence matchmaking: a time control of "3d" challenges a bot
/// with three days per move (no clock), in its correspondence rating.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchmaking_offers_correspondence_days() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new("Postal", 1510, Answer::Ignore)]);
    let bot = start(
        &fake,
        "[challenge]\ncorrespondence = true\n[matchmaking]\nenabled = true\nidle_secs = 1\n\
         time_controls = [\"3d\"]\nchallenge_timeout_secs = 30",
    )
    .await;
    let form = fake
        .wait_for("a correspondence challenge", WAIT, |v| {
            v.challenges()
                .into_iter()
                .find(|c| c.direction == "out")
                .map(|c| c.form)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", last_log()));
    assert_eq!(form.get("days").map(String::as_str), Some("3"), "{form:?}");
    assert!(!form.contains_key("clock.limit"), "{form:?}");
    let log = bot.stop().await;
    assert!(log.contains("perf=\"correspondence\""), "{log}");
}
