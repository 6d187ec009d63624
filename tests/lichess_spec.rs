//! Conformance of kaissa's Lichess models to the API specification.
//!
//! # The specification
//!
//! The fixtures under `tests/data/lichess/` follow the OpenAPI spec of
//! **lichess-org/api at commit `f59dc80500ca0db2ac6669aa9bedfdef45f3e47d`**
//! (2026-08-22, "Merge pull request #668"), `doc/specs/`. Where the spec
//! has no example, or says nothing of a body, the shape comes from the
//! server's source, lichess-org/lila (`modules/bot/BotJsonView.scala`,
//! `modules/bot/BotLimit.scala`, `modules/api/EventStream.scala`,
//! `modules/game/JsonView.scala`, `modules/challenge/JsonView.scala`,
//! `modules/setup/SetupForm.scala`, `app/controllers/Challenge.scala`,
//! `app/http/CtrlErrors.scala` / `lila.web.CtrlErrors`).
//!
//! Provenance of each fixture (`spec example`: copied verbatim, turned
//! from YAML into JSON; `schema`: written from the schema's fields,
//! values made up in the style of the spec's examples; `lila`: the body
//! lila's code writes, where the spec has none):
//!
//! | fixture | provenance |
//! |---|---|
//! | `event/gameStart.json` | spec example `stream-gameStart` |
//! | `event/gameStart-ai.json` | spec example `stream-gameStart-ai` |
//! | `event/gameStart-tournament.json` | schema `GameEventInfo` (`source: arena`, `tournamentId`) |
//! | `event/gameFinish.json` | spec example `stream-gameFinish` |
//! | `event/gameFinish-ai.json` | spec example `stream-gameFinish-ai` |
//! | `event/gameFinish-tournament.json` | schema `GameEventInfo` (mate, `winner`, `ratingDiff`, `tournamentId`) |
//! | `event/challenge.json` | spec example `stream-challenge` (unlimited) |
//! | `event/challenge-clock.json` | the example of schema `ChallengeJson` in a `ChallengeEvent` with `compat` |
//! | `event/challenge-correspondence.json` | schema `ChallengeJson` (`daysPerTurn`) |
//! | `event/challenge-fromPosition.json` | schema `ChallengeJson` (`initialFen`); perf icon from lila's `iconOf` |
//! | `event/challenge-chess960.json` | schema `ChallengeJson` (`initialFen`, `compat.board: false`) |
//! | `event/challenge-rematch.json` | schema `ChallengeJson` (`rematchOf`), as lila's `EventStream` sends rematches |
//! | `event/challengeCanceled.json` | spec example `stream-challengeCanceled` |
//! | `event/challengeDeclined.json` | spec example `stream-challengeDeclined` (`generic`) |
//! | `event/challengeDeclined-tooFast.json` | schema `ChallengeDeclinedJson` (`toofast`, lila's English text) |
//! | `event/unknown.json` | none: a `type` the spec does not have, by construction |
//! | `game/gameFull.json` | the example of schema `GameFullEvent` |
//! | `game/gameFull-chess960.json` | schema `GameFullEvent` + lila `BotJsonView` (`initialFen`, clock) |
//! | `game/gameFull-fromPosition.json` | schema `GameFullEvent` (`initialFen`, moves from it) |
//! | `game/gameFull-correspondence.json` | schema `GameFullEvent` (`daysPerTurn`, no clock; times as lila's `millisRemaining`) |
//! | `game/gameFull-tournament.json` | schema `GameFullEvent` (`tournamentId`, state with `expiration`) |
//! | `game/gameState.json` | the example of schema `GameStateEvent` |
//! | `game/gameState-expiration.json` | schema `GameStateEvent` (`expiration`) |
//! | `game/gameState-offers.ndjson` | schema `GameStateEvent`: `wdraw`, `bdraw`, `wtakeback`, `btakeback` |
//! | `game/gameState-statuses.ndjson` | schema `GameStateEvent`: every `GameStatusName`, `winner` where one is |
//! | `game/chatLine.json` | the example of schema `ChatLineEvent` |
//! | `game/chatLine-spectator.json` | schema `ChatLineEvent` (`room: spectator`) |
//! | `game/opponentGone.json` | the example of schema `OpponentGoneEvent` |
//! | `game/opponentGone-back.json` | schema `OpponentGoneEvent` (`gone: false`, as lila's `opponentGoneIsBack`) |
//! | `account/account.json` | spec example `account-getMyProfile` |
//! | `account/account-bot.json` | schema `UserExtended` (`title: BOT`, a `storm` puzzle perf) |
//! | `account/playing.json` | the example of `GET /api/account/playing` |
//! | `account/playing-schema.json` | that path's schema (`status` as a name, `tournamentId`) |
//! | `account/token-test.json` | spec example `oauth-testMultipleOauthTokens` |
//! | `bot/online.ndjson` | line 1: spec example `bot-getOnlineBots`; line 2: schema `User` |
//! | `challenge/create.json` | spec example `challenges-createChallenge` |
//! | `online/cloud-eval.json` | the example of schema `CloudEval` |
//! | `online/cloud-eval-mate.json` | schema `CloudEval` (a mate variation) |
//! | `online/tablebase-standard.json` | spec example `tablebase-lookupStandard` |
//! | `errors/429-bot-vs-bot-day.json` | lila: `BotLimit` message, `Writes[Limited]` of `CtrlErrors` |
//! | `errors/400-opponent-bot-vs-bot-day.json` | lila: `BotLimit.OpponentLimit` written by `Challenge.apiCreate` |
//! | `errors/400-clock-limit.json` | lila: `doubleJsonFormError` of `Challenge.apiCreate` for a `clock.limit` outside `ApiConfig.clockLimitSeconds` |
//! | `errors/400-invalid-speed.json` | lila: the same, for the form-level "Invalid speed" (renamed `global`) |
//! | `errors/400-move.json` | lila: `BotPlayer`'s "Not your turn, or game already over" (schema `Error`) |
//! | `errors/404-cloud-eval.json` | the 404 example of `GET /api/cloud-eval` |

mod support;

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use kaissa::lichess::model::{
    Account, ChallengeStatus, ChatRoom, Color, Compat, DeclineReason, Direction, ErrorBody, Event,
    GameEvent, GameFull, GameInfo, GameState, GameStatus, NowPlaying, OnlineBot, OpponentGone,
    Speed, TimeControl, Title, TokenInfo, VariantKey, perf_rating,
};
use kaissa::lichess::online::{Online, OnlineOptions};
use kaissa::lichess::{Challenge, NdjsonStream, StreamEvent};
use serde::de::DeserializeOwned;
use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lichess");

fn read(rel: &str) -> String {
    let path = format!("{DATA}/{rel}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A JSON fixture as a value.
fn json(rel: &str) -> Value {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: not JSON: {e}"))
}

/// A JSON fixture parsed into a kaissa type.
fn parse<T: DeserializeOwned>(rel: &str) -> T {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| {
        panic!(
            "{rel} does not parse as {}: {e}",
            std::any::type_name::<T>()
        )
    })
}

/// The lines of an ndjson fixture, each parsed.
fn parse_lines<T: DeserializeOwned>(rel: &str) -> Vec<T> {
    read(rel)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "{rel}:{}: does not parse as {}: {e}",
                    i + 1,
                    std::any::type_name::<T>()
                )
            })
        })
        .collect()
}

fn game_start(rel: &str) -> GameInfo {
    match parse::<Event>(rel) {
        Event::GameStart { game } => game,
        other => panic!("{rel}: not a gameStart: {other:?}"),
    }
}

fn game_finish(rel: &str) -> GameInfo {
    match parse::<Event>(rel) {
        Event::GameFinish { game } => game,
        other => panic!("{rel}: not a gameFinish: {other:?}"),
    }
}

fn challenge_event(rel: &str) -> (Challenge, Option<Compat>) {
    match parse::<Event>(rel) {
        Event::Challenge { challenge, compat } => (challenge, compat),
        other => panic!("{rel}: not a challenge: {other:?}"),
    }
}

fn game_full(rel: &str) -> GameFull {
    match parse::<GameEvent>(rel) {
        GameEvent::GameFull(full) => *full,
        other => panic!("{rel}: not a gameFull: {other:?}"),
    }
}

fn game_state(event: GameEvent) -> GameState {
    match event {
        GameEvent::GameState(state) => state,
        other => panic!("not a gameState: {other:?}"),
    }
}

// ---------------------------------------------------------------------
// The event stream: /api/stream/event
// ---------------------------------------------------------------------

#[test]
fn event_game_start() {
    let game = game_start("event/gameStart.json");
    assert_eq!(game.game_id, "0FgNPGRz");
    assert_eq!(game.full_id, "0FgNPGRzhDaW");
    assert_eq!(game.id.as_deref(), Some("0FgNPGRz"));
    assert_eq!(game.color, Some(Color::White));
    assert_eq!(
        game.fen.as_deref(),
        Some("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    );
    assert_eq!(game.last_move.as_deref(), Some(""));
    assert_eq!(game.source.as_deref(), Some("friend"));
    assert_eq!(game.status, Some(GameStatus::Started));
    assert_eq!(
        game.variant.as_ref().map(|v| v.key),
        Some(VariantKey::Standard)
    );
    assert_eq!(game.speed, Some(Speed::Blitz));
    assert_eq!(game.perf.as_deref(), Some("blitz"));
    assert!(game.rated);
    assert!(!game.has_moved);
    assert!(game.is_my_turn);
    assert_eq!(game.seconds_left, Some(300));
    assert_eq!(game.rating, Some(724));
    assert_eq!(game.winner, None);
    assert_eq!(game.rating_diff, None);
    assert_eq!(game.tournament_id, None);
    assert_eq!(
        game.compat,
        Some(Compat {
            bot: false,
            board: true
        })
    );
    let opponent = game.opponent.expect("opponent");
    assert_eq!(opponent.id.as_deref(), Some("aaron"));
    assert_eq!(opponent.username, "Aaron");
    assert_eq!(opponent.rating, Some(776));
    assert_eq!(opponent.ai, None);
}

#[test]
fn event_game_start_against_the_ai() {
    let game = game_start("event/gameStart-ai.json");
    assert_eq!(game.game_id, "RwDo6DN6");
    assert_eq!(game.color, Some(Color::Black));
    assert_eq!(game.source.as_deref(), Some("ai"));
    assert_eq!(game.speed, Some(Speed::Correspondence));
    assert_eq!(game.seconds_left, None, "no clock against the AI here");
    let opponent = game.opponent.expect("opponent");
    assert_eq!(opponent.id, None, "the AI has a null id");
    assert_eq!(opponent.username, "Stockfish level 1");
    assert_eq!(opponent.ai, Some(1));
}

#[test]
fn event_game_start_in_a_tournament() {
    let game = game_start("event/gameStart-tournament.json");
    assert_eq!(game.tournament_id.as_deref(), Some("Qa7NnuY6"));
    assert_eq!(game.source.as_deref(), Some("arena"));
    assert_eq!(game.color, Some(Color::Black));
    assert_eq!(game.last_move.as_deref(), Some("e2e4"));
    assert!(game.is_my_turn);
    assert_eq!(game.status, Some(GameStatus::Started));
}

#[test]
fn event_game_finish() {
    let game = game_finish("event/gameFinish.json");
    assert_eq!(game.game_id, "0FgNPGRz");
    assert_eq!(game.status, Some(GameStatus::Resign));
    assert!(!game.status.unwrap().is_ongoing());
    assert_eq!(game.winner, Some(Color::Black));
    assert_eq!(game.color, Some(Color::White), "we lost");
    assert_eq!(game.rating_diff, Some(-9));
    assert_eq!(game.opponent.as_ref().unwrap().rating_diff, Some(5));
    assert_eq!(game.source.as_deref(), Some("friend"));
    assert_eq!(game.last_move.as_deref(), Some("e7e5"));
    assert!(game.has_moved);
    assert_eq!(
        game.compat,
        Some(Compat {
            bot: false,
            board: true
        })
    );
    assert_eq!(game.tournament_id, None);
}

#[test]
fn event_game_finish_aborted_against_the_ai() {
    let game = game_finish("event/gameFinish-ai.json");
    assert_eq!(game.status, Some(GameStatus::Aborted));
    assert_eq!(game.winner, None);
    assert_eq!(game.rating_diff, None);
    assert_eq!(game.opponent.unwrap().ai, Some(1));
}

#[test]
fn event_game_finish_in_a_tournament() {
    let game = game_finish("event/gameFinish-tournament.json");
    assert_eq!(game.status, Some(GameStatus::Mate));
    assert_eq!(game.winner, Some(Color::White));
    assert_eq!(game.color, Some(Color::Black));
    assert_eq!(game.rating_diff, Some(-6));
    assert_eq!(game.opponent.unwrap().rating_diff, Some(6));
    assert_eq!(game.tournament_id.as_deref(), Some("Qa7NnuY6"));
    assert_eq!(game.source.as_deref(), Some("arena"));
}

#[test]
fn event_challenge_unlimited() {
    let (c, compat) = challenge_event("event/challenge.json");
    assert_eq!(c.id, "jWAgu6ga");
    assert_eq!(c.url.as_deref(), Some("https://lichess.org/jWAgu6ga"));
    assert_eq!(c.status, Some(ChallengeStatus::Created));
    assert_eq!(c.challenger.id, "adriana");
    assert_eq!(c.challenger.name, "Adriana");
    assert_eq!(c.challenger.rating, Some(734));
    assert_eq!(c.challenger.title, None);
    assert!(!c.challenger.is_bot());
    let dest = c.dest_user.as_ref().expect("destUser");
    assert_eq!(dest.id, "gabriela");
    assert!(dest.provisional);
    assert_eq!(dest.online, Some(true));
    assert_eq!(c.variant.key, VariantKey::Standard);
    assert_eq!(c.variant.short.as_deref(), Some("Std"));
    assert!(!c.rated);
    assert_eq!(c.speed, Speed::Correspondence);
    assert_eq!(c.time_control, TimeControl::Unlimited);
    assert_eq!(c.color, Some(kaissa::lichess::ChallengeColor::Random));
    assert_eq!(c.final_color, Some(Color::Black));
    assert_eq!(
        c.perf.as_ref().and_then(|p| p.name.as_deref()),
        Some("Correspondence")
    );
    assert_eq!(c.direction, None, "the event stream gives no direction");
    assert_eq!(c.initial_fen, None);
    assert_eq!(c.rematch_of, None);
    assert_eq!(
        compat,
        Some(Compat {
            bot: false,
            board: true
        })
    );
}

#[test]
fn event_challenge_with_a_clock() {
    let (c, compat) = challenge_event("event/challenge-clock.json");
    assert_eq!(c.id, "H9fIRZUk");
    assert_eq!(
        c.time_control,
        TimeControl::Clock {
            limit: 600,
            increment: 0,
            show: Some("10+0".to_owned())
        }
    );
    assert_eq!(c.speed, Speed::Rapid);
    assert!(c.rated);
    assert!(c.challenger.is_bot());
    assert!(c.challenger.provisional);
    assert_eq!(c.challenger.lag, Some(4));
    assert_eq!(c.dest_user.as_ref().unwrap().title, Some(Title::Gm));
    assert_eq!(c.direction, Some(Direction::Out));
    assert_eq!(
        compat,
        Some(Compat {
            bot: true,
            board: true
        })
    );
}

#[test]
fn event_challenge_correspondence() {
    let (c, _) = challenge_event("event/challenge-correspondence.json");
    assert_eq!(
        c.time_control,
        TimeControl::Correspondence {
            days_per_turn: Some(3)
        }
    );
    assert_eq!(c.speed, Speed::Correspondence);
    assert_eq!(c.color, Some(kaissa::lichess::ChallengeColor::White));
    assert!(c.dest_user.unwrap().is_bot());
}

#[test]
fn event_challenge_from_position() {
    let (c, _) = challenge_event("event/challenge-fromPosition.json");
    assert_eq!(c.variant.key, VariantKey::FromPosition);
    assert_eq!(
        c.initial_fen.as_deref(),
        Some("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    );
    assert_eq!(c.challenger.title, Some(Title::Wnm));
    assert_eq!(
        c.time_control,
        TimeControl::Clock {
            limit: 180,
            increment: 2,
            show: Some("3+2".to_owned())
        }
    );
}

#[test]
fn event_challenge_chess960() {
    let (c, compat) = challenge_event("event/challenge-chess960.json");
    assert_eq!(c.variant.key, VariantKey::Chess960);
    assert_eq!(
        c.initial_fen.as_deref(),
        Some("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1")
    );
    assert_eq!(
        compat,
        Some(Compat {
            bot: true,
            board: false
        })
    );
}

#[test]
fn event_challenge_rematch() {
    let (c, _) = challenge_event("event/challenge-rematch.json");
    assert_eq!(c.rematch_of.as_deref(), Some("0FgNPGRz"));
    assert_eq!(c.challenger.id, "aaron");
    assert_eq!(c.dest_user.unwrap().id, "kaissa");
}

#[test]
fn event_challenge_canceled() {
    let Event::ChallengeCanceled { challenge } = parse("event/challengeCanceled.json") else {
        panic!("not a challengeCanceled")
    };
    assert_eq!(challenge.id, "BO2kXa9v");
    assert_eq!(challenge.status, Some(ChallengeStatus::Canceled));
    assert_eq!(challenge.challenger.title, Some(Title::Wnm));
    assert_eq!(challenge.dest_user.unwrap().id, "diego");
}

#[test]
fn event_challenge_declined() {
    let Event::ChallengeDeclined { challenge } = parse("event/challengeDeclined.json") else {
        panic!("not a challengeDeclined")
    };
    assert_eq!(challenge.status, Some(ChallengeStatus::Declined));
    assert_eq!(
        challenge.decline_reason.as_deref(),
        Some("I'm not accepting challenges at the moment.")
    );
    assert_eq!(challenge.decline_reason_key.as_deref(), Some("generic"));
    assert_eq!(
        DeclineReason::from_key(challenge.decline_reason_key.as_deref().unwrap()),
        Some(DeclineReason::Generic)
    );
}

#[test]
fn event_challenge_declined_too_fast() {
    let Event::ChallengeDeclined { challenge } = parse("event/challengeDeclined-tooFast.json")
    else {
        panic!("not a challengeDeclined")
    };
    assert!(challenge.challenger.is_bot(), "our own challenge");
    assert_eq!(challenge.decline_reason_key.as_deref(), Some("toofast"));
    assert_eq!(
        DeclineReason::from_key(challenge.decline_reason_key.as_deref().unwrap()),
        Some(DeclineReason::TooFast)
    );
}

#[test]
fn event_of_an_unknown_type_is_ignored() {
    assert_eq!(
        parse::<Event>("event/unknown.json"),
        Event::Unknown {
            kind: "someFutureEvent".to_owned()
        }
    );
}

/// Every event fixture, as one ndjson stream with keep-alives: each line
/// is an item (the unknown one included), none is skipped, the stream
/// goes on to the end.
#[tokio::test]
async fn event_stream_of_every_fixture() {
    let mut body = Vec::new();
    let mut names = Vec::new();
    for name in fixture_files("event") {
        let value = json(&format!("event/{name}"));
        body.extend_from_slice(value.to_string().as_bytes());
        body.extend_from_slice(b"\n\n");
        names.push(name);
    }
    // Chunks that cut lines anywhere.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(97).map(|c| Ok(c.to_vec())).collect();
    let mut stream: NdjsonStream<_, Event> = NdjsonStream::new(futures::stream::iter(chunks));
    let mut items = Vec::new();
    while let Some(step) = stream.next().await {
        match step.expect("the stream does not fail") {
            StreamEvent::Item(event) => items.push(event),
            StreamEvent::KeepAlive => {}
            StreamEvent::Skipped(skipped) => panic!("a fixture line was skipped: {skipped}"),
        }
    }
    assert_eq!(items.len(), names.len(), "{names:?}");
    let unknown = items
        .iter()
        .filter(|e| matches!(e, Event::Unknown { .. }))
        .count();
    assert_eq!(unknown, 1, "only event/unknown.json is of an unknown type");
}

// ---------------------------------------------------------------------
// The bot game stream: /api/bot/game/stream/{id}
// ---------------------------------------------------------------------

#[test]
fn game_full_standard() {
    let full = game_full("game/gameFull.json");
    assert_eq!(full.id, "BEOucQJo");
    assert_eq!(full.variant.key, VariantKey::Standard);
    assert_eq!(full.speed, Speed::Rapid);
    assert_eq!(
        full.perf.as_ref().and_then(|p| p.name.as_deref()),
        Some("Rapid")
    );
    assert!(!full.rated);
    assert_eq!(full.created_at, Some(1_745_112_707_998));
    assert_eq!(full.white.id, "bobby");
    assert_eq!(full.white.title, None, "title: null");
    assert_eq!(full.white.rating, Some(1751));
    assert_eq!(full.black.id, "mary");
    assert_eq!(full.color_of("Mary"), Some(Color::Black));
    assert_eq!(full.initial_fen, "startpos");
    assert_eq!(full.initial_fen(), None);
    let clock = full.clock.expect("clock");
    assert_eq!((clock.initial, clock.increment), (900_000, 0));
    assert_eq!(full.days_per_turn, None);
    assert_eq!(full.tournament_id, None);
    assert_eq!(full.state.moves().collect::<Vec<_>>(), ["d2d3"]);
    assert_eq!(full.state.status, GameStatus::Started);
    assert_eq!(full.state.time_left(Color::White), 900_000);
}

#[test]
fn game_full_chess960() {
    let full = game_full("game/gameFull-chess960.json");
    assert_eq!(full.variant.key, VariantKey::Chess960);
    assert_eq!(
        full.initial_fen(),
        Some("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1")
    );
    let clock = full.clock.expect("clock");
    assert_eq!((clock.initial, clock.increment), (300_000, 3_000));
    assert_eq!(full.color_of("kaissa"), Some(Color::White));
    assert!(full.white.is_bot());
    assert!(full.black.provisional);
    assert_eq!(full.state.ply(), 0);
    assert_eq!(full.state.increment(Color::Black), 3_000);
}

#[test]
fn game_full_from_position() {
    let full = game_full("game/gameFull-fromPosition.json");
    assert_eq!(full.variant.key, VariantKey::FromPosition);
    assert_eq!(
        full.initial_fen(),
        Some("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    );
    assert_eq!(full.state.ply(), 2);
    assert_eq!(full.black.title, Some(Title::Wnm));
}

#[test]
fn game_full_correspondence() {
    let full = game_full("game/gameFull-correspondence.json");
    assert_eq!(full.clock, None);
    assert_eq!(full.days_per_turn, Some(3));
    assert_eq!(full.speed, Speed::Correspondence);
    assert_eq!(full.color_of("kaissa"), Some(Color::Black));
    assert_eq!(full.state.time_left(Color::Black), 259_200_000);
    assert_eq!(full.state.increment(Color::White), 0);
}

#[test]
fn game_full_in_a_tournament() {
    let full = game_full("game/gameFull-tournament.json");
    assert_eq!(full.tournament_id.as_deref(), Some("Qa7NnuY6"));
    assert!(full.rated);
    let expiration = full.state.expiration.expect("expiration");
    assert_eq!(expiration.idle_millis, 1204);
    assert_eq!(expiration.millis_to_move, 15_000);
}

#[test]
fn game_state_example() {
    let state = game_state(parse("game/gameState.json"));
    assert_eq!(state.ply(), 13);
    assert_eq!(state.moves().nth(10), Some("e1g1"));
    assert_eq!(state.time_left(Color::White), 7_598_040);
    assert_eq!(state.time_left(Color::Black), 8_395_220);
    assert_eq!(state.increment(Color::White), 10_000);
    assert_eq!(state.status, GameStatus::Started);
    for color in [Color::White, Color::Black] {
        assert!(!state.offers_draw(color), "wdraw/bdraw are false");
        assert!(!state.proposes_takeback(color));
    }
    assert_eq!(state.winner, None);
    assert_eq!(state.expiration, None);
}

#[test]
fn game_state_with_expiration() {
    let state = game_state(parse("game/gameState-expiration.json"));
    let expiration = state.expiration.expect("expiration");
    assert_eq!(expiration.idle_millis, 2311);
    assert_eq!(expiration.millis_to_move, 30_000);
}

#[test]
fn game_state_offers() {
    let states: Vec<GameState> = parse_lines::<GameEvent>("game/gameState-offers.ndjson")
        .into_iter()
        .map(game_state)
        .collect();
    let offers = |s: &GameState| {
        (
            s.offers_draw(Color::White),
            s.offers_draw(Color::Black),
            s.proposes_takeback(Color::White),
            s.proposes_takeback(Color::Black),
        )
    };
    let got: Vec<_> = states.iter().map(offers).collect();
    assert_eq!(
        got,
        [
            (true, false, false, false),
            (false, true, false, false),
            (false, false, true, false),
            (false, false, false, true),
        ]
    );
}

#[test]
fn game_state_every_status() {
    let states: Vec<GameState> = parse_lines::<GameEvent>("game/gameState-statuses.ndjson")
        .into_iter()
        .map(game_state)
        .collect();
    let got: Vec<(GameStatus, bool, Option<Color>)> = states
        .iter()
        .map(|s| (s.status, s.status.is_ongoing(), s.winner))
        .collect();
    use GameStatus::*;
    let white = Some(Color::White);
    let black = Some(Color::Black);
    assert_eq!(
        got,
        [
            (Created, true, None),
            (Started, true, None),
            (Aborted, false, None),
            (Mate, false, black),
            (Resign, false, white),
            (Stalemate, false, None),
            (Timeout, false, black),
            (Draw, false, None),
            (Outoftime, false, white),
            (Cheat, false, black),
            (NoStart, false, white),
            (UnknownFinish, false, None),
            (InsufficientMaterialClaim, false, None),
            (VariantEnd, false, white),
        ]
    );
}

#[test]
fn game_chat_lines() {
    let GameEvent::ChatLine(line) = parse("game/chatLine.json") else {
        panic!("not a chatLine")
    };
    assert_eq!(line.room, ChatRoom::Player);
    assert_eq!(line.username, "thibault");
    assert_eq!(line.text, "Good luck, have fun");
    let GameEvent::ChatLine(line) = parse("game/chatLine-spectator.json") else {
        panic!("not a chatLine")
    };
    assert_eq!(line.room, ChatRoom::Spectator);
    assert_eq!(line.text, "gg");
}

#[test]
fn game_opponent_gone_and_back() {
    assert_eq!(
        parse::<GameEvent>("game/opponentGone.json"),
        GameEvent::OpponentGone(OpponentGone {
            gone: true,
            claim_win_in_seconds: Some(8)
        })
    );
    assert_eq!(
        parse::<GameEvent>("game/opponentGone-back.json"),
        GameEvent::OpponentGone(OpponentGone {
            gone: false,
            claim_win_in_seconds: None
        })
    );
}

#[test]
fn game_event_of_an_unknown_type_is_ignored() {
    assert_eq!(
        parse::<GameEvent>("event/unknown.json"),
        GameEvent::Unknown {
            kind: "someFutureEvent".to_owned()
        }
    );
}

// ---------------------------------------------------------------------
// Account, ongoing games, online bots, tokens, challenge creation
// ---------------------------------------------------------------------

#[test]
fn account() {
    let account: Account = parse("account/account.json");
    assert_eq!(account.id, "bobby");
    assert_eq!(account.username, "Bobby");
    assert!(!account.is_bot());
    assert_eq!(account.created_at, Some(1_779_834_692_439));
    assert_eq!(account.url.as_deref(), Some("https://lichess.org/@/Bobby"));
    assert!(!account.disabled);
    assert!(!account.tos_violation);
    assert_eq!(perf_rating(&account.perfs, "blitz"), Some(1629));
    assert_eq!(perf_rating(&account.perfs, "chess960"), Some(1844));
    assert!(account.perfs["rapid"].prov);
    assert!(!account.perfs["bullet"].prov);
    assert_eq!(account.perfs["correspondence"].games, Some(1520));
}

#[test]
fn account_of_a_bot() {
    let account: Account = parse("account/account-bot.json");
    assert!(account.is_bot());
    assert_eq!(account.title, Some(Title::Bot));
    assert_eq!(perf_rating(&account.perfs, "blitz"), Some(2012));
    assert!(account.perfs["classical"].prov);
    // A puzzle-mode perf ({runs, score}) has no rating.
    assert_eq!(perf_rating(&account.perfs, "storm"), None);
}

#[test]
fn account_playing() {
    let playing: NowPlaying = parse("account/playing.json");
    assert_eq!(playing.nb_my_turn, Some(1));
    let [game] = playing.now_playing.as_slice() else {
        panic!("one game")
    };
    assert_eq!(game.game_id, "rCRw1AuO");
    assert_eq!(game.full_id, "rCRw1AuOvonq");
    assert_eq!(game.color, Some(Color::Black));
    assert!(game.has_moved);
    assert!(!game.is_my_turn);
    assert_eq!(game.last_move.as_deref(), Some("b8c6"));
    assert_eq!(game.seconds_left, Some(1_209_600));
    assert_eq!(game.speed, Some(Speed::Correspondence));
    assert_eq!(game.source.as_deref(), Some("friend"));
    assert_eq!(game.status, None, "the spec's example has no status");
    let opponent = game.opponent.as_ref().unwrap();
    assert_eq!(opponent.id.as_deref(), Some("philippe"));
    assert_eq!(opponent.rating, Some(1790));
}

#[test]
fn account_playing_with_status_and_tournament() {
    let playing: NowPlaying = parse("account/playing-schema.json");
    let game = &playing.now_playing[0];
    assert_eq!(game.status, Some(GameStatus::Started), "status as a name");
    assert_eq!(game.tournament_id.as_deref(), Some("Qa7NnuY6"));
    assert!(game.is_my_turn);
    assert_eq!(game.source.as_deref(), Some("arena"));
}

#[test]
fn online_bots() {
    let bots: Vec<OnlineBot> = parse_lines("bot/online.ndjson");
    assert_eq!(bots.len(), 2);
    assert_eq!(bots[0].id, "bernstein-2ply");
    assert_eq!(bots[0].username, "bernstein-2ply");
    assert_eq!(bots[0].title, Some(Title::Bot));
    assert_eq!(perf_rating(&bots[0].perfs, "blitz"), Some(1121));
    assert!(bots[0].perfs["correspondence"].prov);
    assert!(!bots[0].tos_violation);
    assert!(!bots[0].disabled);
    assert_eq!(bots[1].id, "bot1");
    assert!(bots[1].perfs["bullet"].prov);
}

#[test]
fn token_test_scopes() {
    let tokens: HashMap<String, Option<TokenInfo>> = parse("account/token-test.json");
    let jose = tokens["lip_jose"].as_ref().expect("a valid token");
    assert_eq!(jose.user_id.as_deref(), Some("jose"));
    assert!(jose.has_scope("bot:play"));
    assert!(jose.has_scope("challenge:write"));
    assert!(!jose.has_scope("bot"), "whole scopes only");
    assert_eq!(jose.expires, None, "never expires");
    assert_eq!(tokens["lip_badToken"], None, "an invalid token is null");
}

#[test]
fn challenge_created() {
    let c: Challenge = parse("challenge/create.json");
    assert_eq!(c.id, "uGK4MHaQ");
    assert_eq!(c.direction, Some(Direction::Out));
    assert_eq!(c.status, Some(ChallengeStatus::Created));
    assert_eq!(c.dest_user.unwrap().id, "mary");
    assert_eq!(c.final_color, Some(Color::White));
    assert_eq!(c.time_control, TimeControl::Unlimited);
}

// ---------------------------------------------------------------------
// Error bodies
// ---------------------------------------------------------------------

#[test]
fn error_429_bot_vs_bot_day() {
    let body: ErrorBody = parse("errors/429-bot-vs-bot-day.json");
    let limit = body.ratelimit.as_ref().expect("ratelimit");
    assert_eq!(
        limit.key.as_deref(),
        Some(kaissa::lichess::client::BOT_VS_BOT_DAY)
    );
    assert_eq!(limit.seconds, Some(27_594));
    assert_eq!(
        body.message(),
        "You played 100 games against other bots today, please wait before challenging another bot."
    );
}

#[test]
fn error_400_opponent_bot_vs_bot_day() {
    let body: ErrorBody = parse("errors/400-opponent-bot-vs-bot-day.json");
    let limit = body.ratelimit.as_ref().expect("ratelimit");
    assert_eq!(limit.key.as_deref(), Some("bot.vsBot.day"));
    assert_eq!(limit.seconds, Some(21_164));
    assert!(body.message().starts_with("Bot1 played 100 games"));
}

#[test]
fn error_400_refused_clock_limit() {
    let body: ErrorBody = parse("errors/400-clock-limit.json");
    assert_eq!(body.ratelimit, None);
    assert_eq!(body.message(), "clock.limit: Invalid value");
    let body: ErrorBody = parse("errors/400-invalid-speed.json");
    assert_eq!(body.message(), "global: Invalid speed");
}

#[test]
fn error_400_move() {
    let body: ErrorBody = parse("errors/400-move.json");
    assert_eq!(body.message(), "Not your turn, or game already over");
    assert_eq!(body.ratelimit, None);
    let body: ErrorBody = parse("errors/404-cloud-eval.json");
    assert_eq!(
        body.message(),
        "No cloud evaluation available for that position"
    );
}

/// Every fixture parses with the kaissa type its folder names; a new
/// fixture cannot be left out.
#[test]
fn every_fixture_parses() {
    let mut count = 0;
    for dir in [
        "event",
        "game",
        "account",
        "bot",
        "challenge",
        "errors",
        "online",
    ] {
        for name in fixture_files(dir) {
            let rel = format!("{dir}/{name}");
            count += 1;
            match (dir, name.as_str()) {
                ("event", _) => drop(parse::<Event>(&rel)),
                ("game", n) if n.ends_with(".ndjson") => drop(parse_lines::<GameEvent>(&rel)),
                ("game", _) => drop(parse::<GameEvent>(&rel)),
                ("account", n) if n.starts_with("account") => drop(parse::<Account>(&rel)),
                ("account", n) if n.starts_with("playing") => drop(parse::<NowPlaying>(&rel)),
                ("account", "token-test.json") => {
                    drop(parse::<HashMap<String, Option<TokenInfo>>>(&rel))
                }
                ("bot", _) => drop(parse_lines::<OnlineBot>(&rel)),
                ("challenge", _) => drop(parse::<Challenge>(&rel)),
                ("errors", _) => drop(parse::<ErrorBody>(&rel)),
                // Read by kaissa's online client: see `online_sources`.
                ("online", _) => drop(json(&rel)),
                _ => panic!("{rel}: no kaissa type for this fixture"),
            }
        }
    }
    assert!(count >= 45, "{count} fixtures");
}

fn fixture_files(dir: &str) -> Vec<String> {
    let path = format!("{DATA}/{dir}");
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json") || name.ends_with(".ndjson"))
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------
// The online sources (cloud evaluation, tablebase) through kaissa's own
// client: the fake Lichess answers the fixtures.
// ---------------------------------------------------------------------

fn online(fake: &support::fake_lichess::FakeLichess) -> Online {
    Online::new(OnlineOptions {
        tablebase_url: Some(fake.url()),
        tablebase_pieces: 7,
        cloud_eval_url: Some(fake.url()),
        cloud_eval_plies: 100,
        cloud_eval_min_depth: 20,
        timeout: Duration::from_secs(5),
        min_clock: Duration::ZERO,
    })
    .expect("online client")
}

#[tokio::test]
async fn online_sources() {
    let fake = support::fake_lichess::FakeLichess::start().await;
    let online = online(&fake);

    // The cloud-eval example's position, with the query example's FEN.
    let ruy_lopez = "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3";
    fake.set_cloud_eval(ruy_lopez, json("online/cloud-eval.json"));
    let eval = online
        .cloud_eval(ruy_lopez)
        .await
        .unwrap()
        .expect("an eval");
    assert_eq!(eval.uci, "d1e2", "the first move of the first pv");
    assert_eq!((eval.cp, eval.mate, eval.depth), (Some(41), None, 29));

    let mate = json("online/cloud-eval-mate.json");
    let fools = mate["fen"].as_str().unwrap().to_owned();
    fake.set_cloud_eval(&fools, mate);
    let eval = online.cloud_eval(&fools).await.unwrap().expect("an eval");
    assert_eq!(eval.uci, "d8h4");
    assert_eq!((eval.cp, eval.mate), (None, Some(-1)), "Black mates");

    // No evaluation: a 404, which is no answer rather than an error.
    let startpos = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    assert_eq!(online.cloud_eval(startpos).await.unwrap(), None);

    // The tablebase example: `curl .../standard?fen=4k3/6KP/8/8/8/8/7p/8_w_-_-_0_1`.
    let kpkp = "4k3/6KP/8/8/8/8/7p/8 w - - 0 1";
    fake.set_tablebase_answer(kpkp, json("online/tablebase-standard.json"));
    let answer = online.tablebase(kpkp).await.unwrap().expect("an answer");
    assert_eq!(answer.uci, "h7h8q", "the first (best) move");
    assert_eq!(answer.category, "win");
    assert_eq!(answer.dtz, Some(1));
}

// ---------------------------------------------------------------------
// The error bodies through kaissa's client: a small server answers each
// fixture with its status.
// ---------------------------------------------------------------------

/// Serves `(method, path) -> (status, fixture)` on 127.0.0.1; returns the
/// base URL.
async fn serve_fixtures(routes: Vec<(&'static str, &'static str, u16, &'static str)>) -> String {
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    use axum::response::Response;
    use std::sync::Arc;
    let table: Arc<HashMap<(String, String), (u16, String)>> = Arc::new(
        routes
            .into_iter()
            .map(|(method, path, status, rel)| {
                ((method.to_owned(), path.to_owned()), (status, read(rel)))
            })
            .collect(),
    );
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let table = table.clone();
        async move {
            let key = (
                request.method().to_string(),
                request.uri().path().to_owned(),
            );
            let (status, body) = table
                .get(&key)
                .cloned()
                .unwrap_or((404, r#"{"error":"Not found"}"#.to_owned()));
            Response::builder()
                .status(StatusCode::from_u16(status).unwrap())
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn client(base_url: String) -> kaissa::lichess::Client {
    use kaissa::lichess::{Client, ClientOptions, RetryPolicy, Token};
    let quick = RetryPolicy {
        max_attempts: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(20),
    };
    let options = ClientOptions {
        base_url,
        rate_limit_pause: Duration::from_millis(100),
        request_timeout: Duration::from_secs(5),
        retry: quick,
        urgent_retry: quick,
        game_retry: quick,
        ..ClientOptions::default()
    };
    Client::new(Token::new("lip_spec_token_0123456789").unwrap(), options).unwrap()
}

fn a_challenge() -> kaissa::lichess::CreateChallenge {
    kaissa::lichess::CreateChallenge {
        time: kaissa::lichess::ChallengeTime::Clock {
            limit_secs: 180,
            increment_secs: 2,
        },
        rated: true,
        color: kaissa::lichess::ChallengeColor::Random,
        variant: VariantKey::Standard,
        fen: None,
    }
}

#[tokio::test]
async fn error_bodies_through_the_client() {
    use kaissa::lichess::Error;
    let url = serve_fixtures(vec![
        (
            "POST",
            "/api/challenge/capped",
            429,
            "errors/429-bot-vs-bot-day.json",
        ),
        (
            "POST",
            "/api/challenge/bot1",
            400,
            "errors/400-opponent-bot-vs-bot-day.json",
        ),
        (
            "POST",
            "/api/challenge/clocky",
            400,
            "errors/400-clock-limit.json",
        ),
        ("POST", "/api/challenge/mary", 200, "challenge/create.json"),
        (
            "POST",
            "/api/bot/game/0FgNPGRz/move/e2e4",
            400,
            "errors/400-move.json",
        ),
    ])
    .await;
    let client = client(url);

    // Our own daily cap: a 429 whose ratelimit tells how long.
    let error = client
        .create_challenge("capped", &a_challenge())
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.rate_limit_key(), Some("bot.vsBot.day"));
    assert_eq!(
        error.bot_vs_bot_daily_limit(),
        Some(Duration::from_secs(27_594)),
        "{error}"
    );

    // The opponent's daily cap: a 400 with the same ratelimit object.
    let error = client
        .create_challenge("bot1", &a_challenge())
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(400));
    assert!(
        error
            .to_string()
            .contains("Bot1 played 100 games against other bots today"),
        "{error}"
    );

    // A clock limit Lichess refuses: the form error, flattened.
    let error = client
        .create_challenge("clocky", &a_challenge())
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(400));
    assert!(
        error.to_string().contains("clock.limit: Invalid value"),
        "{error}"
    );

    // The challenge itself, as the spec's example.
    let created = client
        .create_challenge("mary", &a_challenge())
        .await
        .unwrap();
    assert_eq!(created.id, "uGK4MHaQ");

    // A refused move.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let error = client
        .make_move("0FgNPGRz", "e2e4", false, deadline)
        .await
        .unwrap_err();
    match &error {
        Error::MoveRejected { message, .. } => {
            assert_eq!(message, "Not your turn, or game already over")
        }
        other => panic!("not a rejected move: {other}"),
    }
}
