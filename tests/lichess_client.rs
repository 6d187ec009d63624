//! The Lichess client against the fake Lichess server, over real TCP on
//! 127.0.0.1: every event type, stream faults, rate limits, retries, moves,
//! and the token staying secret.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use kaissa::lichess::Endpoint;
use kaissa::lichess::client::BOT_VS_BOT_DAY;
use kaissa::lichess::model::{ChatRoom, Direction, GameStatus};
use kaissa::lichess::{
    ChallengeColor, ChallengeTime, Client, ClientOptions, CreateChallenge, DeclineReason, Error,
    Event, EventStream, GameEvent, GameStream, RetryPolicy, SkippedLine, StreamError, StreamEvent,
    TimeControl, Token, VariantKey,
};
use shakmaty::{Color, Position};
use support::fake_lichess::{
    Answer, AutoPlay, ChallengeSpec, FakeConfig, FakeLichess, FakeTime, FakeVariant, OnlineBot,
    Opponent, Policy, Side, chess960_back_rank, chess960_fen,
};
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(10);

fn options(fake: &FakeLichess) -> ClientOptions {
    ClientOptions {
        base_url: fake.url(),
        rate_limit_pause: Duration::from_millis(300),
        stream_silence_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        },
        urgent_retry: RetryPolicy {
            max_attempts: 1000,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        },
        ..ClientOptions::default()
    }
}

fn client(fake: &FakeLichess) -> Client {
    Client::new(Token::new(fake.token()).unwrap(), options(fake)).unwrap()
}

fn fast_config() -> FakeConfig {
    FakeConfig {
        keepalive: Duration::from_millis(100),
        ..FakeConfig::default()
    }
}

/// The next item of a stream, skipping keep-alives; panics on anything
/// else.
async fn next_item<T: std::fmt::Debug>(
    stream: &mut (impl futures::Stream<Item = Result<StreamEvent<T>, StreamError>> + Unpin),
) -> T {
    loop {
        let next = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("stream item in time");
        match next {
            Some(Ok(StreamEvent::Item(item))) => return item,
            Some(Ok(StreamEvent::KeepAlive)) => continue,
            other => panic!("unexpected stream step: {other:?}"),
        }
    }
}

async fn next_event(stream: &mut EventStream) -> Event {
    next_item(stream).await
}

async fn next_game_event(stream: &mut GameStream) -> GameEvent {
    next_item(stream).await
}

/// The next `gameState` (skipping chat lines and the like).
async fn next_state(stream: &mut GameStream) -> kaissa::lichess::GameState {
    loop {
        if let GameEvent::GameState(state) = next_game_event(stream).await {
            return state;
        }
    }
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// A casual 1+1 game of standard chess, either colour.
fn casual_bullet() -> CreateChallenge {
    CreateChallenge {
        time: ChallengeTime::Clock {
            limit_secs: 60,
            increment_secs: 1,
        },
        rated: false,
        color: ChallengeColor::Random,
        variant: VariantKey::Standard,
        fen: None,
    }
}

#[tokio::test]
async fn account_and_wrong_token() {
    let fake = FakeLichess::start().await;
    let account = client(&fake).account().await.unwrap();
    assert_eq!(account.id, fake.bot_id());
    assert!(account.is_bot());

    let wrong = Client::new(Token::new("lip_wrong").unwrap(), options(&fake)).unwrap();
    let error = wrong.account().await.unwrap_err();
    assert!(matches!(error, Error::Unauthorized { .. }), "{error:?}");
    assert_eq!(error.status(), Some(401));
}

#[tokio::test]
async fn non_bot_account_and_upgrade() {
    let fake = FakeLichess::start_with(FakeConfig {
        is_bot: false,
        ..FakeConfig::default()
    })
    .await;
    let client = client(&fake);
    assert!(!client.account().await.unwrap().is_bot());
    client.upgrade_to_bot().await.unwrap();
    assert!(client.account().await.unwrap().is_bot());
    // Twice is an error.
    let error = client.upgrade_to_bot().await.unwrap_err();
    assert_eq!(error.status(), Some(400));
}

#[tokio::test]
async fn every_event_type_parses() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = client(&fake);
    let mut events = client.stream_events().await.unwrap();
    fake.wait_event_stream(WAIT).await.unwrap();

    // challenge: standard, with a titled, rated challenger.
    let standard = fake.send_challenge(
        ChallengeSpec::default()
            .clock(300, 3)
            .rated(true)
            .challenger_color(Side::White)
            .challenger(Opponent {
                title: Some("GM".into()),
                rating: Some(2700),
                ..Opponent::human("Magnus")
            }),
    );
    let Event::Challenge { challenge, compat } = next_event(&mut events).await else {
        panic!("expected a challenge");
    };
    assert_eq!(challenge.id, standard);
    assert_eq!(challenge.challenger.as_ref().unwrap().id, "magnus");
    assert_eq!(challenge.challenger.as_ref().unwrap().rating, Some(2700));
    assert!(!challenge.from_bot());
    assert_eq!(challenge.variant.key, VariantKey::Standard);
    assert_eq!(challenge.speed, kaissa::lichess::Speed::Blitz);
    assert!(challenge.rated);
    assert_eq!(challenge.direction, None, "the event stream gives none");
    assert_eq!(challenge.color, Some(ChallengeColor::White));
    assert_eq!(
        challenge.time_control,
        TimeControl::Clock {
            limit: 300,
            increment: 3,
            show: Some("5+3".into())
        }
    );
    assert!(compat.unwrap().bot);

    // challenge: Chess960 from a bot, unrated, with its start position.
    fake.send_challenge(
        ChallengeSpec::default()
            .variant(FakeVariant::Chess960 { position: Some(0) })
            .challenger(Opponent::bot("OtherBot")),
    );
    let Event::Challenge { challenge, .. } = next_event(&mut events).await else {
        panic!("expected a challenge");
    };
    assert_eq!(challenge.variant.key, VariantKey::Chess960);
    assert!(challenge.from_bot());
    assert_eq!(
        challenge.initial_fen.as_deref(),
        Some(chess960_fen(0).as_str())
    );

    // challenge: correspondence fromPosition.
    let fen = "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1";
    let corr = fake.send_challenge(
        ChallengeSpec::default()
            .variant(FakeVariant::FromPosition { fen: fen.into() })
            .time(FakeTime::Correspondence { days: 3 }),
    );
    let Event::Challenge { challenge, .. } = next_event(&mut events).await else {
        panic!("expected a challenge");
    };
    assert_eq!(challenge.variant.key, VariantKey::FromPosition);
    assert_eq!(challenge.speed, kaissa::lichess::Speed::Correspondence);
    assert_eq!(
        challenge.time_control,
        TimeControl::Correspondence {
            days_per_turn: Some(3)
        }
    );
    assert_eq!(challenge.initial_fen.as_deref(), Some(fen));

    // challengeCanceled.
    fake.cancel_challenge(&corr).unwrap();
    let Event::ChallengeCanceled { challenge } = next_event(&mut events).await else {
        panic!("expected challengeCanceled");
    };
    assert_eq!(challenge.id, corr);

    // Our own challenge comes back, without a direction (lila's
    // EventStream), then declined.
    let created = client
        .create_challenge("SomeBot", &casual_bullet())
        .await
        .unwrap();
    assert_eq!(created.direction, Some(Direction::Out));
    let Event::Challenge { challenge, .. } = next_event(&mut events).await else {
        panic!("expected our challenge");
    };
    assert_eq!(challenge.id, created.id);
    assert_eq!(challenge.direction, None);
    assert_eq!(challenge.challenger.as_ref().unwrap().id, fake.bot_id());
    assert!(challenge.is_from(&fake.bot_id().to_uppercase()));
    let form = fake.challenge(&created.id).unwrap().form;
    assert_eq!(form.get("clock.limit").map(String::as_str), Some("60"));
    assert_eq!(form.get("clock.increment").map(String::as_str), Some("1"));
    fake.decline_bot_challenge(&created.id, "tooFast").unwrap();
    let Event::ChallengeDeclined { challenge } = next_event(&mut events).await else {
        panic!("expected challengeDeclined");
    };
    assert_eq!(challenge.decline_reason_key.as_deref(), Some("toofast"));
    assert_eq!(
        DeclineReason::from_key(challenge.decline_reason_key.as_deref().unwrap()),
        Some(DeclineReason::TooFast)
    );

    // gameStart after accepting, then gameFinish.
    client.accept_challenge(&standard).await.unwrap();
    let Event::GameStart { game } = next_event(&mut events).await else {
        panic!("expected gameStart");
    };
    assert_eq!(game.game_id, standard);
    assert_eq!(game.color, Some(kaissa::lichess::Color::Black));
    assert_eq!(game.status, Some(GameStatus::Started));
    assert!(!game.is_my_turn);
    assert_eq!(game.seconds_left, Some(300));
    fake.set_autoplay(&standard, None).unwrap();
    fake.opponent_resigns(&standard).unwrap();
    let Event::GameFinish { game } = next_event(&mut events).await else {
        panic!("expected gameFinish");
    };
    assert_eq!(game.status, Some(GameStatus::Resign));
    assert_eq!(game.winner, Some(kaissa::lichess::Color::Black));
}

#[tokio::test]
async fn event_stream_replays_and_keeps_alive() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = client(&fake);
    let waiting = fake.send_challenge(ChallengeSpec::default());
    let playing = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    // Ours is not replayed (lila's `createdByDestId`).
    client
        .create_challenge("SomeBot", &casual_bullet())
        .await
        .unwrap();

    // As lila: the games in progress, then the challenges to us.
    let mut events = client.stream_events().await.unwrap();
    let Event::GameStart { game } = next_event(&mut events).await else {
        panic!("expected the ongoing game");
    };
    assert_eq!(game.game_id, playing);
    assert!(game.is_my_turn);
    let Event::Challenge { challenge, .. } = next_event(&mut events).await else {
        panic!("expected the open challenge");
    };
    assert_eq!(challenge.id, waiting);

    // Keep-alives arrive (every 100 ms here).
    let mut keepalives = 0;
    while keepalives < 3 {
        match tokio::time::timeout(WAIT, events.next()).await.unwrap() {
            Some(Ok(StreamEvent::KeepAlive)) => keepalives += 1,
            other => panic!("expected keep-alives, got {other:?}"),
        }
    }

    // A second stream closes the first, cleanly.
    let _second = client.stream_events().await.unwrap();
    let end = tokio::time::timeout(WAIT, async {
        loop {
            match events.next().await {
                Some(Ok(StreamEvent::KeepAlive)) => continue,
                other => return other,
            }
        }
    })
    .await
    .unwrap();
    assert!(end.is_none(), "{end:?}");
    assert_eq!(fake.view(|v| v.event_stream_connections()), 2);

    // Thirty opens in ten minutes, as lila allows; the next is a 429.
    for _ in 2..30 {
        client.stream_events().await.unwrap();
    }
    let refused = client.stream_events().await.err().unwrap();
    assert_eq!(refused.status(), Some(429), "{refused}");
}

#[tokio::test]
async fn bad_lines_are_skipped_and_the_stream_goes_on() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = Client::new(
        Token::new(fake.token()).unwrap(),
        ClientOptions {
            max_line_len: 4096,
            ..options(&fake)
        },
    )
    .unwrap();
    let mut events = client.stream_events().await.unwrap();
    fake.wait_event_stream(WAIT).await.unwrap();

    fake.inject_unknown_event().unwrap();
    fake.inject_malformed_event_line().unwrap();
    fake.inject_oversized_event_line(100_000).unwrap();
    fake.inject_event_line(r#"{"type":"gameStart","game":{"no":"ids"}}"#)
        .unwrap();
    let id = fake.send_challenge(ChallengeSpec::default());

    let mut seen = Vec::new();
    loop {
        let step = tokio::time::timeout(WAIT, events.next())
            .await
            .unwrap()
            .expect("stream open")
            .expect("no fatal error");
        match step {
            StreamEvent::KeepAlive => {}
            StreamEvent::Item(Event::Challenge { challenge, .. }) => {
                assert_eq!(challenge.id, id);
                break;
            }
            other => seen.push(other),
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        seen[0],
        StreamEvent::Item(Event::Unknown {
            kind: "tournamentPairing".into()
        })
    );
    assert!(matches!(
        seen[1],
        StreamEvent::Skipped(SkippedLine::Malformed { .. })
    ));
    assert_eq!(
        seen[2],
        StreamEvent::Skipped(SkippedLine::Oversized { len: 100_000 })
    );
    assert!(matches!(
        seen[3],
        StreamEvent::Skipped(SkippedLine::Malformed { .. })
    ));
}

#[tokio::test]
async fn silent_and_cut_streams_end_with_an_error() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = Client::new(
        Token::new(fake.token()).unwrap(),
        ClientOptions {
            stream_silence_timeout: Duration::from_millis(500),
            ..options(&fake)
        },
    )
    .unwrap();

    let mut events = client.stream_events().await.unwrap();
    fake.wait_event_stream(WAIT).await.unwrap();
    fake.silence_event_stream();
    let end = tokio::time::timeout(WAIT, async {
        loop {
            match events.next().await {
                Some(Ok(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .unwrap();
    assert!(matches!(end, Some(Err(StreamError::Silent(_)))), "{end:?}");
    assert!(events.next().await.is_none());

    let mut events = client.stream_events().await.unwrap();
    fake.wait_event_stream(WAIT).await.unwrap();
    fake.cut_event_stream();
    let end = tokio::time::timeout(WAIT, async {
        loop {
            match events.next().await {
                Some(Ok(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .unwrap();
    assert!(
        matches!(end, Some(Err(StreamError::Transport(_)))),
        "{end:?}"
    );

    // The same for a game stream.
    let game = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    let mut stream = client.stream_game(&game).await.unwrap();
    assert!(matches!(
        next_game_event(&mut stream).await,
        GameEvent::GameFull(_)
    ));
    fake.cut_game_stream(&game).unwrap();
    let end = tokio::time::timeout(WAIT, async {
        loop {
            match stream.next().await {
                Some(Ok(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .unwrap();
    assert!(
        matches!(end, Some(Err(StreamError::Transport(_)))),
        "{end:?}"
    );
}

#[tokio::test]
async fn rate_limit_pauses_the_next_request() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    fake.fail_requests_with_429(1, Some(1));

    let error = client.account().await.unwrap_err();
    let Error::RateLimited {
        retry_after, pause, ..
    } = &error
    else {
        panic!("expected RateLimited, got {error:?}");
    };
    // Retry-After (1 s) is longer than the configured 300 ms: it wins.
    assert_eq!(*retry_after, Some(Duration::from_secs(1)));
    assert_eq!(*pause, Duration::from_secs(1));
    assert!(client.rate_limited_for(Endpoint::Account).is_some());

    let start = Instant::now();
    client.account().await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "waited only {:?}",
        start.elapsed()
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].at.duration_since(requests[0].at) >= Duration::from_millis(900));

    // Without Retry-After, the configured pause applies; clones share it.
    fake.fail_requests_with_429(1, None);
    let clone = client.clone();
    assert!(clone.playing().await.is_err());
    let start = Instant::now();
    client.playing().await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(250));
}

/// A client whose 429s pause for a minute, and a game where it is White.
fn slow_gate_client_and_game(fake: &FakeLichess) -> (Client, String) {
    let client = Client::new(
        Token::new(fake.token()).unwrap(),
        ClientOptions {
            rate_limit_pause: Duration::from_secs(60),
            ..options(fake)
        },
    )
    .unwrap();
    let game = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    (client, game)
}

#[tokio::test]
async fn moves_skip_the_rate_limit_gate() {
    let fake = FakeLichess::start().await;
    let (client, game) = slow_gate_client_and_game(&fake);
    fake.fail_requests_with_429(1, None);
    assert!(client.account().await.is_err());
    assert!(client.rate_limited_for(Endpoint::Account).unwrap() > Duration::from_secs(50));
    let start = Instant::now();
    client
        .make_move(&game, "e2e4", false, deadline())
        .await
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(fake.game(&game).unwrap().moves, ["e2e4"]);
}

#[tokio::test]
async fn bot_vs_bot_daily_cap_is_recognised() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    fake.exhaust_bot_vs_bot_games(true);
    let error = client
        .create_challenge(
            "OtherBot",
            &CreateChallenge {
                time: ChallengeTime::Correspondence { days: 2 },
                rated: true,
                color: ChallengeColor::White,
                variant: VariantKey::Chess960,
                fen: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error.rate_limit_key(), Some(BOT_VS_BOT_DAY));
    assert_eq!(
        error.bot_vs_bot_daily_limit(),
        Some(Duration::from_secs(86398))
    );
    assert!(error.to_string().contains("bot.vsBot.day"), "{error}");
    // A quota on games, not a request rate: nothing else waits.
    assert_eq!(client.rate_limited(), []);
    let start = std::time::Instant::now();
    client.account().await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// A 429 that says how long to wait is taken at its word, even below the
/// configured pause; 429s in a row on one endpoint double the pause each
/// time, and a success starts it over.
#[tokio::test]
async fn a_429_waits_what_it_says_and_repeated_ones_wait_longer() {
    let fake = FakeLichess::start().await;
    let (client, _) = slow_gate_client_and_game(&fake);
    fake.fail_matching_with_ratelimit("/api/account/playing", 1, 1);
    let error = client.playing().await.unwrap_err();
    let Error::RateLimited { pause, .. } = &error else {
        panic!("expected RateLimited, got {error:?}");
    };
    assert_eq!(
        *pause,
        Duration::from_secs(1),
        "the answer's ratelimit.seconds"
    );
    let start = Instant::now();
    client.playing().await.unwrap();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(30),
        "{waited:?}"
    );

    let client = self::client(&fake);
    let pause_of = |error: Error| match error {
        Error::RateLimited { pause, .. } => pause,
        other => panic!("expected RateLimited, got {other:?}"),
    };
    fake.fail_matching_with_429("/api/account/playing", 3, None);
    let pauses = [
        pause_of(client.playing().await.unwrap_err()),
        pause_of(client.playing().await.unwrap_err()),
        pause_of(client.playing().await.unwrap_err()),
    ];
    let ms = |n| Duration::from_millis(n);
    assert_eq!(pauses, [ms(300), ms(600), ms(1200)]);
    client.playing().await.unwrap();
    fake.fail_matching_with_429("/api/account/playing", 1, None);
    assert_eq!(pause_of(client.playing().await.unwrap_err()), ms(300));
}

/// Lichess limits each kind of request apart: a 429 to a chat line pauses
/// chat, not the accept of a challenge that expires in 20 s.
#[tokio::test]
async fn a_429_pauses_its_endpoint_only() {
    let fake = FakeLichess::start().await;
    let (client, game) = slow_gate_client_and_game(&fake);
    fake.fail_matching_with_429("/chat", 1, None);
    let error = client
        .chat(&game, ChatRoom::Player, "hello")
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(429), "{error:?}");
    assert!(client.rate_limited_for(Endpoint::Chat).unwrap() > Duration::from_secs(50));
    let challenge = fake.send_challenge(ChallengeSpec::default());
    let start = Instant::now();
    client.accept_challenge(&challenge).await.unwrap();
    client.account().await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fake.challenge(&challenge).unwrap().status, "accepted");
    let closed: Vec<Endpoint> = client.rate_limited().into_iter().map(|(e, _)| e).collect();
    assert_eq!(closed, [Endpoint::Chat]);
}

fn clock_challenge(limit_secs: u32, increment_secs: u32) -> CreateChallenge {
    CreateChallenge {
        time: ChallengeTime::Clock {
            limit_secs,
            increment_secs,
        },
        rated: false,
        color: ChallengeColor::Random,
        variant: VariantKey::Standard,
        fen: None,
    }
}

/// What Lichess answers a challenge besides a challenge: a form error for
/// a clock it does not allow (our fault), a 400 with a `ratelimit` for an
/// opponent that played its bot games for the day (theirs).
#[tokio::test]
async fn refused_clocks_and_capped_opponents_are_told_apart() {
    let fake = FakeLichess::start().await;
    fake.set_online_bots(vec![OnlineBot::new(
        "Capped",
        2000,
        Answer::DailyCapReached(3600),
    )]);
    let client = client(&fake);
    for (limit, increment) in [(150, 0), (20, 0), (180, 61)] {
        let error = client
            .create_challenge("someone", &clock_challenge(limit, increment))
            .await
            .unwrap_err();
        assert!(error.is_form_error(), "{limit}+{increment}: {error:?}");
        assert!(error.refused_by_limit().is_none());
    }
    for (limit, increment) in [(0, 1), (15, 2), (90, 0), (10_800, 60)] {
        client
            .create_challenge("someone", &clock_challenge(limit, increment))
            .await
            .unwrap_or_else(|e| panic!("{limit}+{increment}: {e}"));
    }
    let error = client
        .create_challenge("Capped", &clock_challenge(60, 1))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(400));
    assert!(!error.is_form_error());
    let limit = error.refused_by_limit().unwrap();
    assert_eq!(limit.key.as_deref(), Some(BOT_VS_BOT_DAY));
    assert_eq!(limit.seconds, Some(3600));
    // The opponent's cap is not ours: nothing pauses.
    assert_eq!(error.bot_vs_bot_daily_limit(), None);
    assert_eq!(client.rate_limited(), []);
}

/// A real-time challenge expires (20 s on Lichess, 300 ms here) unless it
/// is created with `keepAliveStream`; then it lives while its stream
/// does, and the stream says how it ended.
#[tokio::test]
async fn kept_challenges_outlive_the_expiry_and_end_with_their_stream() {
    let fake = FakeLichess::start_with(FakeConfig {
        challenge_expiry: Duration::from_millis(300),
        ..FakeConfig::default()
    })
    .await;
    let client = client(&fake);
    let plain = client
        .create_challenge("someone", &clock_challenge(60, 1))
        .await
        .unwrap();
    let (kept, keep_alive) = client
        .create_challenge_kept("someone", &clock_challenge(60, 1))
        .await
        .unwrap();
    let (dropped, dropped_keep_alive) = client
        .create_challenge_kept("other", &clock_challenge(60, 1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(fake.challenge(&plain.id).unwrap().status, "canceled");
    assert_eq!(fake.challenge(&kept.id).unwrap().status, "created");
    assert_eq!(fake.challenge(&dropped.id).unwrap().status, "created");
    drop(dropped_keep_alive);
    fake.wait_until("the dropped challenge canceled", WAIT, |v| {
        v.challenge(&dropped.id).unwrap().status == "canceled"
    })
    .await
    .unwrap();
    fake.accept_bot_challenge(&kept.id).unwrap();
    let done = tokio::time::timeout(WAIT, keep_alive.done()).await.unwrap();
    assert_eq!(done.as_deref(), Some("accepted"));
}

#[tokio::test]
async fn server_errors_are_retried() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    fake.fail_requests_with_5xx(2);
    client.account().await.unwrap();
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [503, 503, 200]);

    // Not forever: 4 attempts, then the error.
    fake.fail_requests_with_5xx(10);
    let error = client.account().await.unwrap_err();
    assert!(
        matches!(error, Error::Server { status: 503, .. }),
        "{error:?}"
    );
    assert!(error.is_transient());
    assert_eq!(fake.requests().len(), 3 + 4);
}

#[tokio::test]
async fn transport_errors_are_retried_and_reported_without_token() {
    // A port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let token = "lip_secret_value_42";
    let client = Client::new(
        Token::new(token).unwrap(),
        ClientOptions {
            base_url: format!("http://127.0.0.1:{port}"),
            retry: RetryPolicy {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(10),
            },
            ..ClientOptions::default()
        },
    )
    .unwrap();
    let error = client.account().await.unwrap_err();
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    let text = format!("{error} {error:?} {client:?}");
    assert!(!text.contains(token), "{text}");
    assert!(text.contains("Token(***)"), "{text}");
}

#[tokio::test]
async fn token_never_shows() {
    let fake = FakeLichess::start().await;
    let token = fake.token();
    let client = client(&fake);
    let game = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    let mut texts = vec![format!("{client:?}")];
    let errors = [
        client.make_move(&game, "e2e5", false, deadline()).await,
        client.abort("nosuchgame").await,
        client.accept_challenge("nosuchchallenge").await,
        client.chat("bad/id", ChatRoom::Player, "hi").await,
        Client::new(Token::new("x").unwrap(), options(&fake))
            .unwrap()
            .account()
            .await
            .map(|_| ()),
    ];
    for error in errors {
        let error = error.unwrap_err();
        texts.push(format!("{error} {error:?}"));
    }
    fake.fail_requests_with_429(1, None);
    let error = client.account().await.unwrap_err();
    texts.push(format!("{error} {error:?}"));
    for text in texts {
        assert!(!text.contains(&token), "{text}");
    }
}

#[tokio::test]
async fn moves_and_their_errors() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    let game = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    let mut stream = client.stream_game(&game).await.unwrap();
    let GameEvent::GameFull(full) = next_game_event(&mut stream).await else {
        panic!("gameFull first");
    };
    assert_eq!(full.id, game);
    assert_eq!(full.initial_fen(), None);
    assert_eq!(
        full.color_of(&fake.bot_id()),
        Some(kaissa::lichess::Color::White)
    );
    assert_eq!(full.clock.unwrap().initial, 180_000);
    assert_eq!(full.clock.unwrap().increment, 2_000);
    assert_eq!(full.state.ply(), 0);
    assert!(full.state.expiration.is_some());

    client
        .make_move(&game, "e2e4", false, deadline())
        .await
        .unwrap();
    let state = next_state(&mut stream).await;
    assert_eq!(state.moves, "e2e4");

    // Not our turn: a typed error at once, recorded by the server.
    let error = client
        .make_move(&game, "d2d4", false, deadline())
        .await
        .unwrap_err();
    let Error::MoveRejected {
        uci,
        message,
        after_retry,
        ..
    } = &error
    else {
        panic!("expected MoveRejected, got {error:?}");
    };
    assert_eq!(uci, "d2d4");
    assert!(message.contains("Not your turn"), "{message}");
    assert!(!after_retry);
    fake.opponent_move(&game, "e7e5").unwrap();
    assert_eq!(next_state(&mut stream).await.moves, "e2e4 e7e5");

    // Illegal.
    let error = client
        .make_move(&game, "e4e6", false, deadline())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::MoveRejected { .. }), "{error:?}");
    // Not even a move: refused before sending.
    let error = client
        .make_move(&game, "castle", false, deadline())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error:?}");

    let record = fake.game(&game).unwrap();
    let refused: Vec<&str> = record
        .illegal_moves
        .iter()
        .map(|m| m.uci.as_str())
        .collect();
    assert_eq!(refused, ["d2d4", "e4e6"]);
    assert_eq!(record.illegal_moves[0].ply, 1);

    // 5xx on move posts: retried within the deadline, played once.
    fake.fail_moves_with_5xx(2);
    client
        .make_move(&game, "g1f3", false, deadline())
        .await
        .unwrap();
    assert_eq!(next_state(&mut stream).await.moves, "e2e4 e7e5 g1f3");
    assert_eq!(fake.game(&game).unwrap().moves.len(), 3);

    // A deadline that cannot be met.
    fake.opponent_move(&game, "b8c6").unwrap();
    fake.fail_moves_with_5xx(1_000_000);
    let start = Instant::now();
    let error = client
        .make_move(
            &game,
            "f1c4",
            false,
            Instant::now() + Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::DeadlineExceeded { .. }), "{error:?}");
    assert!(error.is_transient());
    assert!(start.elapsed() < Duration::from_secs(2));
    fake.fail_moves_with_5xx(0);
}

/// Plays both sides to a position where White can castle short.
async fn to_castling(fake: &FakeLichess, client: &Client, game: &str, opening: &[&str]) {
    for pair in opening.chunks(2) {
        client
            .make_move(game, pair[0], false, deadline())
            .await
            .unwrap();
        fake.opponent_move(game, pair[1]).unwrap();
    }
}

#[tokio::test]
async fn castling_notation() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    let opening = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];

    // Standard: e1g1 and e1h1 both castle; the game reports e1g1.
    for uci in ["e1g1", "e1h1"] {
        let game = fake
            .start_game(ChallengeSpec::default().autoplay(None), Color::White)
            .unwrap();
        to_castling(&fake, &client, &game, &opening).await;
        client
            .make_move(&game, uci, false, deadline())
            .await
            .unwrap();
        let record = fake.game(&game).unwrap();
        assert_eq!(record.moves.last().map(String::as_str), Some("e1g1"));
        assert!(record.fen.contains("RNBQ1RK1"), "{}", record.fen);
    }

    // Chess960 (position 518 is the usual setup): king takes rook only.
    let game = fake
        .start_game(
            ChallengeSpec::default()
                .variant(FakeVariant::Chess960 {
                    position: Some(518),
                })
                .autoplay(None),
            Color::White,
        )
        .unwrap();
    let mut stream = client.stream_game(&game).await.unwrap();
    let GameEvent::GameFull(full) = next_game_event(&mut stream).await else {
        panic!("gameFull first");
    };
    assert_eq!(full.variant.key, VariantKey::Chess960);
    assert_eq!(full.initial_fen(), Some(chess960_fen(518).as_str()));
    to_castling(&fake, &client, &game, &opening).await;
    let error = client
        .make_move(&game, "e1g1", false, deadline())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::MoveRejected { .. }), "{error:?}");
    client
        .make_move(&game, "e1h1", false, deadline())
        .await
        .unwrap();
    let record = fake.game(&game).unwrap();
    assert_eq!(record.moves.last().map(String::as_str), Some("e1h1"));
    assert_eq!(record.illegal_moves.len(), 1);
}

#[tokio::test]
async fn game_stream_lines_and_answers() {
    let fake = FakeLichess::start_with(FakeConfig {
        claim_win_secs: 0,
        ..fast_config()
    })
    .await;
    let client = client(&fake);
    let game = fake
        .start_game(
            ChallengeSpec::default()
                .autoplay(None)
                .challenger(Opponent::human("Bob")),
            Color::Black,
        )
        .unwrap();
    let mut stream = client.stream_game(&game).await.unwrap();
    let GameEvent::GameFull(full) = next_game_event(&mut stream).await else {
        panic!("gameFull first");
    };
    assert_eq!(full.white.name, "Bob");
    assert!(full.black.is_bot());

    // Chat both ways; our own lines come back on the stream.
    fake.opponent_says(&game, "player", "hello bot").unwrap();
    let GameEvent::ChatLine(line) = next_game_event(&mut stream).await else {
        panic!("expected chatLine");
    };
    assert_eq!(
        (line.room, line.username.as_str(), line.text.as_str()),
        (ChatRoom::Player, "Bob", "hello bot")
    );
    let long = "x".repeat(200);
    client
        .chat(&game, ChatRoom::Spectator, &long)
        .await
        .unwrap();
    let GameEvent::ChatLine(line) = next_game_event(&mut stream).await else {
        panic!("expected our chatLine");
    };
    assert_eq!(line.room, ChatRoom::Spectator);
    assert_eq!(line.text.len(), 140);
    client
        .chat(&game, ChatRoom::Player, "good luck")
        .await
        .unwrap();
    let history = client.chat_history(&game).await.unwrap();
    let texts: Vec<&str> = history.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["hello bot", "good luck"]);
    let record = fake.game(&game).unwrap();
    assert_eq!(record.bot_chat("spectator"), [long[..140].to_owned()]);

    // Draw offer: seen in the state, declined, recorded.
    fake.opponent_move(&game, "d2d4").unwrap();
    fake.opponent_offers_draw(&game).unwrap();
    let state = loop {
        let state = next_state(&mut stream).await;
        if state.wdraw {
            break state;
        }
    };
    assert!(!state.bdraw);
    client.answer_draw(&game, false).await.unwrap();
    assert!(!next_state(&mut stream).await.wdraw);

    // Takeback: proposed after our move, declined, recorded.
    client
        .make_move(&game, "d7d5", false, deadline())
        .await
        .unwrap();
    fake.opponent_move(&game, "c2c4").unwrap();
    fake.opponent_proposes_takeback(&game).unwrap();
    loop {
        if next_state(&mut stream).await.wtakeback {
            break;
        }
    }
    client.answer_takeback(&game, false).await.unwrap();
    let record = fake.game(&game).unwrap();
    assert_eq!(record.draw_answers, [false]);
    assert_eq!(record.takeback_answers, [false]);
    assert_eq!(record.moves, ["d2d4", "d7d5", "c2c4"]);

    // Too late to abort.
    let error = client.abort(&game).await.unwrap_err();
    assert_eq!(error.status(), Some(400));

    // Opponent gone: the line arrives, then we claim the win. Not on
    // our own turn (lila refuses it there): we move first.
    client
        .make_move(&game, "d5c4", false, deadline())
        .await
        .unwrap();
    while next_state(&mut stream).await.moves.split(' ').count() < 4 {}
    fake.opponent_gone(&game, true).unwrap();
    let gone = loop {
        if let GameEvent::OpponentGone(gone) = next_game_event(&mut stream).await {
            break gone;
        }
    };
    assert!(gone.gone);
    assert_eq!(gone.claim_win_in_seconds, Some(0));
    client.claim_victory(&game).await.unwrap();
    let state = next_state(&mut stream).await;
    assert_eq!(state.status, GameStatus::Timeout);
    assert_eq!(state.winner, Some(kaissa::lichess::Color::Black));

    // An unknown game.
    let error = client.stream_game("nosuchgm").await.unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error:?}");
}

#[tokio::test]
async fn draw_offer_with_a_move_and_accepted_draw() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    let game = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    client
        .make_move(&game, "e2e4", true, deadline())
        .await
        .unwrap();
    // At ply 0: lila drops it without a word (`playerCanOfferDraw`).
    let record = fake.game(&game).unwrap();
    assert_eq!((record.bot_draw_offers, record.dropped_draw_offers), (0, 1));
    assert!(fake.requests().last().unwrap().query.as_deref() == Some("offeringDraw=true"));
    // The opponent moves instead: the offer lapses; then it offers, we accept.
    fake.opponent_move(&game, "e7e5").unwrap();
    fake.opponent_offers_draw(&game).unwrap();
    client.answer_draw(&game, true).await.unwrap();
    let record = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(record.status, "draw");
    assert_eq!(record.winner, None);
    assert_eq!(record.draw_answers, [true]);
}

#[tokio::test]
async fn resign_abort_and_playing() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    let first = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    let second = fake
        .start_game(
            ChallengeSpec::default()
                .autoplay(None)
                .time(FakeTime::Unlimited),
            Color::Black,
        )
        .unwrap();
    let playing = client.playing().await.unwrap();
    let ids: Vec<&str> = playing
        .now_playing
        .iter()
        .map(|g| g.game_id.as_str())
        .collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    assert!(playing.now_playing[0].is_my_turn);
    assert!(!playing.now_playing[1].is_my_turn);
    assert_eq!(playing.nb_my_turn, Some(1));
    assert_eq!(fake.max_simultaneous_games(), 2);

    client.abort(&first).await.unwrap();
    client.resign(&second).await.unwrap();
    assert_eq!(fake.game(&first).unwrap().status, "aborted");
    let second = fake.game(&second).unwrap();
    assert_eq!(second.status, "resign");
    assert_eq!(second.winner, Some(Color::White));
    assert!(client.playing().await.unwrap().now_playing.is_empty());
}

#[tokio::test]
async fn accept_and_decline_challenges() {
    let fake = FakeLichess::start().await;
    let client = client(&fake);
    let a = fake.send_challenge(ChallengeSpec::default());
    let b = fake.send_challenge(ChallengeSpec::default());
    let c = fake.send_challenge(ChallengeSpec::default().variant(FakeVariant::Other {
        key: "atomic".into(),
    }));
    client
        .decline_challenge(&b, DeclineReason::TooFast)
        .await
        .unwrap();
    client
        .decline_challenge(&c, DeclineReason::Variant)
        .await
        .unwrap();
    client.accept_challenge(&a).await.unwrap();
    assert_eq!(
        fake.challenge(&b).unwrap().decline_reason.as_deref(),
        Some("tooFast")
    );
    assert_eq!(
        fake.challenge(&c).unwrap().decline_reason.as_deref(),
        Some("variant")
    );
    assert_eq!(fake.challenge(&a).unwrap().status, "accepted");
    assert!(fake.game(&a).is_some());
    // Gone: 404.
    let error = client.accept_challenge(&b).await.unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error:?}");

    // Our own challenge, cancelled.
    let ours = client
        .create_challenge(
            "someone",
            &CreateChallenge {
                time: ChallengeTime::Unlimited,
                rated: false,
                color: ChallengeColor::Black,
                variant: VariantKey::FromPosition,
                fen: Some("8/8/8/4k3/8/8/4P3/4K3 w - - 0 1".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(ours.variant.key, VariantKey::FromPosition);
    client.cancel_challenge(&ours.id).await.unwrap();
    assert_eq!(fake.challenge(&ours.id).unwrap().status, "canceled");
}

#[tokio::test]
async fn clocks_flag_and_first_move_timeout() {
    let fake = FakeLichess::start_with(FakeConfig {
        first_move_timeout: Duration::from_millis(300),
        ..FakeConfig::default()
    })
    .await;
    let client = client(&fake);

    // Nobody moves: aborted.
    let idle = fake
        .start_game(ChallengeSpec::default().autoplay(None), Color::White)
        .unwrap();
    assert_eq!(
        fake.wait_game_over(&idle, WAIT).await.unwrap().status,
        "aborted"
    );

    // One second on the clock: after both first moves, ours runs out.
    let game = fake
        .start_game(
            ChallengeSpec::default().clock(1, 0).autoplay(None),
            Color::White,
        )
        .unwrap();
    client
        .make_move(&game, "e2e4", false, deadline())
        .await
        .unwrap();
    fake.opponent_move(&game, "e7e5").unwrap();
    let record = fake.wait_game_over(&game, WAIT).await.unwrap();
    assert_eq!(record.status, "outoftime");
    assert_eq!(record.winner, Some(Color::Black));
    assert_eq!(record.wtime_ms, 0);

    // Increments are added after each timed move.
    let game = fake
        .start_game(
            ChallengeSpec::default().clock(60, 5).autoplay(None),
            Color::White,
        )
        .unwrap();
    client
        .make_move(&game, "e2e4", false, deadline())
        .await
        .unwrap();
    fake.opponent_move(&game, "e7e5").unwrap();
    client
        .make_move(&game, "g1f3", false, deadline())
        .await
        .unwrap();
    let record = fake.game(&game).unwrap();
    assert!(
        record.wtime_ms > 60_000 && record.wtime_ms <= 65_000,
        "{record:?}"
    );
    assert_eq!(record.btime_ms, 60_000);
}

/// A move post on a short deadline whose first attempt hangs (a dead
/// pooled connection): the attempt is given up in time for a retry on a
/// fresh connection. It used to get the whole deadline, and the move was
/// lost.
#[tokio::test]
async fn a_hung_move_post_leaves_time_for_a_retry_on_a_short_deadline() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = client(&fake);
    let game = fake
        .start_game(
            ChallengeSpec::default().clock(10, 0).autoplay(None),
            Color::White,
        )
        .unwrap();
    client
        .make_move(&game, "e2e4", false, deadline())
        .await
        .unwrap();
    fake.opponent_move(&game, "e7e5").unwrap();
    fake.delay_matching("/move/", 1, Duration::from_secs(5));
    let short = Instant::now() + Duration::from_millis(2500);
    client.make_move(&game, "g1f3", false, short).await.unwrap();
    let record = fake.game(&game).unwrap();
    assert_eq!(record.moves, ["e2e4", "e7e5", "g1f3"]);
    assert!(!record.is_over(), "{record:?}");
}

#[tokio::test]
async fn a_whole_game_through_the_client() {
    let fake = FakeLichess::start_with(fast_config()).await;
    let client = client(&fake);
    let mut events = client.stream_events().await.unwrap();
    fake.wait_event_stream(WAIT).await.unwrap();
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant(FakeVariant::Chess960 { position: None })
            .clock(600, 0)
            .autoplay(Some(AutoPlay {
                policy: Policy::Greedy,
                think: Duration::from_millis(1),
                accept_draws: false,
            })),
    );
    let Event::Challenge { challenge, .. } = next_event(&mut events).await else {
        panic!("expected a challenge");
    };
    let start_fen = challenge.initial_fen.clone().unwrap();
    client.accept_challenge(&id).await.unwrap();
    let Event::GameStart { game } = next_event(&mut events).await else {
        panic!("expected gameStart");
    };
    let mut stream = client.stream_game(&game.game_id).await.unwrap();
    let GameEvent::GameFull(full) = next_game_event(&mut stream).await else {
        panic!("gameFull first");
    };
    assert_eq!(full.initial_fen, start_fen);
    let ours = if full.color_of(&fake.bot_id()) == Some(kaissa::lichess::Color::White) {
        Color::White
    } else {
        Color::Black
    };

    // Our side plays random legal moves, with shakmaty, from the stream.
    let mut rng = fastrand::Rng::with_seed(7);
    let mut state = full.state.clone();
    loop {
        if !state.status.is_ongoing() {
            break;
        }
        let setup = shakmaty::fen::Fen::from_ascii(start_fen.as_bytes()).unwrap();
        let mut pos: shakmaty::Chess = setup
            .into_position(shakmaty::CastlingMode::Chess960)
            .unwrap();
        for uci in state.moves() {
            let m = uci
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
        }
        if pos.turn() == ours {
            let moves = pos.legal_moves();
            let m = moves[rng.usize(0..moves.len())];
            let uci = shakmaty::uci::UciMove::from_move(m, shakmaty::CastlingMode::Chess960);
            client
                .make_move(&game.game_id, &uci.to_string(), false, deadline())
                .await
                .unwrap();
        }
        state = next_state(&mut stream).await;
    }
    let record = fake.wait_game_over(&game.game_id, WAIT).await.unwrap();
    assert!(
        record.illegal_moves.is_empty(),
        "{:?}",
        record.illegal_moves
    );
    assert!(
        ["mate", "stalemate", "draw"].contains(&record.status.as_str()),
        "{record:?}"
    );
    let Event::GameFinish { game: finished } = next_event(&mut events).await else {
        panic!("expected gameFinish");
    };
    assert_eq!(finished.game_id, game.game_id);
}

#[test]
fn chess960_positions_are_all_distinct_and_legal() {
    assert_eq!(chess960_back_rank(518), "RNBQKBNR");
    assert_eq!(chess960_back_rank(0), "BBQNNRKR");
    let mut seen = std::collections::HashSet::new();
    for n in 0..960 {
        let fen = chess960_fen(n);
        let pos: shakmaty::Chess = shakmaty::fen::Fen::from_ascii(fen.as_bytes())
            .unwrap()
            .into_position(shakmaty::CastlingMode::Chess960)
            .unwrap();
        assert!(!pos.legal_moves().is_empty());
        assert!(seen.insert(chess960_back_rank(n)));
    }
}
