//! The move sources in the bot: the real `kaissa run` binary against the
//! fake Lichess, whose online tablebase and cloud evaluation give canned
//! answers. A book move, a tablebase move and a cloud-eval move are posted
//! without a search and logged with their source; an online source that
//! does not answer in time leaves the game to the search, which moves in
//! time. With local tables (see `support::syzygy`), the bot mates from a
//! won ending on table moves alone and never asks the online tablebase.

use crate::support;

use std::time::Duration;

use serde_json::json;
use shakmaty::Color;
use support::bot::{Bot, check_log};
use support::fake_lichess::{AutoPlay, ChallengeSpec, FakeLichess, FakeVariant, GameRecord, Side};
use support::syzygy::tables_dir;

const WAIT: Duration = Duration::from_secs(20);
const BOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gnuchess-2ply.bin");

async fn start(fake: &FakeLichess, sources: &str) -> Bot {
    let mut bot = Bot::configured(fake, |_| {
        format!(
            "[lichess]\nurl = \"{url}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n[bot]\nconcurrency = 2\n\
             [challenge]\nmax_games_per_opponent = 2\n\
             [sources]\nbook_files = []\nonline_min_clock_secs = 0\n\
             online_tablebase_url = \"{url}\"\n{sources}\n",
            url = fake.url()
        )
    });
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    bot
}

/// A game where the bot is White and the opponent moves by hand.
fn as_white(fake: &FakeLichess, variant: FakeVariant) -> String {
    fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(variant)
            .challenger_color(Side::Black)
            .autoplay(None),
    )
}

/// Waits for the bot's move number `n` (0-based plies of the game).
async fn ply(fake: &FakeLichess, bot: &Bot, id: &str, n: usize) -> GameRecord {
    fake.wait_for(&format!("ply {n} of {id}"), WAIT, |v| {
        v.game(id).filter(|g| g.moves.len() > n)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; the bot's log:\n{}", bot.log()))
}

fn move_lines<'a>(log: &'a str, id: &str) -> Vec<&'a str> {
    log.lines()
        .filter(|l| l.contains(id) && l.contains("mover: move "))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_tablebase_and_cloud_eval_moves_are_posted_without_a_search() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        &format!(
            "book_files = [\"{BOOK}\"]\nbook_selection = \"best\"\nbook_depth = 1\n\
             online_tablebase = true\ncloud_eval = true\ncloud_eval_min_depth = 20"
        ),
    )
    .await;
    // Standard: the book's heaviest move, then (out of book depth) the
    // cloud evaluation's odd but legal choice, then a search.
    let after_e4_e5 = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    fake.set_cloud_eval(
        after_e4_e5,
        json!({"fen": after_e4_e5, "knodes": 1000, "depth": 30,
               "pvs": [{"moves": "a2a3 b8c6 g1f3", "cp": 25}]}),
    );
    let standard = as_white(&fake, FakeVariant::Standard);
    let game = ply(&fake, &bot, &standard, 0).await;
    assert_eq!(game.moves[0], "e2e4");
    fake.opponent_move(&standard, "e7e5").unwrap();
    let game = ply(&fake, &bot, &standard, 2).await;
    assert_eq!(game.moves[2], "a2a3");
    fake.opponent_move(&standard, "b8c6").unwrap();
    ply(&fake, &bot, &standard, 4).await;

    // KQvK from a position: the online tablebase's (legal, unusual) move.
    let kqk = "8/8/8/4k3/8/8/8/3QK3 w - - 0 1";
    fake.set_tablebase_answer(
        kqk,
        json!({"category": "win", "dtz": 19, "precise_dtz": 19,
               "moves": [{"uci": "e1f2", "san": "Kf2", "category": "loss", "dtz": -18}]}),
    );
    let ending = as_white(
        &fake,
        FakeVariant::FromPosition {
            fen: kqk.to_owned(),
        },
    );
    let game = ply(&fake, &bot, &ending, 0).await;
    assert_eq!(game.moves[0], "e1f2");

    for id in [&standard, &ending] {
        fake.opponent_resigns(id).unwrap();
        fake.wait_game_over(id, WAIT).await.unwrap();
    }
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    let moves = move_lines(&log, &standard);
    assert!(
        moves[0].contains("source=book (weight 12135 of 30797)") && moves[0].contains("depth=0"),
        "{moves:?}"
    );
    assert!(
        moves[1].contains("source=cloud eval (cp 25, depth 30)"),
        "{moves:?}"
    );
    assert!(moves[2].contains("source=search"), "{moves:?}");
    let moves = move_lines(&log, &ending);
    assert!(
        moves[0].contains("source=online tablebase (win)"),
        "{moves:?}"
    );
    // What was asked: the cloud evaluation after the book, then for the
    // next move too (404: none), and the tablebase for the ending. Never
    // the tablebase for a position of more than 7 pieces.
    let requests = fake.requests();
    let cloud: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/api/cloud-eval")
        .collect();
    assert_eq!(cloud.len(), 2, "{cloud:?}");
    assert_eq!(cloud[1].status, 404);
    let tb: Vec<_> = requests.iter().filter(|r| r.path == "/standard").collect();
    assert_eq!(tb.len(), 1, "{tb:?}");
    assert!(
        tb[0]
            .query
            .as_deref()
            .unwrap()
            .contains("8/8/8/4k3/8/8/8/3QK3 w - -")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_online_source_times_out_and_the_search_moves() {
    let fake = FakeLichess::start().await;
    let bot = start(&fake, "online_tablebase = true\nonline_timeout_ms = 300").await;
    let kqk = "8/8/8/4k3/8/8/8/3QK3 w - - 0 1";
    fake.set_tablebase_answer(
        kqk,
        json!({"category": "win", "dtz": 19,
               "moves": [{"uci": "e1f2", "san": "Kf2", "category": "loss", "dtz": -18}]}),
    );
    fake.delay_online_answers(Duration::from_secs(5));
    let ending = as_white(
        &fake,
        FakeVariant::FromPosition {
            fen: kqk.to_owned(),
        },
    );
    let game = ply(&fake, &bot, &ending, 0).await;
    assert_eq!(game.bot_color, Color::White);
    assert!(game.illegal_moves.is_empty(), "{game:?}");
    fake.opponent_resigns(&ending).unwrap();
    fake.wait_game_over(&ending, WAIT).await.unwrap();
    // Not the slow answer's move: the search's (well before the answer).
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    // A failing source is said once, as a warning, not quietly per move.
    let failing: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("online source failing: no answer within 300ms"))
        .collect();
    assert_eq!(failing.len(), 1, "{log}");
    assert!(failing[0].contains("WARN"), "{failing:?}");
    let moves = move_lines(&log, &ending);
    assert!(moves[0].contains("source=search"), "{moves:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_tables_convert_an_ending_and_the_online_tablebase_is_not_asked() {
    let Some(dir) = tables_dir() else { return };
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        &format!(
            "syzygy_path = \"{}\"\nonline_tablebase = true",
            dir.display()
        ),
    )
    .await;
    // KRvK, 16 moves to mate with the best defence.
    let krk = "8/8/8/4k3/8/8/8/R3K3 w - - 0 1";
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .variant(FakeVariant::FromPosition {
                fen: krk.to_owned(),
            })
            .challenger_color(Side::Black)
            .autoplay(Some(AutoPlay {
                think: Duration::from_millis(2),
                ..AutoPlay::default()
            })),
    );
    let game = fake
        .wait_game_over(&id, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}; the bot's log:\n{}", bot.log()));
    assert_eq!(game.status, "mate", "{game:?}");
    assert_eq!(game.winner, Some(Color::White), "{game:?}");
    assert!(game.moves.len() <= 2 * 50, "{} plies", game.moves.len());
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    let moves = move_lines(&log, &id);
    assert!(!moves.is_empty());
    assert!(
        moves
            .iter()
            .all(|l| l.contains("source=tablebase (win, dtz ")),
        "{moves:?}"
    );
    let asked = fake
        .requests()
        .iter()
        .filter(|r| r.path == "/standard")
        .count();
    assert_eq!(asked, 0, "the online tablebase was asked");
}

/// The opening explorer and ChessDB as online books: the explorer
/// (Lichess's games, by speed and rating) answers the first move, with
/// the bot's token; ChessDB (another host: no token) the next one, where
/// the explorer has nothing; then the search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_and_chessdb_answer_the_opening_and_only_lichess_gets_the_token() {
    let fake = FakeLichess::start().await;
    let chessdb = fake.url().replace("127.0.0.1", "localhost");
    let bot = start(
        &fake,
        &format!(
            "explorer = true\nexplorer_url = \"{url}\"\nexplorer_db = \"lichess\"\n\
             explorer_speeds = [\"blitz\"]\nexplorer_ratings = [2200, 2500]\n\
             explorer_min_games = 10\nexplorer_sort = \"score\"\n\
             chessdb = true\nchessdb_url = \"{chessdb}/cdb.php\"\nchessdb_min_depth = 20",
            url = fake.url()
        ),
    )
    .await;
    let startpos = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    fake.set_explorer_answer(
        startpos,
        json!({"white": 950, "draws": 700, "black": 650, "moves": [
            {"uci": "e2e4", "san": "e4", "averageRating": 2301, "white": 500, "draws": 300, "black": 400},
            {"uci": "d2d4", "san": "d4", "averageRating": 2310, "white": 450, "draws": 400, "black": 250},
            {"uci": "b2b4", "san": "b4", "averageRating": 2250, "white": 5, "draws": 0, "black": 0}]}),
    );
    let after_d4_d5 = "rnbqkbnr/ppp1pppp/8/3p4/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 2";
    fake.set_chessdb_answer(
        after_d4_d5,
        json!({"status": "ok", "score": 31, "depth": 28, "pv": ["c2c4", "e7e6"]}),
    );
    let game = as_white(&fake, FakeVariant::Standard);
    let record = ply(&fake, &bot, &game, 0).await;
    assert_eq!(
        record.moves[0], "d2d4",
        "the best score with 10 games or more"
    );
    fake.opponent_move(&game, "d7d5").unwrap();
    let record = ply(&fake, &bot, &game, 2).await;
    assert_eq!(record.moves[2], "c2c4", "ChessDB's line");
    fake.opponent_move(&game, "e7e6").unwrap();
    ply(&fake, &bot, &game, 4).await;
    fake.opponent_resigns(&game).unwrap();
    fake.wait_game_over(&game, WAIT).await.unwrap();
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    let moves = move_lines(&log, &game);
    assert!(
        moves[0].contains("source=explorer (1100 games, 59.0%)"),
        "{moves:?}"
    );
    assert!(
        moves[1].contains("source=chessdb (cp 31, depth 28)"),
        "{moves:?}"
    );
    assert!(moves[2].contains("source=search"), "{moves:?}");
    let requests = fake.requests();
    let explorer: Vec<_> = requests.iter().filter(|r| r.path == "/lichess").collect();
    let query = explorer[0].query.as_deref().unwrap();
    for part in ["variant=standard", "speeds=blitz", "ratings=2200,2500"] {
        assert!(query.contains(part), "{part} not in {query}");
    }
    assert!(requests.iter().any(|r| r.path == "/cdb.php"));
    let signed = fake.online_asked_with_token();
    assert!(signed.iter().all(|p| p == "/lichess"), "{signed:?}");
    assert!(!signed.is_empty(), "the explorer gets the token");
}
