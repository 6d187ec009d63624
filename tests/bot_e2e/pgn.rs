//! The PGNs of whole games against the fake Lichess, read back: the clock
//! after every move as the server gave it, our engine's evaluation, depth
//! and line on our moves, the opening's tags, and the games of one
//! opponent, or all of them, in one file, whole and apart.

use super::{GAME, WAIT, as_white_and_black, quick_opponent, start};
use crate::support;

use std::path::Path;
use std::time::Duration;

use shakmaty::Color;
use support::fake_lichess::{ChallengeSpec, FakeLichess, GameRecord, Opponent};
use support::pgn::{clk, games, movetext, opening_of, tag};

/// The game `id` from the PGN file `path`, once it is written there.
async fn game_in(path: &Path, id: &str) -> String {
    let site = format!("/{id}\"]");
    let until = std::time::Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(game) = games(&text).into_iter().find(|g| g.contains(&site)) {
            return game.to_owned();
        }
        assert!(
            std::time::Instant::now() < until,
            "game {id} not in {}: {text}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks the moves of a game's PGN against the server's record: the
/// same number, each with the mover's clock after it; our moves with
/// `[%eval]`, the depth and the line from the move played, the
/// opponent's with the clock alone.
fn check_comments(pgn: &str, game: &GameRecord) {
    let moves = movetext(pgn);
    assert_eq!(moves.len(), game.moves.len(), "{pgn}");
    assert_eq!(game.clocks_ms.len(), game.moves.len());
    for (ply, ((san, comment), ms)) in moves.iter().zip(&game.clocks_ms).enumerate() {
        let comment = comment.as_deref().unwrap_or_default();
        let mover = if ply % 2 == 0 {
            Color::White
        } else {
            Color::Black
        };
        if mover != game.bot_color {
            assert_eq!(comment, clk(*ms), "{pgn}");
            continue;
        }
        // `[%eval 0.25] [%clk 0:00:59] d4 pv: e4 e5 Nf3`
        let mut words = comment.split(' ');
        assert_eq!(words.next(), Some("[%eval"), "{pgn}");
        let eval = words.next().unwrap_or_default();
        assert!(
            eval.strip_suffix(']')
                .is_some_and(|e| e.starts_with('#') || e.parse::<f64>().is_ok()),
            "{eval} in {pgn}"
        );
        let rest: Vec<&str> = words.collect();
        let clock = clk(*ms);
        assert_eq!(rest[..2].join(" "), clock, "{pgn}");
        assert_eq!(rest[2], "depth", "{pgn}");
        let depth = rest[3].parse::<u32>().ok();
        assert!(depth.is_some_and(|d| (1..=4).contains(&d)), "{pgn}");
        assert_eq!(rest[4], "pv:", "{pgn}");
        assert_eq!(
            rest.get(5),
            Some(&san.as_str()),
            "the line starts with the move: {pgn}"
        );
    }
}

/// Both colours' games in one file for all (`games.pgn`), with every
/// comment on: clocks that are the server's, to the second, the engine's
/// word on our moves, and the opening the moves reached. A thread for
/// each game: no search is cut short before it has said anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clocks_engine_lines_and_openings_in_one_file_for_all_games() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 2\npgn_file = \"all\"\n\
         pgn_comments = [\"eval\", \"clock\", \"depth\", \"pv\"]\n\
         [engine]\nthreads = 2",
    )
    .await;
    let ids = as_white_and_black(&fake);
    let file = bot.pgn_dir().join("games.pgn");
    for id in &ids {
        let game = fake.wait_game_over(id, GAME).await.unwrap();
        let pgn = game_in(&file, id).await;
        check_comments(&pgn, &game);
        let (eco, name) = opening_of(&game.moves).expect("a named opening");
        assert_eq!(tag(&pgn, "ECO"), Some(eco.as_str()), "{pgn}");
        assert_eq!(tag(&pgn, "Opening"), Some(name.as_str()), "{pgn}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let all = games(&text);
    assert_eq!(all.len(), 2, "{text}");
    // Each game ends with its result and a blank line.
    for game in all {
        let result = tag(game, "Result").unwrap();
        let end = game.strip_suffix(&format!("{result}\n\n"));
        assert!(end.is_some_and(|e| e.ends_with([' ', '\n'])), "{game}");
    }
    assert!(!bot.pgn_dir().join(format!("{}.pgn", ids[0])).exists());
    bot.stop().await;
}

/// One file per opponent: two games against Alice at once and one
/// against Bob; no comments asked for, so the moves stand alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_file_per_opponent_holds_their_games_whole() {
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        "[bot]\nconcurrency = 3\npgn_file = \"opponent\"\npgn_comments = []",
    )
    .await;
    let against = |name: &str| {
        fake.send_challenge(
            ChallengeSpec::default()
                .clock(60, 1)
                .challenger(Opponent::human(name))
                .autoplay(Some(quick_opponent())),
        )
    };
    let games_of = [
        ("Alice", vec![against("Alice"), against("Alice")]),
        ("Bob", vec![against("Bob")]),
    ];
    for (name, ids) in &games_of {
        let file = bot.pgn_dir().join(format!("{name}.pgn"));
        for id in ids {
            let game = fake.wait_game_over(id, GAME).await.unwrap();
            let pgn = game_in(&file, id).await;
            let moves = movetext(&pgn);
            assert_eq!(moves.len(), game.moves.len(), "{pgn}");
            assert!(moves.iter().all(|(_, c)| c.is_none()), "{pgn}");
            assert!(!pgn.contains('{'), "{pgn}");
        }
    }
    for (name, ids) in &games_of {
        let text = std::fs::read_to_string(bot.pgn_dir().join(format!("{name}.pgn"))).unwrap();
        assert_eq!(games(&text).len(), ids.len(), "{text}");
        assert!(
            text.ends_with("\n\n") && !text.ends_with("\n\n\n"),
            "{text}"
        );
    }
    let files = std::fs::read_dir(bot.pgn_dir()).unwrap().count();
    assert_eq!(files, 2, "Alice.pgn and Bob.pgn only");
    bot.stop().await;
}
