//! The fake Lichess plays every variant by the variant's rules: scripted
//! games with both sides by hand (the bot's moves posted over HTTP, as a
//! bot does), checked against the results of an independent
//! implementation (python-chess 1.11's variant boards gave each line's
//! outcome) and against lila's statuses and FEN forms.

use crate::support;

use std::time::Duration;

use serde_json::Value;
use shakmaty::{Color, Position};
use support::fake_lichess::{ChallengeSpec, FakeLichess, GameRecord};

/// A game of `key` in which the bot has White and the opponent waits
/// for the test's moves.
async fn start(key: &str) -> (FakeLichess, String) {
    let fake = FakeLichess::start().await;
    let spec = ChallengeSpec::default()
        .variant_key(key)
        .clock(300, 0)
        .autoplay(None);
    let id = fake.start_game(spec, Color::White).expect("game starts");
    (fake, id)
}

/// Posts the bot's move; the HTTP status.
async fn bot_move(fake: &FakeLichess, id: &str, uci: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{}/api/bot/game/{id}/move/{uci}", fake.url()))
        .bearer_auth(fake.token())
        .send()
        .await
        .expect("the fake answers")
        .status()
        .as_u16()
}

/// Plays `line` (UCI) on: White's moves as the bot's, Black's as the
/// opponent's. Every move must be taken.
async fn play(fake: &FakeLichess, id: &str, line: &str) -> GameRecord {
    for uci in line.split_whitespace() {
        let turn = fake.position(id).map(|p| p.turn());
        if turn == Some(Color::White) {
            assert_eq!(bot_move(fake, id, uci).await, 200, "{uci}");
        } else {
            fake.opponent_move(id, uci)
                .unwrap_or_else(|e| panic!("{uci}: {e}"));
        }
    }
    fake.game(id).expect("the game exists")
}

/// The first line (`gameFull`) of the game's stream.
async fn game_full(fake: &FakeLichess, id: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{}/api/bot/game/stream/{id}", fake.url()))
        .bearer_auth(fake.token())
        .send()
        .await
        .expect("the fake answers");
    let mut body = Vec::new();
    let mut response = response;
    while !body.contains(&b'\n') {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("gameFull in time")
            .expect("the stream is open")
            .expect("a chunk");
        body.extend_from_slice(&chunk);
    }
    let line = body.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice(line).expect("gameFull is JSON")
}

#[tokio::test]
async fn three_check_ends_on_the_third_check() {
    let (fake, id) = start("threeCheck").await;
    let game = play(&fake, &id, "e2e4 e7e5 f1c4 b8c6 c4f7").await;
    assert_eq!(game.status, "started");
    // lila writes the checks given so far, White's then Black's.
    assert!(game.fen.ends_with(" +1+0"), "{}", game.fen);
    let game = play(&fake, &id, "e8f7 d1h5 g7g6 h5g6").await;
    assert_eq!(game.status, "variantEnd", "{game:?}");
    assert_eq!(game.winner, Some(Color::White));
    assert!(game.fen.ends_with(" +3+0"), "{}", game.fen);
}

#[tokio::test]
async fn a_king_on_the_hill_wins() {
    let (fake, id) = start("kingOfTheHill").await;
    let game = play(&fake, &id, "e2e3 d7d6 e1e2 e8d7 e2d3 d7c6 d3d4").await;
    assert_eq!(game.status, "variantEnd", "{game:?}");
    assert_eq!(game.winner, Some(Color::White));
}

#[tokio::test]
async fn an_exploded_king_loses_in_atomic() {
    let (fake, id) = start("atomic").await;
    let game = play(&fake, &id, "g1f3 a7a6 f3e5 a6a5 e5f7").await;
    assert_eq!(game.status, "variantEnd", "{game:?}");
    assert_eq!(game.winner, Some(Color::White));
    // The knight, the king and the pieces beside f7 are gone.
    assert!(game.fen.starts_with("rnbq3r/1pppp1pp/"), "{}", game.fen);
}

#[tokio::test]
async fn racing_kings_both_on_the_eighth_rank_is_a_draw() {
    let (fake, id) = start("racingKings").await;
    let full = game_full(&fake, &id).await;
    assert_eq!(full["variant"]["key"], "racingKings", "{full}");
    assert_eq!(full["initialFen"], "startpos", "{full}");
    let line = "h2h3 a2b3 h3h4 b3c4 h4h5 c4d5 h5h6 d5e6 h6g7 e6e7 g7h8";
    let game = play(&fake, &id, line).await;
    // Black may still reach the eighth rank on the move after.
    assert_eq!(game.status, "started", "{game:?}");
    let game = play(&fake, &id, "e7f8").await;
    assert_eq!(game.status, "draw", "{game:?}");
    assert_eq!(game.winner, None);
}

#[tokio::test]
async fn racing_kings_is_won_when_the_other_king_cannot_follow() {
    let (fake, id) = start("racingKings").await;
    let line = "h2h3 a2a3 h3h4 a3b3 h4h5 b3a3 h5h6 a3b3 h6g7 b3c4 g7h8";
    let game = play(&fake, &id, line).await;
    assert_eq!(game.status, "variantEnd", "{game:?}");
    assert_eq!(game.winner, Some(Color::White));
}

#[tokio::test]
async fn crazyhouse_drops_from_the_pocket_only() {
    let (fake, id) = start("crazyhouse").await;
    let game = play(&fake, &id, "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5").await;
    // lila's form: the pockets after a slash.
    assert!(
        game.fen
            .starts_with("rnb1kbnr/ppp1pppp/8/q7/8/2N5/PPPP1PPP/R1BQKBNR/Pp w"),
        "{}",
        game.fen
    );
    assert_eq!(bot_move(&fake, &id, "N@e4").await, 400, "no knight in hand");
    let game = fake.game(&id).unwrap();
    assert_eq!(game.illegal_moves.len(), 1, "{game:?}");
    assert_eq!(bot_move(&fake, &id, "P@d4").await, 200);
    let game = fake.game(&id).unwrap();
    assert_eq!(game.moves.last().map(String::as_str), Some("P@d4"));
    assert!(
        game.fen.contains("/3P4/2N5/PPPP1PPP/R1BQKBNR/p b"),
        "{}",
        game.fen
    );
    // Black drops its pawn back.
    fake.opponent_move(&id, "P@e5").unwrap();
    let legal = fake.legal_moves(&id).unwrap();
    assert!(legal.iter().all(|m| !m.contains('@')), "{legal:?}");
}

#[tokio::test]
async fn antichess_forces_a_capture() {
    let (fake, id) = start("antichess").await;
    play(&fake, &id, "e2e4 d7d5").await;
    assert_eq!(
        bot_move(&fake, &id, "g1f3").await,
        400,
        "a capture is forced"
    );
    assert_eq!(fake.legal_moves(&id).unwrap(), vec!["e4d5".to_owned()]);
    let game = play(&fake, &id, "e4d5").await;
    assert_eq!(game.status, "started");
}

#[tokio::test]
async fn horde_starts_from_its_own_position() {
    let (fake, id) = start("horde").await;
    let full = game_full(&fake, &id).await;
    assert_eq!(full["variant"]["key"], "horde", "{full}");
    assert_eq!(full["variant"]["name"], "Horde", "{full}");
    // lila stores (and sends) an initial FEN for Chess960 and
    // fromPosition games only.
    assert_eq!(full["initialFen"], "startpos", "{full}");
    let game = fake.game(&id).unwrap();
    assert_eq!(
        game.fen,
        "rnbqkbnr/pppppppp/8/1PP2PP1/PPPPPPPP/PPPPPPPP/PPPPPPPP/PPPPPPPP w kq - 0 1"
    );
    let game = play(&fake, &id, "d4d5 e7e6 c5c6").await;
    assert_eq!(game.status, "started", "{game:?}");
}
