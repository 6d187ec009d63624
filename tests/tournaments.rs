//! Arena tournaments end to end: the real `kaissa run` against the fake
//! Lichess's arenas. A configured arena joined once and its pairings
//! played (never aborted), the withdraw at a stop; an arena joined before
//! its start and paired from the start without another join; a missed
//! pairing (Lichess pauses the bot) answered with a new join; an arena
//! joined elsewhere noticed at its game and kept across a restart with no
//! join at all; a wrong password
//! refused once and logged without the password; a waiting arena keeping
//! its slot from challenges until `kaissa ctl tournament leave`; a team
//! battle joined with its team.
//!
//! `KAISSA_E2E_SHOW_LOG=1` prints the daemon's log.

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use shakmaty::variant::Variant;
use support::bot::Bot;
use support::fake_lichess::{
    ArenaSpec, ChallengeSpec, FakeConfig, FakeLichess, FakeVariant, Opponent,
};

const WAIT: Duration = Duration::from_secs(30);
const SCOPES: &str = "bot:play,challenge:read,challenge:write,tournament:write,team:write";

fn fake_config() -> FakeConfig {
    FakeConfig {
        scopes: SCOPES.to_owned(),
        ..FakeConfig::default()
    }
}

/// The daemon with a shallow search, its state and control socket in its
/// directory, plus `extra` TOML.
async fn start(fake: &FakeLichess, extra: &str) -> Bot {
    let mut bot = configured(fake, extra);
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    bot
}

fn configured(fake: &FakeLichess, extra: &str) -> Bot {
    Bot::configured(fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 3\n\
             state_dir = \"{}\"\n[bot]\nabort_time_secs = 60\nconcurrency = 1\n\
             control_socket = \"{}\"\n[tournaments]\ncheck_every_secs = 10\n{extra}",
            fake.url(),
            dir.join("state").display(),
            dir.join("control.sock").display()
        )
    })
}

fn socket(bot: &Bot) -> PathBuf {
    bot.dir.path().join("control.sock")
}

/// `kaissa ctl` on the bot's socket.
fn ctl(bot: &Bot, words: &str) -> (bool, String) {
    support::bot::ctl(&socket(bot), words)
}

fn arena_entry(id: &str, more: &str) -> String {
    format!("[[tournaments.arenas]]\nid = \"{id}\"\n{more}")
}

/// Waits until the bot is in the waiting pool of `id`: lila would pair
/// it now.
async fn wait_in_pool(fake: &FakeLichess, id: &str) {
    let id = id.to_owned();
    fake.wait_until("the bot in the arena's pool", WAIT, |v| {
        v.arena(&id).is_some_and(|a| a.in_pool)
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plays_the_pairings_of_a_configured_arena_then_withdraws_at_a_stop() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec {
        auto_pair: true,
        resign_after: Some(3),
        password: Some("s3cret-code".to_owned()),
        ..ArenaSpec::new("arena001")
    });
    let bot = start(
        &fake,
        &arena_entry("arena001", "password = \"s3cret-code\"\n"),
    )
    .await;
    // Two pairings, one after the other, each played to its end.
    let games = fake
        .wait_for("two arena games over", WAIT, |v| {
            let player = v.arena("arena001")?.player?;
            let over: Vec<_> = player
                .games
                .iter()
                .filter_map(|g| v.game(g))
                .filter(|g| g.is_over())
                .collect();
            (over.len() >= 2).then_some(over)
        })
        .await
        .unwrap();
    for game in &games {
        assert_eq!(game.status, "resign", "{game:?}");
        assert!(game.illegal_moves.is_empty(), "{game:?}");
    }
    assert!(
        !fake.requests().iter().any(|r| r.path.ends_with("/abort")),
        "an arena game was aborted"
    );
    let (ok, status) = ctl(&bot, "status");
    assert!(ok, "{status}");
    assert!(
        status.contains("arena001 Bot Arena (config, running)"),
        "{status}"
    );
    let record = fake.arena("arena001").unwrap();
    assert_eq!(record.withdraws, 0);
    assert_eq!(
        record.joins,
        [true],
        "joined once: Lichess pairs bots by itself"
    );
    let log = bot.stop().await;
    let record = fake.arena("arena001").unwrap();
    assert_eq!(record.withdraws, 1, "withdrawn at the stop");
    assert!(record.player.unwrap().paused);
    assert!(log.contains("arena: waiting for a pairing"), "{log}");
    assert!(log.contains("withdrew from the arena"), "{log}");
    assert!(!log.contains("s3cret"), "the password is in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_joined_before_its_start_is_paired_from_the_start() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec {
        starts_in: Duration::from_secs(4),
        resign_after: Some(2),
        ..ArenaSpec::new("arena002")
    });
    let bot = start(&fake, &arena_entry("arena002", "")).await;
    fake.wait_until("registered early", WAIT, |v| {
        v.arena("arena002").is_some_and(|a| a.player.is_some())
    })
    .await
    .unwrap();
    assert_eq!(
        fake.arena("arena002").unwrap().joins,
        [false],
        "no pairing asked before the start"
    );
    wait_in_pool(&fake, "arena002").await;
    let game = fake.pair_arena("arena002").unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(over.status, "resign", "{over:?}");
    let (_, status) = ctl(&bot, "status");
    assert!(status.contains("(config, running)"), "{status}");
    assert_eq!(fake.arena("arena002").unwrap().joins, [false], "one join");
    let log = bot.stop().await;
    assert!(log.contains("arena joined; it has not started"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_pairing_pauses_the_bot_and_it_joins_again() {
    let fake = FakeLichess::start_with(FakeConfig {
        first_move_timeout: Duration::from_secs(2),
        ..fake_config()
    })
    .await;
    fake.create_arena(ArenaSpec {
        resign_after: Some(2),
        ..ArenaSpec::new("arena003")
    });
    let bot = start(&fake, &arena_entry("arena003", "")).await;
    wait_in_pool(&fake, "arena003").await;
    // The pairing's gameStart is lost: the bot cannot start the game,
    // loses it (noStart) and Lichess pauses it.
    fake.drop_game_starts(1);
    let missed = fake.pair_arena("arena003").unwrap();
    let over = fake.wait_game_over(&missed, WAIT).await.unwrap();
    assert_eq!(over.status, "noStart");
    // Lichess pauses it for 10 s: its join at once is refused ("Your
    // pause is not over yet", a 400), which is not final: it is held off
    // (and says so) and joins again after the pause.
    fake.wait_until("a join refused for the pause", WAIT, |v| {
        v.arena("arena003").is_some_and(|a| a.refused == 1)
    })
    .await
    .unwrap();
    bot.wait_log("joining again later", WAIT).await;
    let (_, status) = ctl(&bot, "status");
    assert!(status.contains("held off: paused by Lichess"), "{status}");
    fake.wait_until("back in the arena", Duration::from_secs(30), |v| {
        v.arena("arena003").is_some_and(|a| a.in_pool)
    })
    .await
    .unwrap();
    let game = fake.pair_arena("arena003").unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(over.status, "resign", "{over:?}");
    let log = bot.stop().await;
    assert!(log.contains("missed an arena pairing"), "{log}");
}

/// An arena whose games the bot cannot play (a variant no engine of its
/// plays) is read before joining and not joined: lila would pair the bot
/// and refuse to abort the game. An arena game in such a variant (joined
/// elsewhere) is resigned, never aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_the_bot_cannot_play_is_not_joined_and_its_games_are_resigned() {
    let fake = FakeLichess::start_with(fake_config()).await;
    let atomic = || ArenaSpec {
        variant: FakeVariant::Rules(Variant::Atomic),
        ..ArenaSpec::new("arena010")
    };
    fake.create_arena(atomic());
    let bot = start(&fake, &arena_entry("arena010", "")).await;
    bot.wait_log("cannot play in the arena", WAIT).await;
    let (_, status) = ctl(&bot, "status");
    assert!(
        status.contains("refused for good: its atomic bullet games cannot be played"),
        "{status}"
    );
    assert!(fake.arena("arena010").unwrap().joins.is_empty());
    bot.stop().await;

    fake.create_arena(ArenaSpec {
        id: "arena011".to_owned(),
        ..atomic()
    });
    let bot = start(&fake, "").await;
    fake.join_arena_elsewhere("arena011");
    let game = fake.pair_arena("arena011").unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert_eq!(over.status, "resign", "{over:?}\n{log}");
    assert!(log.contains("a variant we do not play: resigning"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_joined_elsewhere_is_noticed_and_kept_across_a_restart() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec {
        resign_after: Some(2),
        ..ArenaSpec::new("arena004")
    });
    let mut bot = start(&fake, "").await;
    // Joined on the website with the bot's account: the first the bot
    // hears of it is a game.
    fake.join_arena_elsewhere("arena004");
    let game = fake.pair_arena("arena004").unwrap();
    fake.wait_game_over(&game, WAIT).await.unwrap();
    // After the game Lichess pairs it again by itself: still a player,
    // in the pool, and no join was needed.
    wait_in_pool(&fake, "arena004").await;
    let (_, status) = ctl(&bot, "status --json");
    let json: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(json["tournaments"][0]["id"], "arena004", "{json}");
    assert_eq!(json["tournaments"][0]["origin"], "noticed", "{json}");
    // A restart keeps it (the next run reads it and plays its pairings)
    // and withdraws nothing.
    bot.signal("USR1");
    assert!(bot.wait_exit(WAIT).await.success());
    assert_eq!(fake.arena("arena004").unwrap().withdraws, 0);
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    let game = fake.pair_arena("arena004").unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(over.status, "resign", "{over:?}");
    let (_, status) = ctl(&bot, "status --json");
    let json: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(json["tournaments"][0]["id"], "arena004", "{json}");
    assert!(
        fake.arena("arena004").unwrap().joins.is_empty(),
        "never joined"
    );
    let log = bot.stop().await;
    assert!(log.contains("a game of an arena joined elsewhere"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_refused_once_and_keeps_no_slot() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec {
        password: Some("right".to_owned()),
        ..ArenaSpec::new("arena005")
    });
    let bot = start(
        &fake,
        &arena_entry("arena005", "password = \"wrong-one\"\n"),
    )
    .await;
    bot.wait_log("cannot play in the arena", WAIT).await;
    // Not tried again; the slot stays the challenges'.
    let id = fake.send_challenge(ChallengeSpec {
        challenger: Opponent::human("Alice"),
        resign_after: Some(1),
        ..ChallengeSpec::default()
    });
    fake.wait_until("the challenge accepted", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "accepted")
    })
    .await
    .unwrap();
    let record = fake.arena("arena005").unwrap();
    assert_eq!((record.refused, record.player.is_none()), (1, true));
    let log = bot.stop().await;
    assert!(log.contains("Wrong entry code"), "{log}");
    assert!(!log.contains("wrong-one"), "the password is in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_arena_keeps_its_slot_until_ctl_leaves_it() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec::new("arena006"));
    let bot = start(&fake, "").await;
    let (ok, text) = ctl(&bot, "tournament join arena006");
    assert!(ok, "{text}");
    wait_in_pool(&fake, "arena006").await;
    // One slot, kept for the arena: a challenge waits.
    let id = fake.send_challenge(ChallengeSpec {
        challenger: Opponent::human("Alice"),
        resign_after: Some(1),
        ..ChallengeSpec::default()
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fake.challenge(&id).unwrap().status, "created");
    let (_, status) = ctl(&bot, "status");
    assert!(status.contains("1 kept for arenas"), "{status}");
    assert!(status.contains("waiting for a pairing"), "{status}");
    // Left: the slot goes to the challenge.
    let (ok, text) = ctl(&bot, "tournament leave arena006");
    assert!(ok, "{text}");
    fake.wait_until("the challenge accepted", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "accepted")
    })
    .await
    .unwrap();
    assert_eq!(fake.arena("arena006").unwrap().withdraws, 1);
    let (ok, text) = ctl(&bot, "tournament leave arena006");
    assert!(!ok && text.contains("not in arena arena006"), "{text}");
    bot.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_battle_is_joined_with_its_team() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec {
        team: Some("coders".to_owned()),
        ..ArenaSpec::new("arena007")
    });
    let bot = start(
        &fake,
        &arena_entry("arena007", "team = \"coders\"\njoin_team = true\n"),
    )
    .await;
    wait_in_pool(&fake, "arena007").await;
    assert!(fake.teams().contains("coders"));
    let player = fake.arena("arena007").unwrap().player.unwrap();
    assert_eq!(player.team.as_deref(), Some("coders"));
    bot.stop().await;
}

/// lila's arena join takes a `bot:play` token (any one of an endpoint's
/// scopes will do); a team join needs `team:write`, and without it the
/// join is refused with a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_token_joins_an_arena_and_a_team_needs_its_scope() {
    let fake = FakeLichess::start_with(FakeConfig {
        scopes: "bot:play".to_owned(),
        ..fake_config()
    })
    .await;
    fake.create_arena(ArenaSpec::new("arena008"));
    let bot = start(&fake, &arena_entry("arena008", "")).await;
    wait_in_pool(&fake, "arena008").await;
    let log = bot.stop().await;
    assert!(!log.contains("lacks"), "{log}");
    assert!(!log.contains("cannot play in the arena"), "{log}");

    fake.create_arena(ArenaSpec {
        team: Some("coders".to_owned()),
        ..ArenaSpec::new("arena009")
    });
    let bot = start(
        &fake,
        &arena_entry("arena009", "team = \"coders\"\njoin_team = true\n"),
    )
    .await;
    bot.wait_log("cannot play in the arena", WAIT).await;
    let log = bot.stop().await;
    assert!(
        log.contains("the token lacks the team:write scope"),
        "{log}"
    );
    assert!(log.contains("Missing scope: team:write"), "{log}");
}

/// An arena that ends is read as over and forgotten: its slot goes back
/// to the challenges, and nothing is withdrawn from it at the stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_that_ends_is_forgotten_and_its_slot_freed() {
    let fake = FakeLichess::start_with(fake_config()).await;
    fake.create_arena(ArenaSpec::new("arena012"));
    let bot = start(&fake, &arena_entry("arena012", "")).await;
    wait_in_pool(&fake, "arena012").await;
    let id = fake.send_challenge(ChallengeSpec {
        challenger: Opponent::human("Alice"),
        resign_after: Some(1),
        ..ChallengeSpec::default()
    });
    fake.finish_arena("arena012");
    // Read again within check_every_secs (10 s here).
    fake.wait_until("the challenge accepted", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "accepted")
    })
    .await
    .unwrap();
    let (_, status) = ctl(&bot, "status");
    assert!(status.contains("tournaments: 0"), "{status}");
    let log = bot.stop().await;
    assert!(log.contains("arena over"), "{log}");
    assert_eq!(fake.arena("arena012").unwrap().withdraws, 0);
}
