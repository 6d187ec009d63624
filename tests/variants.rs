//! Every Lichess variant end to end: the real `kaissa run` binary plays
//! with an external engine (Fairy-Stockfish, `[engines.NAME]`) against
//! the fake Lichess server, which applies each variant's rules with
//! shakmaty (not kaissa's own code). Also: an engine killed mid-game is
//! restarted and the game finished; a misconfigured engine declines its
//! variants' challenges and nothing else; engine processes do not outlive
//! kaissa; `kaissa check` names the engines and what they play; a
//! Polyglot book for a variant plays the engine's first moves, asked
//! only in the games its filters admit.
//!
//! Fairy-Stockfish: `scripts/build-fairy-stockfish.sh` (the tests are
//! skipped without it unless `KAISSA_FAIRY_STOCKFISH` names it, as CI
//! does). Set `KAISSA_E2E_SHOW_LOG=1` to see the daemon's logs.

use crate::support;

use std::path::Path;
use std::time::Duration;

use shakmaty::Color;
use support::bot::{Bot, bullet_beside_a_long_search, check_log, log_field};
use support::fake_lichess::{AutoPlay, ChallengeSpec, FakeLichess, GameRecord, Policy, Side};

const WAIT: Duration = Duration::from_secs(20);
const GAME: Duration = Duration::from_secs(240);

/// The variants only an external engine plays, with the PGN tag of each.
const VARIANTS: [(&str, &str); 7] = [
    ("crazyhouse", "Crazyhouse"),
    ("antichess", "Antichess"),
    ("atomic", "Atomic"),
    ("horde", "Horde"),
    ("kingOfTheHill", "King of the Hill"),
    ("racingKings", "Racing Kings"),
    ("threeCheck", "Three-check"),
];

fn quick_opponent() -> AutoPlay {
    AutoPlay {
        policy: Policy::Greedy,
        think: Duration::from_millis(5),
        accept_draws: false,
    }
}

/// The daemon with Fairy-Stockfish at `engine` playing every variant, a
/// shallow search to keep games short, plus `extra` TOML.
async fn start(fake: &FakeLichess, engine: &Path, extra: &str) -> Bot {
    let variants: Vec<String> = VARIANTS.iter().map(|(k, _)| format!("\"{k}\"")).collect();
    let variants = variants.join(", ");
    let mut bot = Bot::configured(fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\nthreads = 2\n\
             [challenge]\nmax_games_per_opponent = 100\n\
             variants = [\"standard\", {variants}]\n\
             [bot]\npgn_dir = \"{}\"\nconcurrency = 4\n\
             [engines.fairy]\ncommand = \"{}\"\nvariants = [{variants}]\n\
             options = {{ Hash = 8 }}\nmax_depth = 5\nmove_overhead_ms = 100\n{extra}\n",
            fake.url(),
            dir.join("pgn").display(),
            engine.display(),
        )
    });
    bot.log_filter = "info,kaissa=debug".to_owned();
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    bot
}

/// A finished variant game: no illegal move, not lost on time by the
/// bot, played (not aborted), and its PGN with the variant's tag.
fn check_finished(game: &GameRecord, bot: &Bot, tag: &str) {
    let pgn_dir = bot.pgn_dir();
    let result = std::panic::catch_unwind(|| check_game(game, &pgn_dir, tag));
    if let Err(panic) = result {
        eprintln!("the daemon's log:\n{}", bot.log());
        std::panic::resume_unwind(panic);
    }
}

fn check_game(game: &GameRecord, pgn_dir: &Path, tag: &str) {
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
    assert!(pgn.contains(&format!("[Variant \"{tag}\"]")), "{pgn}");
    let result = match game.winner {
        Some(Color::White) => "1-0",
        Some(Color::Black) => "0-1",
        None => "1/2-1/2",
    };
    assert!(pgn.contains(&format!("[Result \"{result}\"]")), "{pgn}");
}

async fn pgn_written(bot: &Bot, id: &str) {
    let path = bot.pgn_dir().join(format!("{id}.pgn"));
    for _ in 0..200 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no PGN for {id}");
}

/// The engine processes kaissa (`pid`) runs: children whose executable
/// is `engine`.
fn engine_children(pid: u32, engine: &Path) -> Vec<u32> {
    let engine = std::fs::canonicalize(engine).unwrap_or_else(|_| engine.to_owned());
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the comm may hold spaces.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let exe = std::fs::read_link(format!("/proc/{child}/exe")).ok();
        if ppid == Some(pid) && exe.as_deref() == Some(engine.as_path()) {
            found.push(child);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plays_a_whole_game_in_every_variant_with_fairy_stockfish() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        return;
    };
    let fake = FakeLichess::start().await;
    let bot = start(&fake, &engine, "").await;
    let mut games = Vec::new();
    for (i, (key, tag)) in VARIANTS.iter().enumerate() {
        let side = if i % 2 == 0 { Side::Black } else { Side::White };
        let id = fake.send_challenge(
            ChallengeSpec::default()
                .variant_key(key)
                .clock(120, 1)
                .challenger_color(side)
                .autoplay(Some(quick_opponent())),
        );
        games.push((id, *tag));
    }
    for (id, tag) in &games {
        let game = fake.wait_game_over(id, GAME).await.unwrap();
        pgn_written(&bot, id).await;
        check_finished(&game, &bot, tag);
    }
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    assert_eq!(
        log.matches("external engine started").count(),
        VARIANTS.len(),
        "one engine process per game"
    );
    assert!(
        !log.contains("not legal here"),
        "the engine's moves were all legal"
    );
    assert!(
        !log.contains("playing a legal move"),
        "the engine answered every move"
    );
    // Each move line names the overhead of the engine that played it
    // ([engines.fairy]'s 100 ms, not [engine]'s 200), as it stands
    // before the lag is measured.
    let first_moves: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" move ") && l.contains(" move_overhead_ms="))
        .filter(|l| !l.contains(" lag_ms="))
        .collect();
    assert!(!first_moves.is_empty(), "{log}");
    for line in first_moves {
        assert_eq!(
            log_field::<u64>(line, "move_overhead_ms"),
            Some(100),
            "{line}"
        );
    }
}

/// Writes a Polyglot book of `entries` (key, move bits, weight) to
/// `path`, sorted by key as a book must be; returns its path as TOML
/// takes it.
fn write_book(path: &Path, entries: &[(u64, u16, u16)]) -> String {
    let mut entries = entries.to_vec();
    entries.sort_by_key(|e| e.0);
    let data: Vec<u8> = entries
        .iter()
        .flat_map(|&(key, raw, weight)| kaissa::engine::book::raw_entry(key, raw, weight))
        .collect();
    std::fs::write(path, data).unwrap();
    path.display().to_string()
}

/// Polyglot's bits for a move between two squares (0 = a1, 63 = h8).
fn raw(from: u16, to: u16) -> u16 {
    from << 6 | to
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crazyhouse_book_plays_the_engines_first_moves_where_its_filters_admit() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        return;
    };
    // The crazyhouse positions' Polyglot keys, from python-chess 1.11.2
    // (chess.polyglot.zobrist_hash(chess.variant.CrazyhouseBoard()) after
    // the moves): the start's is standard chess's.
    const START: u64 = 0x463b_9618_1691_fc9c;
    const H3_E5: u64 = 0x24b0_43ec_47d7_cd58;
    const H3_E5_NA3_D5: u64 = 0xa63c_b1ab_3651_acb0;
    let books = tempfile::tempdir().unwrap();
    let book = |name: &str, entries: &[(u64, u16, u16)]| {
        write_book(&books.path().join(format!("{name}.bin")), entries)
    };
    // Asked by name: the first three would answer the start but do not
    // admit this game (we are White, at bullet, in crazyhouse).
    let black = book("black", &[(START, raw(8, 16), 50)]);
    let classical = book("classical", &[(START, raw(9, 17), 50)]);
    let atomic = book("atomic", &[(START, raw(10, 18), 50)]);
    // The book that plays: h3 (g4 is lighter than min_weight), Na3, and
    // Rb1, which is past its depth of two moves.
    let zh = book(
        "zh",
        &[
            (START, raw(15, 23), 10),
            (START, raw(14, 30), 3),
            (H3_E5, raw(1, 16), 7),
            (H3_E5_NA3_D5, raw(0, 1), 9),
        ],
    );
    let extra = format!(
        "[sources.books.a]\nfile = \"{black}\"\nvariants = [\"crazyhouse\"]\ncolors = [\"black\"]\n\
         [sources.books.b]\nfile = \"{classical}\"\nvariants = [\"crazyhouse\"]\n\
         speeds = [\"classical\"]\n\
         [sources.books.c]\nfile = \"{atomic}\"\nvariants = [\"atomic\"]\n\
         [sources.books.d]\nfile = \"{zh}\"\nvariants = [\"crazyhouse\"]\nspeeds = [\"bullet\"]\n\
         colors = [\"white\"]\nselection = \"best\"\ndepth = 2\nmin_weight = 5\n"
    );
    let fake = FakeLichess::start().await;
    let bot = start(&fake, &engine, &extra).await;
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant_key("crazyhouse")
            .clock(60, 1)
            .challenger_color(Side::Black)
            .autoplay(None),
    );
    let ply = |n: usize| {
        let (fake, id) = (&fake, &id);
        async move {
            fake.wait_for(&format!("ply {n} of {id}"), WAIT, |v| {
                v.game(id).filter(|g| g.moves.len() > n)
            })
            .await
        }
    };
    let game = ply(0)
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    assert_eq!(game.moves[0], "h2h3", "{}", bot.log());
    fake.opponent_move(&id, "e7e5").unwrap();
    let game = ply(2)
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    assert_eq!(game.moves[2], "b1a3", "{}", bot.log());
    fake.opponent_move(&id, "d7d5").unwrap();
    ply(4)
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", bot.log()));
    fake.opponent_resigns(&id).unwrap();
    fake.wait_game_over(&id, WAIT).await.unwrap();
    pgn_written(&bot, &id).await;
    let pgn = std::fs::read_to_string(bot.pgn_dir().join(format!("{id}.pgn"))).unwrap();
    // The moves, without the comments (clocks, the engine's eval).
    let mut bare = String::new();
    let mut depth = 0;
    for c in pgn.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => bare.push(c),
            _ => {}
        }
    }
    let bare = bare.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(bare.contains("1. h3 1... e5 2. Na3 2... d5 3."), "{pgn}");
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    let moves: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&id) && l.contains("mover: move "))
        .collect();
    assert_eq!(moves.len(), 3, "{moves:?}");
    // The totals count only the moves of at least min_weight.
    assert!(
        moves[0].contains("source=book (weight 10 of 10)"),
        "{moves:?}"
    );
    assert!(
        moves[1].contains("source=book (weight 7 of 7)"),
        "{moves:?}"
    );
    assert!(moves[2].contains("source=search"), "{moves:?}");
    assert!(log.contains("book=d"), "the book is named: {log}");
}

/// An engine that hangs on two searches in a row, at a clock of a few
/// seconds: each hung search is stopped and killed within five eighths of
/// our clock, and with no time for another search the first move of the
/// engine's line (or any legal move) is played; the restarted engine
/// plays on and the game is not lost on time. (With the old stop grace of
/// two seconds and a search again after the kill, the second hang flags.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_hangs_at_a_short_clock_does_not_lose_on_time() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("hangs.sh");
    // Passes every line to Fairy-Stockfish but the 3rd and 4th `go` of
    // the game (counted across restarts): those are never answered.
    std::fs::write(
        &wrapper,
        format!(
            r#"fifo="{dir}/fifo.$$"; mkfifo "$fifo"
"{engine}" < "$fifo" &
exec 3> "$fifo"
while IFS= read -r line; do
  case "$line" in
    go*) g=0; [ -f "{dir}/gos" ] && read -r g < "{dir}/gos"; g=$((g+1)); echo "$g" > "{dir}/gos"
         if [ "$g" -eq 3 ] || [ "$g" -eq 4 ]; then continue; fi ;;
  esac
  printf '%s\n' "$line" >&3
done
"#,
            dir = dir.path().display(),
            engine = engine.display()
        ),
    )
    .unwrap();
    let fake = FakeLichess::start().await;
    let mut bot = start(
        &fake,
        Path::new("/bin/sh"),
        &format!("args = [\"{}\"]", wrapper.display()),
    )
    .await;
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant_key("crazyhouse")
            .clock(3, 2)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    pgn_written(&bot, &id).await;
    check_finished(&game, &bot, "Crazyhouse");
    let log = bot.log();
    assert!(
        log.contains("no answer from the engine in time"),
        "the hung searches ended in a fallback move: {log}"
    );
    assert!(game.moves.len() > 10, "the game went on: {game:?}");
    bot.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_killed_mid_game_is_restarted_and_the_game_finished() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        return;
    };
    let fake = FakeLichess::start().await;
    let mut bot = start(&fake, &engine, "").await;
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant_key("crazyhouse")
            .clock(120, 1)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    fake.wait_until("six plies", GAME, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() >= 6)
    })
    .await
    .unwrap();
    let children = engine_children(bot.pid(), &engine);
    assert_eq!(
        children.len(),
        1,
        "one engine for the one game: {children:?}"
    );
    let first = children[0];
    std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    let game = fake.wait_game_over(&id, GAME).await.unwrap();
    pgn_written(&bot, &id).await;
    check_finished(&game, &bot, "Crazyhouse");
    assert!(game.moves.len() > 8, "the game went on: {game:?}");

    // A second game: kaissa killed outright takes its engine with it.
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .variant_key("atomic")
            .clock(120, 1)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    fake.wait_until("two plies", GAME, |v| {
        v.game(&id).is_some_and(|g| g.moves.len() >= 2)
    })
    .await
    .unwrap();
    let children = engine_children(bot.pid(), &engine);
    assert_eq!(children.len(), 1, "{children:?}");
    bot.kill().await;
    let orphan = children[0];
    for _ in 0..100 {
        if !alive(orphan) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(orphan), "the engine outlived kaissa");
    let log = bot.log();
    check_log(&log, &fake.token());
    assert!(
        log.contains("restarting the engine (restart 1 of"),
        "the engine was restarted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misconfigured_engine_declines_its_variants_and_nothing_else() {
    let fake = FakeLichess::start().await;
    let mut bot = Bot::configured(&fake, |dir| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 3\n\
             [challenge]\nmax_games_per_opponent = 100\n\
             variants = [\"standard\", \"crazyhouse\"]\n\
             [bot]\npgn_dir = \"{}\"\n\
             [engines.fairy]\ncommand = \"/nonexistent/fairy-stockfish\"\n\
             variants = [\"crazyhouse\"]\n",
            fake.url(),
            dir.join("pgn").display(),
        )
    });
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    let crazy = fake.send_challenge(
        ChallengeSpec::default()
            .variant_key("crazyhouse")
            .clock(60, 1)
            .challenger_color(Side::Black),
    );
    fake.wait_until("the crazyhouse challenge declined", WAIT, |v| {
        v.challenge(&crazy)
            .is_some_and(|c| c.decline_reason.as_deref() == Some("variant"))
    })
    .await
    .unwrap();
    let standard = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 1)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
    );
    let game = fake.wait_game_over(&standard, GAME).await.unwrap();
    assert!(game.illegal_moves.is_empty(), "{game:?}");
    assert_ne!(game.status, "aborted", "{game:?}");
    let log = bot.stop().await;
    check_log(&log, &fake.token());
    assert!(log.contains("external engine unusable"), "{log}");
    assert!(
        log.contains("/nonexistent/fairy-stockfish"),
        "the path is named"
    );
    assert!(
        log.contains("no engine can play it"),
        "the decline is explained"
    );
}

/// One search thread for an external engine thinking long (a 30-minute
/// crazyhouse game) and a bullet game of the built-in engine: the external
/// engine's search is cut for the bullet game like a built-in one, and
/// both games go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_engine_shares_the_threads_by_the_same_rules() {
    let Some(engine) = support::engines::fairy_stockfish() else {
        eprintln!("skipped: no Fairy-Stockfish (scripts/build-fairy-stockfish.sh)");
        return;
    };
    let fake = FakeLichess::start().await;
    let bot = start(
        &fake,
        &engine,
        "[engine]\nthreads = 1\nmax_depth = 0\nponder = false\n\
         [bot]\nconcurrency = 2\noffer_draw = false\nresign_enabled = false\n\
         [engines.fairy]\nmax_depth = 0",
    )
    .await;
    let seen = bullet_beside_a_long_search(
        &fake,
        bot,
        ChallengeSpec::default()
            .variant_key("crazyhouse")
            .clock(1800, 0)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
        ChallengeSpec::default()
            .clock(60, 0)
            .challenger_color(Side::Black)
            .autoplay(Some(quick_opponent())),
        8,
    )
    .await;
    seen.assert_served();
    let log = &seen.log;
    assert!(log.contains(&format!("cut={}", seen.slow)), "{log}");
}
