//! End to end: the real `kaissa run` binary against the fake Lichess
//! server, playing whole games. Searches are depth-limited and the hash is
//! small, so every game takes seconds.
//!
//! Every test reads the daemon's whole log (at debug level for the bot's
//! own modules) and checks that the token never appears in it; set
//! `KAISSA_E2E_SHOW_LOG=1` to see the logs.

use crate::support;

mod pgn;

use std::path::Path;
use std::time::Duration;

use shakmaty::Color;
use support::bot::{Bot, bullet_beside_a_long_search, game_span, log_field};
use support::fake_lichess::{
    AutoPlay, ChallengeSpec, FakeConfig, FakeLichess, FakeTime, FakeVariant, GameRecord, Opponent,
    Policy, Side,
};
use support::pgn::{clk, movetext};

const WAIT: Duration = Duration::from_secs(20);
const GAME: Duration = Duration::from_secs(90);

/// This file's settings: depth 4, an 8 MiB hash, PGNs in the bot's
/// directory, and many games per opponent allowed (the tests send their
/// challenges from one fake user; the cap is tested in tests/queue.rs).
/// Starts the daemon against `fake` with the base settings of these
/// tests plus `extra` (TOML lines, as `[section]\nkey = value`).
async fn start(fake: &FakeLichess, extra: &str) -> Bot {
    start_with(fake, extra, "info,kaissa=debug").await
}

async fn start_with(fake: &FakeLichess, extra: &str, log: &str) -> Bot {
    let mut bot = Bot::configured(fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             [challenge]\nmax_games_per_opponent = 100\n\
             [bot]\npgn_dir = \"{}\"\n{extra}\n",
            fake.url(),
            dir.join("pgn").display()
        )
    });
    bot.log_filter = log.to_owned();
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    bot
}

fn quick_opponent() -> AutoPlay {
    AutoPlay {
        policy: Policy::Greedy,
        think: Duration::from_millis(5),
        accept_draws: false,
    }
}

/// Checks a finished game: ended on the board or by a player, never by an
/// illegal move or the bot's flag, and with a PGN holding its moves.
fn check_finished(game: &GameRecord, pgn_dir: &Path) -> String {
    eprintln!(
        "game {} ({}, bot {:?}): {} after {} plies, winner {:?}",
        game.id,
        game.variant,
        game.bot_color,
        game.status,
        game.moves.len(),
        game.winner
    );
    assert!(
        game.illegal_moves.is_empty(),
        "illegal moves: {:?}",
        game.illegal_moves
    );
    assert!(
        !(game.status == "outoftime" && game.winner != Some(game.bot_color)),
        "the bot lost on time: {game:?}"
    );
    assert_ne!(game.status, "aborted", "{game:?}");
    assert!(game.moves.len() >= 2, "{game:?}");
    let path = pgn_dir.join(format!("{}.pgn", game.id));
    let pgn = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no PGN at {}: {e}", path.display()));
    assert!(pgn.contains("[Site \""), "{pgn}");
    assert!(pgn.contains(&game.id), "{pgn}");
    assert!(pgn.contains("[%eval "), "{pgn}");
    let result = match game.winner {
        Some(Color::White) => "1-0",
        Some(Color::Black) => "0-1",
        None => "1/2-1/2",
    };
    assert!(pgn.contains(&format!("[Result \"{result}\"]")), "{pgn}");
    pgn
}

/// A game where the bot is White and the opponent moves by hand; returns
/// once the bot made its first move.
async fn bot_white_by_hand(fake: &FakeLichess, spec: ChallengeSpec) -> String {
    let id = fake.send_challenge(spec.challenger_color(Side::Black).autoplay(None));
    fake.wait_until("the bot's first move", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 1)
    })
    .await
    .unwrap();
    id
}

async fn pgn_written(bot: &Bot, id: &str) {
    let path = bot.pgn_dir().join(format!("{id}.pgn"));
    for _ in 0..100 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no PGN for {id}");
}

/// Two games at 60+1 against the quick opponent: the bot White in the
/// first, Black in the second.
fn as_white_and_black(fake: &FakeLichess) -> [String; 2] {
    [Side::Black, Side::White].map(|side| {
        fake.send_challenge(
            ChallengeSpec::default()
                .clock(60, 1)
                .challenger_color(side)
                .autoplay(Some(quick_opponent())),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plays_whole_games_as_white_and_black() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 2").await;
    let [as_white, as_black] = as_white_and_black(&fake);
    for (id, color) in [(&as_white, Color::White), (&as_black, Color::Black)] {
        let game = fake.wait_game_over(id, GAME).await.unwrap();
        assert_eq!(game.bot_color, color);
        pgn_written(&bot, id).await;
        let pgn = check_finished(&game, &bot.pgn_dir());
        assert!(pgn.contains("[TimeControl \"60+1\"]"), "{pgn}");
        assert!(!pgn.contains("[FEN"), "{pgn}");
    }
    let log = bot.stop().await;
    for id in [&as_white, &as_black] {
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(id.as_str())).collect();
        assert!(lines.iter().any(|l| l.contains("game start")), "{log}");
        assert!(lines.iter().any(|l| l.contains("game end")), "{log}");
        let moves: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains("overhead_us="))
            .collect();
        assert!(!moves.is_empty(), "{log}");
        assert!(
            moves
                .iter()
                .all(|l| l.contains("depth=") && l.contains("score=") && l.contains("think_ms=")),
            "{moves:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plays_chess960_from_position_and_correspondence() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 3\n[challenge]\ncorrespondence = true",
    )
    .await;
    // Position 0: BBQNNRKR, castling both ways to be found by the engine.
    let c960 = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::Chess960 { position: Some(0) })
            .autoplay(Some(quick_opponent())),
    );
    let fen = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1";
    let from_fen = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::FromPosition {
                fen: fen.to_owned(),
            })
            .autoplay(Some(quick_opponent())),
    );
    let correspondence = fake.send_challenge(
        ChallengeSpec::default()
            .time(FakeTime::Correspondence { days: 2 })
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&c960, GAME).await.unwrap();
    assert_eq!(game.variant, "chess960");
    pgn_written(&bot, &c960).await;
    let pgn = check_finished(&game, &bot.pgn_dir());
    assert!(pgn.contains("[Variant \"Chess960\"]"), "{pgn}");
    assert!(pgn.contains("[FEN \"bbqnnrkr/"), "{pgn}");

    let game = fake.wait_game_over(&from_fen, GAME).await.unwrap();
    assert_eq!(game.variant, "fromPosition");
    pgn_written(&bot, &from_fen).await;
    let pgn = check_finished(&game, &bot.pgn_dir());
    assert!(pgn.contains(&format!("[FEN \"{fen}\"]")), "{pgn}");
    assert!(pgn.contains("[%clk 0:01:00]"), "{pgn}");
    assert!(
        !pgn.contains("[ECO"),
        "no opening from another position: {pgn}"
    );

    let game = fake.wait_game_over(&correspondence, GAME).await.unwrap();
    pgn_written(&bot, &correspondence).await;
    let pgn = check_finished(&game, &bot.pgn_dir());
    assert!(pgn.contains("[TimeControl \"-\"]"), "{pgn}");
    assert!(!pgn.contains("[%clk"), "no clock, no [%clk]: {pgn}");
    bot.stop().await;
}

/// "From position" games set up the Chess960 way (Shredder castling
/// letters, king or rooks off their standard squares) castle by Chess960's
/// rules, and Lichess takes the castling move only king-takes-rook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn castles_king_takes_rook_in_from_position_games_set_up_like_chess960() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nconcurrency = 2").await;
    // King d1, castling rook a1: the only mate is O-O-O (d1a1), and the
    // two-step form (d1c1) is an ordinary king move that does not mate.
    let mate = "2rkr3/2p1p2p/8/8/8/8/PP3PPP/R2K4 w A - 0 1";
    let by_castling = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::FromPosition {
                fen: mate.to_owned(),
            })
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    // Chess960 start position 0 (BBQNNRKR) as a "from position" game, in
    // Shredder notation, played to the end.
    let start = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1";
    let whole = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::FromPosition {
                fen: start.to_owned(),
            })
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&by_castling, GAME).await.unwrap();
    assert_eq!(game.moves, ["d1a1"], "{game:?}");
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("mate", Some(Color::White))
    );
    assert!(game.illegal_moves.is_empty(), "{game:?}");
    pgn_written(&bot, &by_castling).await;
    let pgn = std::fs::read_to_string(bot.pgn_dir().join(format!("{by_castling}.pgn"))).unwrap();
    assert!(pgn.contains("O-O-O#"), "{pgn}");

    let game = fake.wait_game_over(&whole, GAME).await.unwrap();
    pgn_written(&bot, &whole).await;
    check_finished(&game, &bot.pgn_dir());
    bot.stop().await;
}

/// A move Lichess refuses is not posted again in the same position: the
/// bot searches the other moves and the game goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_move_is_replaced_by_another_legal_move() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    // Ra8# is the only mate; the server refuses it once.
    fake.refuse_move("a1a8", 1);
    let fen = "6k1/5ppp/8/8/8/2N5/5PPP/R5K1 w - - 0 1";
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::FromPosition {
                fen: fen.to_owned(),
            })
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    let refused: Vec<_> = game
        .illegal_moves
        .iter()
        .map(|m| (m.uci.as_str(), m.ply))
        .collect();
    assert_eq!(refused, [("a1a8", 0)], "{game:?}");
    assert_ne!(
        game.moves.first().map(String::as_str),
        Some("a1a8"),
        "{game:?}"
    );
    assert!(game.moves.len() >= 2, "{game:?}");
    assert!(
        !(game.status == "outoftime" && game.winner != Some(game.bot_color)),
        "{game:?}"
    );
    let log = bot.stop().await;
    assert_eq!(log.matches("move not played").count(), 1, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_twenty_challenges_never_exceeds_the_concurrency() {
    let fake = FakeLichess::start().await;
    // No queue: beyond the slots, declined (the queue: tests/queue.rs).
    let bot = start(&fake, "[bot]\nconcurrency = 2\n[challenge]\nqueue_size = 0").await;
    let ids: Vec<String> = (0..20)
        .map(|i| {
            fake.send_challenge(
                ChallengeSpec::default()
                    .clock(60, 1)
                    .challenger(Opponent::human(&format!("Player{i}")))
                    .autoplay(Some(quick_opponent())),
            )
        })
        .collect();
    fake.wait_until("every challenge answered", WAIT, |v| {
        ids.iter()
            .all(|id| v.challenge(id).is_some_and(|c| c.status != "created"))
    })
    .await
    .unwrap();
    let mut played = Vec::new();
    for id in &ids {
        let c = fake.challenge(id).unwrap();
        match c.status.as_str() {
            "accepted" => played.push(id.clone()),
            "declined" => assert_eq!(c.decline_reason.as_deref(), Some("later")),
            other => panic!("challenge {id} is {other}"),
        }
    }
    assert!(!played.is_empty() && played.len() <= 2, "{played:?}");
    for id in &played {
        let game = fake.wait_game_over(id, GAME).await.unwrap();
        assert!(game.illegal_moves.is_empty());
    }
    assert!(fake.max_simultaneous_games() <= 2);
    // The slots came back: new challenges are accepted again.
    let again = fake.send_challenge(ChallengeSpec::default().autoplay(Some(quick_opponent())));
    fake.wait_until("the new challenge answered", WAIT, |v| {
        v.challenge(&again).is_some_and(|c| c.status == "accepted")
    })
    .await
    .unwrap();
    fake.wait_game_over(&again, GAME).await.unwrap();
    assert!(fake.max_simultaneous_games() <= 2);
    // Lichess echoes our declines as challengeDeclined: not taken for
    // declines of challenges of ours.
    let log = bot.stop().await;
    assert!(!log.contains("our challenge was declined"), "{log}");
}

/// An accept Lichess refuses (400: a challenge a BOT account may not
/// take) is followed by a decline: its challenger is not left waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_accept_declines_the_challenge() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    fake.fail_matching_with_status("/accept", 1, 400);
    let id = fake.send_challenge(ChallengeSpec::default().autoplay(None));
    fake.wait_until("the challenge declined", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "declined")
    })
    .await
    .unwrap();
    let c = fake.challenge(&id).unwrap();
    assert_eq!(c.decline_reason.as_deref(), Some("generic"));
    // The slot came back: the next challenge is played.
    let next = fake.send_challenge(ChallengeSpec::default().autoplay(Some(quick_opponent())));
    fake.wait_game_over(&next, GAME).await.unwrap();
    bot.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greets_answers_chat_commands_and_says_goodbye() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    let id = bot_white_by_hand(
        &fake,
        ChallengeSpec::default().challenger(Opponent::human("Carol")),
    )
    .await;
    // The greeting is posted off the game task (after reading the chat
    // back), so the first move can come before it: wait for it, or the
    // answers below may overtake it.
    fake.wait_until("the greetings", WAIT, |v| {
        v.game(&id).is_some_and(|g| {
            !g.bot_chat("player").is_empty() && !g.bot_chat("spectator").is_empty()
        })
    })
    .await
    .unwrap();
    fake.opponent_says(&id, "player", "!help").unwrap();
    fake.opponent_says(&id, "player", "!name").unwrap();
    fake.opponent_says(&id, "spectator", "!eval").unwrap();
    fake.opponent_says(&id, "player", "!eval").unwrap();
    fake.opponent_says(&id, "player", "hello there").unwrap();
    fake.wait_until("four answers", WAIT, |v| {
        v.game(&id)
            .is_some_and(|g| g.bot_chat("player").len() >= 4 && g.bot_chat("spectator").len() >= 2)
    })
    .await
    .unwrap();
    let game = fake.game(&id).unwrap();
    let player = game.bot_chat("player");
    let spectator = game.bot_chat("spectator");
    assert!(
        player[0].contains("Carol") && player[0].contains("KaissaBot"),
        "{player:?}"
    );
    assert!(
        player.iter().any(|t| t.contains("!eval")),
        "!help: {player:?}"
    );
    assert!(
        player.iter().any(|t| t.contains("kaissa")),
        "!name: {player:?}"
    );
    assert!(
        player.iter().any(|t| t.contains("spectators")),
        "!eval: {player:?}"
    );
    assert!(
        spectator.iter().any(|t| t.starts_with("Eval ")),
        "{spectator:?}"
    );
    assert_eq!(player.len(), 4, "no answer to plain chat: {player:?}");

    fake.opponent_resigns(&id).unwrap();
    fake.wait_until("goodbyes", WAIT, |v| {
        v.game(&id).is_some_and(|g| {
            g.bot_chat("player")
                .iter()
                .any(|t| t.starts_with("Good game"))
                && g.bot_chat("spectator")
                    .iter()
                    .any(|t| t.contains("watching"))
        })
    })
    .await
    .unwrap();
    pgn_written(&bot, &id).await;
    let pgn = std::fs::read_to_string(bot.pgn_dir().join(format!("{id}.pgn"))).unwrap();
    assert!(
        pgn.contains("[Result \"1-0\"]") && pgn.contains("[Black \"Carol\"]"),
        "{pgn}"
    );
    bot.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draws_takebacks_abort_and_claims_follow_the_policy() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 1,
        ..FakeConfig::default()
    })
    .await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 3\nabort_time_secs = 1\naccept_draw = true\noffer_draw = false\n\
         draw_moves = 1\ndraw_score_cp = 100000",
    )
    .await;
    // Takeback declined, then a draw offer accepted ("equal" is anything
    // within 1000 pawns here).
    let drawn = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(None),
    );
    // The opponent leaves: the bot claims the win.
    let left = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(None),
    );

    // The opponent answers at once (the bot aborts after 1 s).
    for id in [&drawn, &left] {
        fake.wait_until("the bot's first move", WAIT, |v| {
            v.game(id).is_some_and(|g| g.moves.len() == 1)
        })
        .await
        .unwrap();
        fake.opponent_move(id, "g8f6").unwrap();
        fake.wait_until("the bot's second move", WAIT, |v| {
            v.game(id).is_some_and(|g| g.moves.len() == 3)
        })
        .await
        .unwrap();
    }
    // The opponent never moves: the bot aborts.
    let silent = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(None),
    );
    let game = fake.wait_game_over(&silent, WAIT).await.unwrap();
    assert_eq!(game.status, "aborted");
    assert_eq!(game.moves.len(), 1);

    fake.opponent_proposes_takeback(&drawn).unwrap();
    fake.wait_until("the takeback answer", WAIT, |v| {
        v.game(&drawn)
            .is_some_and(|g| !g.takeback_answers.is_empty())
    })
    .await
    .unwrap();
    assert_eq!(fake.game(&drawn).unwrap().takeback_answers, [false]);
    fake.opponent_offers_draw(&drawn).unwrap();
    let game = fake.wait_game_over(&drawn, WAIT).await.unwrap();
    assert_eq!(
        (game.status.as_str(), game.draw_answers.as_slice()),
        ("draw", &[true][..])
    );
    assert_eq!(game.moves.len(), 3);

    fake.opponent_gone(&left, true).unwrap();
    let game = fake.wait_game_over(&left, WAIT).await.unwrap();
    assert_eq!(game.status, "timeout");
    assert_eq!(game.winner, Some(Color::White));
    let log = bot.stop().await;
    assert!(log.contains("aborting"), "{log}");
    assert!(log.contains("claiming victory"), "{log}");
}

/// An arena game whose opponent never moves is not aborted (that would
/// throw the point away): Lichess ends it against the player who did not
/// start (`noStart`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_game_is_never_aborted() {
    let fake = FakeLichess::start_with(FakeConfig {
        first_move_timeout: Duration::from_secs(4),
        ..FakeConfig::default()
    })
    .await;
    let bot = start(&fake, "[bot]\nabort_time_secs = 1").await;
    let id = fake
        .start_game(
            ChallengeSpec::default()
                .tournament("arena2026")
                .autoplay(None),
            Color::White,
        )
        .unwrap();
    let game = fake.wait_game_over(&id, WAIT).await.unwrap();
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("noStart", Some(Color::White)),
        "{game:?}"
    );
    assert_eq!(game.moves.len(), 1);
    assert!(
        !fake.requests().iter().any(|r| r.path.ends_with("/abort")),
        "{:?}",
        fake.requests()
    );
    let log = bot.stop().await;
    assert!(log.contains("tournament=\"arena2026\""), "{log}");
}

/// A challenge the Bot API cannot play (`compat.bot` false) is declined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_the_bot_api_cannot_play_is_declined() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    let id = fake.send_challenge(ChallengeSpec::default().bot_compatible(false));
    fake.wait_until("the decline", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "declined")
    })
    .await
    .unwrap();
    assert_eq!(
        fake.challenge(&id).unwrap().decline_reason.as_deref(),
        Some("tooFast")
    );
    bot.stop().await;
}

/// lila admits set-ups with more than 16 pieces or 8 pawns a side; the
/// bot's board does not. Such a challenge is declined before it is
/// accepted (`standard`, with the reason logged), and such a game started
/// anyway (accepted elsewhere) is aborted at once, not left to lapse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_the_bot_cannot_play_is_declined_or_aborted() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    // Nine white pawns.
    let nine = FakeVariant::FromPosition {
        fen: "rnbqkbnr/pppppppp/8/8/8/P7/PPPPPPPP/RNBQKBNR w KQkq - 0 1".to_owned(),
    };
    let id = fake.send_challenge(ChallengeSpec::default().variant(nine.clone()));
    fake.wait_until("the challenge declined", WAIT, |v| {
        v.challenge(&id).is_some_and(|c| c.status == "declined")
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    assert_eq!(
        fake.challenge(&id).unwrap().decline_reason.as_deref(),
        Some("standard")
    );
    let game = fake
        .start_game(
            ChallengeSpec::default().variant(nine).autoplay(None),
            Color::White,
        )
        .unwrap();
    let over = fake.wait_game_over(&game, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert_eq!(over.status, "aborted", "{log}");
    assert!(log.contains("cannot play its position"), "{log}");
    assert!(log.contains("cannot play this position"), "{log}");
}

/// lila writes castling king-takes-rook (e8h8) on the game stream in
/// standard chess too, unless the legacy form (e8g8) is asked for: the
/// bot reads both, and its board stays the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn castling_arrives_in_either_form() {
    for legacy in [false, true] {
        let fake = FakeLichess::start_with(FakeConfig {
            legacy_castling: legacy,
            ..FakeConfig::default()
        })
        .await;
        let bot = start(&fake, "").await;
        let id = bot_white_by_hand(
            &fake,
            ChallengeSpec::default().variant(FakeVariant::FromPosition {
                fen: "r3k2r/pppqbppp/2n1bn2/4p3/4P3/2N1BN2/PPPQBPPP/R3K2R w KQkq - 0 1".to_owned(),
            }),
        )
        .await;
        // Black castles short (written in the game's own form here; the
        // stream carries e8h8, or e8g8 when legacy).
        fake.opponent_move(&id, "e8g8").unwrap();
        fake.wait_until("the bot's answer", WAIT, |v| {
            v.game(&id).is_some_and(|g| g.moves.len() == 3)
        })
        .await
        .unwrap_or_else(|e| panic!("legacy {legacy}: {e}: {}", bot.log()));
        let game = fake.game(&id).unwrap();
        fake.opponent_resigns(&id).unwrap();
        fake.wait_game_over(&id, WAIT).await.unwrap();
        let log = bot.stop().await;
        assert!(game.illegal_moves.is_empty(), "legacy {legacy}: {log}");
        // The bot's board after castling: its own move is legal there, and
        // it read the king on g8 (a move line with the position's SAN).
        assert_eq!(game.moves[1], "e8g8");
        assert!(!log.contains("illegal"), "legacy {legacy}: {log}");
    }
}

/// lila takes a claim only on the opponent's turn: an opponent who leaves
/// on ours is claimed against once our move is in, never before (a claim
/// on our own turn does nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_waits_for_the_opponents_turn() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 0,
        ..FakeConfig::default()
    })
    .await;
    // A full search (about a second on a 60 s clock), so the opponent
    // leaves while the bot thinks.
    let bot = start(&fake, "[engine]\nmax_depth = 0\nponder = false").await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default().clock(60, 0)).await;
    fake.opponent_move(&id, "e7e5").unwrap();
    fake.opponent_gone(&id, true).unwrap();
    let game = fake.wait_game_over(&id, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert_eq!(
        (game.status.as_str(), game.winner, game.moves.len()),
        ("timeout", Some(Color::White), 3),
        "{log}"
    );
    assert_eq!((game.refused_claims, game.ignored_claims), (0, 0), "{log}");
}

/// lila answers a claim it cannot take now (`mightClaimWin` false: our
/// own turn) with 200 and does nothing. The opponent's move crossed our
/// claim, so it came on our turn: the bot took the 200 for done and never
/// claimed again (no new `opponentGone` comes), and the game hung until
/// the opponent's flag fell. It claims again once its move is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_lichess_answered_without_effect_is_made_again() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 0,
        ..FakeConfig::default()
    })
    .await;
    let bot = start(&fake, "[engine]\nponder = false").await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default().clock(60, 0)).await;
    fake.opponent_move(&id, "e7e5").unwrap();
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    fake.move_crosses_claim(1);
    fake.opponent_gone(&id, true).unwrap();
    let game = fake
        .wait_game_over(&id, WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let log = bot.stop().await;
    assert_eq!(
        (game.status.as_str(), game.winner, game.moves.len()),
        ("timeout", Some(Color::White), 5),
        "{log}"
    );
    assert_eq!((game.ignored_claims, game.refused_claims), (1, 0), "{log}");
}

/// A claim is a request of its own: while Lichess is slow to answer it
/// (10 s here; its retries can take a minute), the game reads its stream
/// and answers the opponent's move at once. The claim used to be awaited
/// in the game's loop: no move, no engine answer, no cut for another
/// game until it returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_claim_does_not_hold_up_the_game() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 0,
        ..FakeConfig::default()
    })
    .await;
    let bot = start(&fake, "[engine]\nponder = false").await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default().clock(60, 0)).await;
    fake.delay_matching("/claim-victory", 1, Duration::from_secs(10));
    fake.opponent_gone(&id, true).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Back, and moving, while the claim waits for its answer.
    fake.opponent_gone(&id, false).unwrap();
    fake.opponent_move(&id, "e7e5").unwrap();
    let moved = std::time::Instant::now();
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    let took = moved.elapsed();
    let mut bot = bot;
    let log = bot.log();
    bot.kill().await;
    assert!(log.contains("claiming victory"), "{log}");
    assert!(
        took < Duration::from_secs(5),
        "the reply waited {took:?} for the claim: {log}"
    );
}

/// When the opponent leaves and we cannot win on material, the bot
/// claims the draw (Lichess would not give it the win); a rated game's
/// rating change is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draw_is_claimed_where_victory_cannot_be_and_the_rating_change_is_logged() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 1,
        ..FakeConfig::default()
    })
    .await;
    let bot = start(&fake, "").await;
    // A lone white king (the bot) against king and rook. The opponent
    // moves once (lila takes no claim before both sides moved), then
    // leaves.
    let id = bot_white_by_hand(
        &fake,
        ChallengeSpec::default()
            .rated(true)
            .variant(FakeVariant::FromPosition {
                fen: "4k3/8/8/8/8/8/r7/4K3 w - - 0 1".to_owned(),
            }),
    )
    .await;
    fake.opponent_move(&id, "a2a3").unwrap();
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    fake.opponent_gone(&id, true).unwrap();
    let game = fake.wait_game_over(&id, WAIT).await.unwrap();
    // lila's `DrawForce`: `timeout` without a winner.
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("timeout", None),
        "{game:?}"
    );
    // The game is over on the server; its `gameFinish` may still be on
    // its way to the daemon.
    bot.wait_log(&format!("game finished on Lichess game={id}"), WAIT)
        .await;
    let log = bot.stop().await;
    assert!(log.contains("claiming a draw"), "{log}");
    assert!(!log.contains("claiming victory"), "{log}");
    let finished = log
        .lines()
        .find(|l| l.contains("game finished on Lichess") && l.contains(id.as_str()))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(finished.contains("rating_diff=0"), "{finished}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_offers_are_declined_unless_the_game_is_dead_equal() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default()).await;
    // Default policy: ten equal moves are needed; one is not enough.
    fake.opponent_offers_draw(&id).unwrap();
    fake.wait_until("the draw answer", WAIT, |v| {
        v.game(&id).is_some_and(|g| !g.draw_answers.is_empty())
    })
    .await
    .unwrap();
    let game = fake.game(&id).unwrap();
    assert_eq!(game.draw_answers, [false]);
    assert_eq!(game.status, "started");
    fake.opponent_resigns(&id).unwrap();
    fake.wait_game_over(&id, WAIT).await.unwrap();
    bot.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_draws_and_resigns_by_the_thresholds() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\noffer_draw = true\ndraw_moves = 1\ndraw_score_cp = 100000\n\
         resign_enabled = true\nresign_moves = 1\nresign_score_cp = 1000\ndraw_resign_min_moves = 0",
    )
    .await;
    // "Equal" is anything short of a mate here: the bot offers at once,
    // and this opponent takes it.
    let drawn = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(Some(AutoPlay {
                accept_draws: true,
                ..quick_opponent()
            })),
    );
    // A queen and a rook down: the bot resigns after its first search.
    let lost = fake.send_challenge(
        ChallengeSpec::default()
            .variant(FakeVariant::FromPosition {
                fen: "4k3/8/8/8/8/8/8/QR2K3 b - - 0 1".to_owned(),
            })
            .challenger_color(Side::White)
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&drawn, GAME).await.unwrap();
    assert_eq!(game.status, "draw", "{game:?}");
    assert!(game.bot_draw_offers >= 1);
    assert_eq!(game.dropped_draw_offers, 0, "{game:?}");
    let game = fake.wait_game_over(&lost, GAME).await.unwrap();
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("resign", Some(Color::White))
    );
    assert!(game.moves.is_empty(), "{game:?}");
    let log = bot.stop().await;
    assert!(log.contains("resigning a lost position"), "{log}");
}

/// A resignation Lichess does not take does not leave the game to hang:
/// the move is played instead, and the next turn resigns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_resignation_plays_the_move_instead() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nresign_enabled = true\nresign_moves = 1\nresign_score_cp = 1000\n\
         draw_resign_min_moves = 0",
    )
    .await;
    fake.fail_matching_with_status("/resign", 1, 400);
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant(FakeVariant::FromPosition {
                fen: "4k3/8/8/8/8/8/8/QR2K3 b - - 0 1".to_owned(),
            })
            .challenger_color(Side::White)
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("resign", Some(Color::White)),
        "{game:?}"
    );
    assert_eq!(game.moves.len(), 2, "{game:?}");
    let log = bot.stop().await;
    assert!(log.contains("playing the move instead"), "{log}");
}

/// `!wait` holds off the abort of a game whose opponent has not moved;
/// `!challenge` and `!pv` answer too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_extends_the_first_move_wait() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nabort_time_secs = 2").await;
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::White)
            .autoplay(None),
    );
    fake.wait_until("the greeting", WAIT, |v| {
        v.game(&id)
            .is_some_and(|g| !g.bot_chat("player").is_empty())
    })
    .await
    .unwrap();
    fake.opponent_says(&id, "player", "!wait please").unwrap();
    fake.opponent_says(&id, "player", "!challenge").unwrap();
    fake.opponent_says(&id, "spectator", "!pv").unwrap();
    // Past the 2 s abort time: still waiting.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let game = fake.game(&id).unwrap();
    assert_eq!(game.status, "started", "{game:?}");
    let player = game.bot_chat("player");
    assert!(
        player.iter().any(|t| t.contains("I wait 60 seconds")),
        "{player:?}"
    );
    assert!(
        player
            .iter()
            .any(|t| t.starts_with("Challenge me") && t.contains("lichess.org/@/KaissaBot")),
        "{player:?}"
    );
    let spectator = game.bot_chat("spectator");
    assert!(
        spectator.iter().any(|t| t == "No line yet."),
        "{spectator:?}"
    );
    fake.opponent_move(&id, "e2e4").unwrap();
    fake.wait_until("the bot's reply", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 2)
    })
    .await
    .unwrap();
    fake.opponent_resigns(&id).unwrap();
    fake.wait_game_over(&id, WAIT).await.unwrap();
    let log = bot.stop().await;
    assert!(log.contains("abort timer extended"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_resigns_while_an_opponent_without_increment_may_flag() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\nresign_enabled = true\nresign_moves = 1\n\
         draw_resign_min_moves = 0\nopponent_low_time_secs = 60",
    )
    .await;
    // A queen and a rook down in both games; the opponent has 30 s, with
    // an increment in one game only.
    let lost = |increment_secs| {
        ChallengeSpec::default()
            .variant(FakeVariant::FromPosition {
                fen: "4k3/8/8/8/8/8/8/QR2K3 b - - 0 1".to_owned(),
            })
            .clock(30, increment_secs)
            .challenger_color(Side::White)
            .autoplay(None)
    };
    let with_increment = fake.send_challenge(lost(1));
    let flagging = fake.send_challenge(lost(0));
    let game = fake.wait_game_over(&with_increment, GAME).await.unwrap();
    assert_eq!(
        (game.status.as_str(), game.winner),
        ("resign", Some(Color::White)),
        "{game:?}"
    );
    // Without an increment the bot plays on, move after move.
    for plies in [1, 3] {
        fake.wait_until("the bot's move", WAIT, |v| {
            v.game(&flagging).is_some_and(|g| g.moves.len() == plies)
        })
        .await
        .unwrap();
        if plies == 3 {
            break;
        }
        let reply = fake.legal_moves(&flagging).unwrap()[0].clone();
        fake.opponent_move(&flagging, &reply).unwrap();
    }
    let game = fake.game(&flagging).unwrap();
    assert_eq!(game.status, "started", "{game:?}");
    fake.opponent_resigns(&flagging).unwrap();
    fake.wait_game_over(&flagging, WAIT).await.unwrap();
    let log = bot.stop().await;
    let resigned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("resigning a lost position"))
        .collect();
    assert_eq!(resigned.len(), 1, "{resigned:?}");
    assert!(resigned[0].contains(&with_increment), "{resigned:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_unknown_lines_and_failed_posts_do_not_stop_the_daemon() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "").await;
    fake.inject_malformed_event_line().unwrap();
    fake.inject_unknown_event().unwrap();
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .challenger_color(Side::White)
            .autoplay(None),
    );
    fake.wait_until("the game stream", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.stream_connections > 0)
    })
    .await
    .unwrap();
    // Give the stream a moment to be subscribed, then garble it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    fake.inject_game_line(&id, r#"{"type":"gameState","moves":"#)
        .unwrap();
    fake.inject_game_line(&id, r#"{"type":"premoveHint","square":"e4"}"#)
        .unwrap();
    fake.inject_game_line(&id, "not json at all").unwrap();
    // And two move posts fail with 502: the urgent path retries them.
    fake.fail_moves_with_5xx(2);
    fake.set_autoplay(&id, Some(quick_opponent())).unwrap();
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    assert!(game.illegal_moves.is_empty());
    assert_eq!(game.stream_connections, 1, "the stream was not reopened");
    // The event stream is still the first one, and still answered.
    fake.inject_malformed_event_line().unwrap();
    let c = fake.send_challenge(ChallengeSpec::default().variant(FakeVariant::Other {
        key: "atomic".into(),
    }));
    fake.wait_until("the decline", WAIT, |v| {
        v.challenge(&c).is_some_and(|c| c.status == "declined")
    })
    .await
    .unwrap();
    assert_eq!(fake.view(|v| v.event_stream_connections()), 1);
    let log = bot.stop().await;
    assert!(log.contains("line skipped"), "{log}");
}

/// The `value` of the first `key=value` field of a log line.
fn rss_kib(pid: u32) -> u64 {
    proc_status_kib(pid, "VmRSS:")
}

fn proc_status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Measurements for the closing note, not a check: the daemon's own time
/// per move (from a `gameState` arriving to the move post leaving, less
/// the engine's thinking and any wait for a search permit) over at least
/// 500 moves, and its memory idle and with 4 games in progress.
///
/// `cargo test --profile tests --test integration -- --ignored --nocapture bot_e2e::measure`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn measure_move_overhead_and_memory() {
    let fake = FakeLichess::start().await;
    // 64 MiB of hash in all: 16 MiB per game.
    let bot = start_with(
        &fake,
        "[engine]\nhash_mb = 64\n[bot]\nconcurrency = 4\noffer_draw = false\nresign_enabled = false",
        "info",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_kib(bot.pid());
    let mut busy = 0;
    let mut moves = 0;
    let mut games = 0;
    while moves < 500 {
        let ids: Vec<String> = (0..4)
            .map(|i| {
                fake.send_challenge(
                    ChallengeSpec::default()
                        .clock(300, 3)
                        .challenger(Opponent::human(&format!("Opp{i}")))
                        .autoplay(Some(AutoPlay {
                            policy: Policy::Random,
                            think: Duration::from_millis(10),
                            accept_draws: false,
                        })),
                )
            })
            .collect();
        fake.wait_until("4 games in progress", WAIT, |v| v.games_in_progress() == 4)
            .await
            .unwrap();
        while fake.view(|v| v.games_in_progress()) == 4 {
            busy = busy.max(rss_kib(bot.pid()));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for id in &ids {
            fake.wait_game_over(id, GAME).await.unwrap();
        }
        games += 4;
        moves = bot
            .log()
            .lines()
            .filter(|l| l.contains("overhead_us="))
            .count();
    }
    let peak = proc_status_kib(bot.pid(), "VmHWM:");
    let log = bot.stop().await;
    let mut overhead: Vec<u64> = log
        .lines()
        .filter_map(|l| log_field::<u64>(l, "overhead_us"))
        .collect();
    let mut queued: Vec<u64> = log
        .lines()
        .filter_map(|l| log_field::<u64>(l, "queued_us"))
        .collect();
    let mut post: Vec<u64> = log
        .lines()
        .filter_map(|l| log_field::<u64>(l, "post_us"))
        .collect();
    overhead.sort_unstable();
    queued.sort_unstable();
    post.sort_unstable();
    println!(
        "moves {} in {games} games; overhead (arrival to post, less think and queue): \
         p50 {} us, p99 {} us, max {} us",
        overhead.len(),
        percentile(&overhead, 50.0),
        percentile(&overhead, 99.0),
        overhead.last().copied().unwrap_or(0)
    );
    println!(
        "wait for a search permit (4 games, engine.threads = 1): p50 {} us, p99 {} us; \
         move post round trip (request out, answer in) p50 {} us, p99 {} us",
        percentile(&queued, 50.0),
        percentile(&queued, 99.0),
        percentile(&post, 50.0),
        percentile(&post, 99.0)
    );
    println!(
        "RSS idle {idle} KiB, with 4 games in progress (16 MiB hash each) max {busy} KiB, \
         peak (VmHWM) {peak} KiB"
    );
}

/// The load benchmark of the scheduling issue, not a check: N games at
/// once on T search threads against the fake server, a mix of clocks,
/// reporting per clock the games, time losses, clock left at the end,
/// think time and the wait for a search thread, and the daemon's RSS and
/// CPU. `KAISSA_MIX` picks the mix:
///
/// - `a`: 1 thread, four 3+2 games and two bullet ones (30+0, 1+0);
/// - `b`: 2 threads, eight 1+0 games;
/// - `c`: 2 threads, sixteen games from 30+0 to 5+3;
/// - `d`: 2 threads, 64 correspondence games parked and four 3+2 ones;
/// - a number N: 2 threads, N 3+2 games (the daemon's cost per game).
///
/// `KAISSA_MIX=a cargo test --profile tests --test integration -- --ignored --nocapture
/// bot_e2e::measure_load`
/// (`KAISSA_BIN=path/to/kaissa` measures another build of the daemon,
/// `KAISSA_LOG_OUT=file` keeps its log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn measure_load() {
    let mix = std::env::var("KAISSA_MIX").unwrap_or_else(|_| "a".into());
    let blitz = |n: usize| vec![(180, 2); n];
    let (threads, clocks, parked): (u32, Vec<(u32, u32)>, usize) = match mix.as_str() {
        "a" => (1, [blitz(4), vec![(30, 0), (60, 0)]].concat(), 0),
        "b" => (2, vec![(60, 0); 8], 0),
        "c" => {
            let eight = [
                (30, 0),
                (60, 0),
                (60, 1),
                (120, 1),
                (180, 0),
                (180, 2),
                (300, 0),
                (300, 3),
            ];
            (2, [eight, eight].concat(), 0)
        }
        "d" => (2, blitz(4), 64),
        other => match other.parse() {
            Ok(n) => (2, blitz(n), 0),
            Err(_) => panic!("KAISSA_MIX={other}: a, b, c, d or a number of games"),
        },
    };
    let fake = FakeLichess::start().await;
    let games = clocks.len() + parked;
    // KAISSA_E2E_WEB_POLL=1: the web server on, its status page's JSON and
    // the metrics asked for every 2 s throughout (what an open page costs).
    let web_port = std::env::var("KAISSA_E2E_WEB_POLL").is_ok().then(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    });
    let web = web_port.map_or(String::new(), |port| {
        format!("\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\"")
    });
    let extra = format!(
        "[engine]\nthreads = {threads}\nmax_depth = 0\nhash_mb = {}\n\
         [bot]\nconcurrency = {games}\noffer_draw = false\nresign_enabled = false\n\
         [challenge]\ncorrespondence = true{web}",
        16 * games.min(16)
    );
    let mut bot = Bot::configured(&fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[challenge]\nmax_games_per_opponent = 1000\n\
             [bot]\npgn_dir = \"{}\"\n{extra}\n",
            fake.url(),
            dir.join("pgn").display()
        )
    });
    bot.log_filter = "info".into();
    bot.spawn();
    bot.wait_log("event stream open", WAIT).await;
    let pid = bot.pid();
    if let Some(port) = web_port {
        tokio::spawn(async move {
            loop {
                for path in ["api/status", "metrics"] {
                    let _ = reqwest::get(format!("http://127.0.0.1:{port}/{path}")).await;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
    }
    let cpu0 = cpu_ticks(pid);
    let t0 = std::time::Instant::now();
    for i in 0..parked {
        // The bot is Black and the opponent never moves: parked at once.
        let id = fake.send_challenge(
            ChallengeSpec::default()
                .time(FakeTime::Correspondence { days: 3 })
                .challenger(Opponent::human(&format!("Corr{i}")))
                .challenger_color(Side::White)
                .autoplay(None),
        );
        fake.wait_until("the game parked", WAIT, |v| v.game(&id).is_some())
            .await
            .unwrap();
    }
    if parked > 0 {
        bot.wait_log("parked", WAIT).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let parked_rss = rss_kib(pid);
    let opponent = Some(AutoPlay {
        policy: Policy::Greedy,
        think: Duration::from_millis(50),
        accept_draws: false,
    });
    let ids: Vec<(String, (u32, u32))> = clocks
        .iter()
        .enumerate()
        .map(|(i, &(limit, inc))| {
            let side = if i % 2 == 0 { Side::White } else { Side::Black };
            let id = fake.send_challenge(
                ChallengeSpec::default()
                    .clock(limit, inc)
                    .challenger(Opponent::human(&format!("Live{i}")))
                    .challenger_color(side)
                    .autoplay(opponent),
            );
            (id, (limit, inc))
        })
        .collect();
    let mut max_rss = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(1800);
    loop {
        max_rss = max_rss.max(rss_kib(pid));
        let over = fake.view(|v| {
            ids.iter()
                .all(|(id, _)| v.game(id).is_some_and(|g| g.is_over()))
        });
        if over || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (cpu_ticks(pid) - cpu0) as f64 / 100.0;
    bot.signal("TERM");
    bot.wait_log("shutting down", WAIT).await;
    let log = bot.stop().await;
    if let Ok(path) = std::env::var("KAISSA_LOG_OUT") {
        std::fs::write(&path, &log).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let live = ids.len().max(1) as f64;
    println!(
        "mix {mix}: {threads} threads, {} live games, {parked} parked; daemon RSS: {parked_rss} KiB \
         with the parked games, max {max_rss} KiB ({:.0} KiB a live game); CPU {cpu:.1} s in \
         {wall:.0} s ({:.0}% of a core, {:.0}% a live game)",
        ids.len(),
        max_rss.saturating_sub(parked_rss) as f64 / live,
        100.0 * cpu / wall,
        100.0 * cpu / wall / live
    );
    println!(
        "| control | games | time losses | clock left at end avg / min (s) | think avg (ms) \
         | share of a thread planned avg / min | wait on the clock p50 / p99 / max (ms) \
         | first moves' wait max (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut controls: Vec<(u32, u32)> = clocks.clone();
    controls.sort_unstable();
    controls.dedup();
    for control in controls {
        let mine: Vec<&String> = ids
            .iter()
            .filter(|(_, c)| *c == control)
            .map(|(id, _)| id)
            .collect();
        let (mut losses, mut left) = (0, Vec::new());
        for id in &mine {
            let g = fake.game(id).expect("a game");
            let ours = if g.bot_color == Color::White {
                g.wtime_ms
            } else {
                g.btime_ms
            };
            if g.status == "outoftime" && g.winner != Some(g.bot_color) {
                losses += 1;
            }
            left.push(ours.max(0) as f64 / 1000.0);
        }
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| mine.iter().any(|id| l.contains(&game_span(id))))
            .filter(|l| l.contains(" queued_us="))
            .collect();
        // The first two plies are off the clock (Lichess starts it once
        // both sides have moved): their waits are shown apart.
        let on_clock = |l: &&&str| log_field::<u64>(l, "ply").is_some_and(|p| p >= 2);
        let mut queued: Vec<u64> = lines
            .iter()
            .filter(on_clock)
            .filter_map(|l| log_field::<u64>(l, "queued_us"))
            .collect();
        queued.sort_unstable();
        let first_max = lines
            .iter()
            .filter(|l| !on_clock(l))
            .filter_map(|l| log_field::<u64>(l, "queued_us"))
            .max()
            .unwrap_or(0);
        let think: Vec<u64> = lines
            .iter()
            .filter_map(|l| log_field::<u64>(l, "think_ms"))
            .collect();
        // The share of a thread each search planned for (1 when the
        // build does not log it).
        let shares: Vec<f64> = lines
            .iter()
            .filter(on_clock)
            .map(|l| log_field::<f64>(l, "share").unwrap_or(1.0))
            .collect();
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let ms = |us: u64| us as f64 / 1000.0;
        println!(
            "| {}+{} | {} | {losses} | {:.1} / {:.1} | {:.0} | {:.2} / {:.2} | {:.0} / {:.0} / {:.0} \
             | {:.0} |",
            control.0,
            control.1,
            mine.len(),
            avg(&left),
            left.iter().copied().fold(f64::INFINITY, f64::min),
            avg(&think.iter().map(|&t| t as f64).collect::<Vec<_>>()),
            avg(&shares),
            shares.iter().copied().fold(1.0, f64::min),
            ms(percentile(&queued, 50.0)),
            ms(percentile(&queued, 99.0)),
            ms(queued.last().copied().unwrap_or(0)),
            ms(first_max)
        );
    }
}

/// CPU time (user + system) of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 14th field, stime the 15th.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    num(11) + num(12)
}

/// Sums `key=N` over the game-end lines of `log`.
fn sum_field(log: &str, key: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains("game end"))
        .filter_map(|l| log_field::<u64>(l, key))
        .sum()
}

/// One search thread, a slow game thinking long and a bullet game: the
/// bullet game's searches never wait behind the slow one's (which is cut
/// short or suspended for it), and the slow game goes on playing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bullet_game_never_waits_behind_a_long_search() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\noffer_draw = false\nresign_enabled = false\n\
         [engine]\nthreads = 1\nmax_depth = 0\nponder = false",
    )
    .await;
    let opponent = Some(AutoPlay {
        policy: Policy::Random,
        think: Duration::from_millis(20),
        accept_draws: false,
    });
    // The slow game: 30 minutes, the bot White, thinking tens of seconds
    // a move after its first.
    let seen = bullet_beside_a_long_search(
        &fake,
        bot,
        ChallengeSpec::default()
            .clock(1800, 0)
            .challenger_color(Side::Black)
            .autoplay(opponent),
        ChallengeSpec::default()
            .clock(60, 0)
            .challenger_color(Side::Black)
            .autoplay(opponent),
        12,
    )
    .await;
    seen.assert_served();
    let log = &seen.log;
    assert!(
        log.contains("search suspended") || log.contains("search cut short"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ponders_on_the_opponents_time() {
    let fake = FakeLichess::start().await;
    // Two games on one search thread: a ponder search must give its
    // permit to the other game's real search.
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\n[engine]\nponder = true\nthreads = 1",
    )
    .await;
    let opponent = AutoPlay {
        policy: Policy::Greedy,
        think: Duration::from_millis(30),
        accept_draws: false,
    };
    // Two rounds of two games (the bot declines a third one meanwhile).
    let mut ids: Vec<String> = Vec::new();
    for _round in 0..2 {
        let round: Vec<String> = [Side::Black, Side::White]
            .into_iter()
            .map(|side| {
                fake.send_challenge(
                    ChallengeSpec::default()
                        .clock(60, 1)
                        .challenger_color(side)
                        .autoplay(Some(opponent)),
                )
            })
            .collect();
        for id in &round {
            let game = match fake.wait_game_over(id, GAME).await {
                Ok(game) => game,
                Err(e) => panic!("{e}: {:?}\n{}", fake.game(id), bot.log()),
            };
            pgn_written(&bot, id).await;
            check_finished(&game, &bot.pgn_dir());
        }
        ids.extend(round);
    }
    let log = bot.stop().await;
    let hits = log.lines().filter(|l| l.contains("ponder hit")).count() as u64;
    let misses = log.lines().filter(|l| l.contains("ponder miss")).count() as u64;
    eprintln!("ponder hits {hits}, misses {misses}");
    assert!(hits >= 1, "no ponder hit: {log}");
    assert!(misses >= 1, "no ponder miss: {log}");
    // The game-end lines count the same hits and misses.
    assert_eq!(sum_field(&log, "ponder_hits"), hits, "{log}");
    assert_eq!(sum_field(&log, "ponder_misses"), misses, "{log}");
    // Every ponder search that started ended one way or another, and no
    // move was posted for a ponder search that missed: the fake validated
    // every move (check_finished), and each ply was answered once.
    for id in &ids {
        let moves: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(id.as_str()) && (l.contains(" move ") || l.ends_with(" move")))
            .collect();
        let mut plies: Vec<u64> = moves
            .iter()
            .filter_map(|l| log_field::<u64>(l, "ply"))
            .collect();
        let n = plies.len();
        plies.dedup();
        assert_eq!(plies.len(), n, "a ply answered twice: {moves:?}");
    }
}

/// A takeback and the opponent's new move seen together, as the
/// `gameFull` after a reconnect shows them: the move list is as long as
/// before, but the search of the old position must stop, or its move
/// (here 2. exd5 after 1. e4 d5) would be played in the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeback_and_a_new_move_seen_together_stop_the_old_search() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[engine]\nmax_depth = 0\nponder = false\n[bot]\nmax_takebacks = 1",
    )
    .await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default()).await;
    fake.opponent_move(&id, "d7d5").unwrap();
    // The bot searches 1. e4 d5 (seconds at 3+2) when the opponent asks
    // for its move back; the connection drops as the bot's yes goes
    // through, and the bot's next stream opens late.
    fake.cut_game_stream_on_takeback(1);
    fake.delay_matching(
        &format!("/api/bot/game/stream/{id}"),
        1,
        Duration::from_millis(700),
    );
    fake.opponent_proposes_takeback(&id).unwrap();
    fake.wait_until("the takeback", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.takeback_answers == [true])
    })
    .await
    .unwrap();
    fake.opponent_move(&id, "e7e5").unwrap();
    bot.wait_log("search stopped: the position changed", WAIT)
        .await;
    fake.wait_until("the bot's move after 1. e4 e5", GAME, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    let moves = fake.game(&id).unwrap().moves;
    assert_eq!(moves[..2], ["e2e4", "e7e5"]);
    fake.opponent_resigns(&id).unwrap();
    fake.wait_game_over(&id, GAME).await.unwrap();
    let log = bot.stop().await;
    assert!(!log.contains("not legal here"), "{log}");
}

/// A UCI engine, as a `/bin/sh` script in `dir`, that writes each `go`
/// line into `dir/gos` (`$gos`) and then runs `on_go` (`$n`: the
/// process's count of searches, `$sm`: the first move of `searchmoves`,
/// if any). Returns the config section that makes it play standard
/// chess, and the path of `gos`.
fn scripted_engine(dir: &Path, on_go: &str) -> (String, std::path::PathBuf) {
    let script = dir.join("engine.sh");
    let gos = dir.join("gos");
    std::fs::write(
        &script,
        format!(
            r#"gos='{gos}'; n=0
while IFS= read -r line; do
  case "$line" in
    uci) echo "id name Scripted"; echo uciok ;;
    isready) echo readyok ;;
    go*) echo "$line" >> "$gos"; n=$((n+1)); sm=
         case "$line" in
           *searchmoves*) set -- $line; while [ "$1" != searchmoves ]; do shift; done; sm=$2 ;;
         esac
         {on_go} ;;
    quit) exit 0 ;;
  esac
done
"#,
            gos = gos.display()
        ),
    )
    .unwrap();
    let config = format!(
        "[engines.scripted]\ncommand = \"/bin/sh\"\nargs = [\"{}\"]\nvariants = [\"standard\"]",
        script.display()
    );
    (config, gos)
}

/// A UCI engine, as a `/bin/sh` script in `dir`, that names a move not
/// legal here (e2e5) unless given `searchmoves`, then the first of them;
/// it writes each `go` line into `dir/gos`. Returns the config section
/// that makes it play standard chess (against `opponents`).
fn liar_engine(dir: &Path, opponents: &str) -> String {
    let (config, _) = scripted_engine(dir, r#"echo "bestmove ${sm:-e2e5}""#);
    format!("{config}\nopponents = \"{opponents}\"")
}

/// An engine that names a move not legal here (e2e5) unless given
/// `searchmoves`: each move costs one search again, with the legal moves,
/// not three searches and a fallback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_move_not_legal_here_is_left_out_of_the_next_search() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLichess::start().await;
    let bot = start(&fake, &liar_engine(dir.path(), "any")).await;
    let id = fake.send_challenge(ChallengeSpec {
        resign_after: Some(4),
        ..ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent()))
    });
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    let log = bot.stop().await;
    let ours = game.moves.iter().step_by(2).count();
    assert!(ours >= 4, "{game:?}");
    let gos = std::fs::read_to_string(dir.path().join("gos")).unwrap();
    let searches = gos.lines().count();
    let again = gos.lines().filter(|l| l.contains("searchmoves")).count();
    assert_eq!((searches, again), (2 * ours, ours), "{gos}\n{log}");
    assert!(log.contains("not legal here"), "{log}");
    assert!(!log.contains("no answer from the engine"), "{log}");
}

/// An external engine that answered its probe but does not start for the
/// game (a spawn failure, a slow `readyok`): in chess the built-in engine
/// plays instead of the game being aborted or resigned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_does_not_start_for_a_game_of_chess_leaves_it_to_the_built_in_engine() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("once.sh");
    let count = dir.path().join("count");
    std::fs::write(
        &script,
        format!(
            r#"n=0
[ -f '{count}' ] && read -r n < '{count}'
echo $((n+1)) > '{count}'
[ "$n" -ge 1 ] && exit 1
while IFS= read -r line; do
  case "$line" in
    uci) echo "id name Once"; echo uciok ;;
    isready) echo readyok ;;
    quit) exit 0 ;;
  esac
done
"#,
            count = count.display()
        ),
    )
    .unwrap();
    let extra = format!(
        "[engines.once]\ncommand = \"/bin/sh\"\nargs = [\"{}\"]\nvariants = [\"standard\"]",
        script.display()
    );
    let (game, log) = won_as_white_with(&extra, 6).await;
    assert!(game.moves.len() >= 5, "{game:?}");
    assert!(log.contains("the external engine did not start"), "{log}");
}

/// A game of chess the bot plays as White with `engine` (a config
/// section) against the greedy opponent, who resigns after `resign_after`
/// moves: played to the end and won (the opponent resigns, or is mated
/// first). Returns the game and the bot's log.
async fn won_as_white_with(engine: &str, resign_after: u32) -> (GameRecord, String) {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, engine).await;
    let id = fake.send_challenge(ChallengeSpec {
        resign_after: Some(resign_after),
        ..ChallengeSpec::default()
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent()))
    });
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    let log = bot.stop().await;
    assert_eq!(game.winner, Some(Color::White), "{game:?}\n{log}");
    (game, log)
}

/// Plays a game of chess as White with `engine` (see
/// [`won_as_white_with`]); checks that the built-in engine took it over
/// and searched every move after, and returns the number of searches the
/// external engine was asked for.
async fn taken_over_by_the_built_in_engine(engine: &str, gos: &Path) -> usize {
    let (_, log) = won_as_white_with(engine, 12).await;
    let (_, after) = log
        .split_once("the built-in engine plays the rest of the game")
        .unwrap_or_else(|| panic!("no take-over: {log}"));
    // Every move after the take-over was searched: none is a fallback.
    let depths: Vec<usize> = after
        .lines()
        .filter(|l| l.contains("overhead_us="))
        .filter_map(|l| log_field::<usize>(l, "depth"))
        .collect();
    assert!(depths.len() >= 4, "{depths:?}\n{log}");
    assert!(depths.iter().all(|&d| d > 0), "{depths:?}\n{log}");
    assert!(!log.contains("no answer from the engine in time"), "{log}");
    std::fs::read_to_string(gos).unwrap().lines().count()
}

/// An external engine that crashes at every search after its first (a
/// crash loop): after three failed searches for one move, the built-in
/// engine plays the rest of the game of chess. Before, that move and
/// every later one was the first legal move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_in_a_crash_loop_leaves_the_game_of_chess_to_the_built_in_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, gos) = scripted_engine(
        dir.path(),
        r#"[ "$(wc -l < "$gos")" -ge 2 ] && exit 1; echo "bestmove e2e4""#,
    );
    let searches = taken_over_by_the_built_in_engine(&engine, &gos).await;
    // The first move, then three tries at the second.
    assert_eq!(searches, 4);
}

/// An external engine that crashes once a move (each process answers one
/// move, the restarted one the next): once the driver has no restart
/// left, the next failure gives the game of chess to the built-in engine.
/// Its own moves are named illegal first (b1a8), so that it plays the
/// legal one `searchmoves` gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_out_of_restarts_leaves_the_game_of_chess_to_the_built_in_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, gos) = scripted_engine(
        dir.path(),
        r#"[ "$n" -ge 3 ] && exit 1; echo "bestmove ${sm:-b1a8}""#,
    );
    let searches = taken_over_by_the_built_in_engine(&engine, &gos).await;
    // Three searches a process (a named illegal move, the legal one, the
    // crash), then the last process's first: its illegal move fails
    // with no restart left.
    assert_eq!(
        searches,
        3 * kaissa::bot::external::MAX_RESTARTS as usize + 1
    );
}

/// A game against a bot that came without our challenge (an arena's, one
/// found after a restart) gets the engine configured for bots: lila names
/// the opponent "BOT Name" in `gameStart`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_against_a_bot_without_a_challenge_gets_the_engine_for_bots() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLichess::start().await;
    let bot = start(&fake, &liar_engine(dir.path(), "bots")).await;
    let id = fake
        .start_game(
            ChallengeSpec {
                resign_after: Some(3),
                ..ChallengeSpec::default()
                    .challenger(Opponent::bot("Rival"))
                    .tournament("arena2026")
                    .autoplay(Some(quick_opponent()))
            },
            Color::White,
        )
        .unwrap();
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    let log = bot.stop().await;
    assert_eq!(game.winner, Some(Color::White), "{game:?}");
    let gos = std::fs::read_to_string(dir.path().join("gos")).unwrap_or_default();
    assert!(
        gos.lines().count() >= 3 * 2,
        "the built-in engine played:\n{gos}\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takebacks_are_accepted_up_to_max_takebacks() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "[bot]\nmax_takebacks = 1").await;
    let id = bot_white_by_hand(&fake, ChallengeSpec::default()).await;
    let first = fake.game(&id).unwrap().moves;
    assert_eq!(first.len(), 1, "{first:?}");
    fake.opponent_move(&id, "g8f6").unwrap();
    fake.wait_until("the bot's second move", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    for expected in [vec![true], vec![true, false]] {
        fake.opponent_proposes_takeback(&id).unwrap();
        let n = expected.len();
        fake.wait_until("the takeback answer", WAIT, |v| {
            v.game(&id).is_some_and(|g| g.takeback_answers.len() == n)
        })
        .await
        .unwrap();
        assert_eq!(fake.game(&id).unwrap().takeback_answers, expected);
        // Taken back or not, it is the opponent's move with the bot's reply
        // on the board again.
        fake.wait_until("the bot to move again", WAIT, |v| {
            v.game(&id).is_some_and(|g| g.moves.len() % 2 == 1)
        })
        .await
        .unwrap();
    }
    // The board is back at the bot's first move (its second went with the
    // takeback): the bot answers the opponent's new move at a ply it
    // played at before.
    assert_eq!(fake.game(&id).unwrap().moves, first);
    fake.opponent_move(&id, "e7e5").unwrap();
    fake.wait_until("the bot's move after the takeback", WAIT, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() == 3)
    })
    .await
    .unwrap();
    fake.opponent_resigns(&id).unwrap();
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    // The PGN forgets what was taken back: the moves and clocks are the
    // game's as it ended.
    pgn_written(&bot, &id).await;
    let pgn = std::fs::read_to_string(bot.pgn_dir().join(format!("{id}.pgn"))).unwrap();
    let moves = movetext(&pgn);
    assert_eq!(moves.len(), game.moves.len(), "{pgn}");
    for ((_, comment), ms) in moves.iter().zip(&game.clocks_ms) {
        let comment = comment.as_deref().unwrap_or_default();
        assert!(comment.contains(&clk(*ms)), "{pgn}");
    }
    bot.stop().await;
}
