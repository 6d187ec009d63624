//! The external engine driver (`kaissa::bot::external`) against real
//! engines (Stockfish, Fairy-Stockfish) and against small `sh` scripts
//! that misbehave on purpose: hang, crash, write garbage, ignore `quit`.
//!
//! The real engines are `/usr/games/stockfish` and
//! `/usr/games/fairy-stockfish` (Debian's packages), or the paths in
//! `KAISSA_STOCKFISH` and `KAISSA_FAIRY_STOCKFISH`. A missing one skips its
//! tests with a note, unless `KAISSA_REQUIRE_ENGINES` is set (CI).

use std::path::{Path, PathBuf};
use std::time::Duration;

use kaissa::bot::external::{
    EngineSpec, Event, ExternalEngine, ExternalError, Go, Info, MAX_RESTARTS, STOP_DEADLINE, Score,
    SearchId, probe, stop_grace,
};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::variant::Crazyhouse;
use shakmaty::{CastlingMode, Chess, Position};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, timeout_at};

fn engine(var: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var(var).unwrap_or_else(|_| default.to_string());
    if Path::new(&path).exists() {
        return Some(path.into());
    }
    assert!(
        std::env::var_os("KAISSA_REQUIRE_ENGINES").is_none(),
        "{path} missing (apt-get install stockfish fairy-stockfish)"
    );
    eprintln!("note: no {path}; test skipped");
    None
}

fn stockfish() -> Option<EngineSpec> {
    engine("KAISSA_STOCKFISH", "/usr/games/stockfish").map(|p| spec("sf", p, &[]))
}

fn fairy() -> Option<EngineSpec> {
    engine("KAISSA_FAIRY_STOCKFISH", "/usr/games/fairy-stockfish").map(|p| spec("fairy", p, &[]))
}

fn spec(name: &str, command: impl Into<PathBuf>, args: &[&str]) -> EngineSpec {
    EngineSpec {
        name: name.to_string(),
        command: command.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        working_dir: None,
        options: vec![
            ("Threads".to_string(), "1".to_string()),
            ("Hash".to_string(), "16".to_string()),
        ],
        ponder: false,
    }
}

/// The Info events of search `id` and its final event, within `within`.
async fn outcome(
    rx: &mut UnboundedReceiver<Event>,
    id: SearchId,
    within: Duration,
) -> (Vec<Info>, Event) {
    let deadline = Instant::now() + within;
    let mut infos = Vec::new();
    loop {
        let event = timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("search {id}: no bestmove within {within:?}"))
            .expect("the driver ended");
        match event {
            Event::Info { id: i, info } if i == id => infos.push(info),
            Event::BestMove { id: i, .. } | Event::Failed { id: i, .. } if i == id => {
                return (infos, event);
            }
            _ => {}
        }
    }
}

fn best(event: &Event) -> &str {
    match event {
        Event::BestMove { best, .. } => best,
        other => panic!("expected a move, got {other:?}"),
    }
}

fn failure(event: &Event) -> &str {
    match event {
        Event::Failed { error, .. } => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Whether `reply` is a legal move after `moves` from `fen` (or the start).
fn legal<P: Position + Default + shakmaty::FromSetup>(
    fen: Option<&str>,
    moves: &[&str],
    reply: &str,
) -> bool {
    let mut pos: P = match fen {
        Some(fen) => Fen::from_ascii(fen.as_bytes())
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap(),
        None => P::default(),
    };
    for m in moves {
        let m = m.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(m);
    }
    reply
        .parse::<UciMove>()
        .ok()
        .and_then(|m| m.to_move(&pos).ok())
        .is_some()
}

fn alive(pid: u32) -> bool {
    // A zombie still has its /proc entry: gone means killed and reaped.
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `done` holds within `within` (looked at every 20 ms).
async fn holds_within(within: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

async fn gone_within(pid: u32, within: Duration) -> bool {
    holds_within(within, || !alive(pid)).await
}

fn ms(n: u64) -> Option<Duration> {
    Some(Duration::from_millis(n))
}

#[tokio::test]
async fn stockfish_probe() {
    let Some(spec) = stockfish() else { return };
    let id = probe(&spec).await.unwrap();
    assert!(id.name.starts_with("Stockfish"), "{id:?}");
    assert!(id.chess960);
    assert!(id.variants.is_empty());
    assert!(
        id.has_option("Hash") && id.has_option("Skill Level"),
        "{id:?}"
    );
    assert!(id.author.is_some());
}

#[tokio::test]
async fn stockfish_movetime_and_clocks() {
    let Some(spec) = stockfish() else { return };
    let (sf, mut rx) = ExternalEngine::start(spec, None, false, "g1")
        .await
        .unwrap();
    assert!(sf.id().name.starts_with("Stockfish"));
    let pid = sf.pid().unwrap();
    assert!(alive(pid));

    let started = Instant::now();
    let id = sf.go(Go {
        movetime: ms(100),
        deadline: ms(1100),
        ..Go::default()
    });
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(legal::<Chess>(None, &[], best(&end)), "{end:?}");
    assert!(
        infos
            .iter()
            .any(|i| i.depth > 0 && i.score.is_some() && !i.pv.is_empty())
    );

    let moves = ["e2e4", "e7e5", "g1f3"];
    let id2 = sf.go(Go {
        moves: moves.iter().map(|m| m.to_string()).collect(),
        wtime: ms(2000),
        btime: ms(1500),
        winc: ms(100),
        binc: ms(100),
        deadline: ms(2500),
        ..Go::default()
    });
    assert!(id2 > id);
    let (_, end) = outcome(&mut rx, id2, Duration::from_secs(5)).await;
    assert!(legal::<Chess>(None, &moves, best(&end)), "{end:?}");

    // From a FEN: the only legal moves are the king's.
    let fen = "7k/8/8/8/8/8/8/K6q w - - 0 1";
    let id3 = sf.go(Go {
        fen: Some(fen.to_string()),
        depth: Some(4),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id3, Duration::from_secs(5)).await;
    assert!(legal::<Chess>(Some(fen), &[], best(&end)), "{end:?}");

    assert_eq!(sf.restarts(), 0);
    assert_eq!(sf.pid(), Some(pid));
    let quitting = Instant::now();
    sf.quit().await;
    assert!(
        quitting.elapsed() < Duration::from_secs(1),
        "Stockfish obeys quit"
    );
    assert!(!alive(pid));
}

#[tokio::test]
async fn stockfish_stop_supersede_deadline_ponder() {
    let Some(mut spec) = stockfish() else { return };
    spec.ponder = true;
    let (sf, mut rx) = ExternalEngine::start(spec, Some("chess".into()), false, "g2")
        .await
        .unwrap();

    // An infinite search, stopped.
    let id = sf.go(Go::default());
    tokio::time::sleep(Duration::from_millis(200)).await;
    sf.stop();
    let (_, end) = outcome(&mut rx, id, STOP_DEADLINE).await;
    assert!(legal::<Chess>(None, &[], best(&end)));

    // A go while a search runs: the first still gets its own bestmove.
    let first = sf.go(Go::default());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = sf.go(Go {
        moves: vec!["d2d4".into()],
        movetime: ms(50),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, first, Duration::from_secs(3)).await;
    assert!(legal::<Chess>(None, &[], best(&end)));
    let (_, end) = outcome(&mut rx, second, Duration::from_secs(3)).await;
    assert!(legal::<Chess>(None, &["d2d4"], best(&end)));

    // An infinite search with a deadline: the driver stops it there.
    let started = Instant::now();
    let id = sf.go(Go {
        deadline: ms(300),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert!(legal::<Chess>(None, &[], best(&end)));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );

    // Ponder on 1. e4 e5, then the opponent plays e5.
    let moves: Vec<String> = ["e2e4", "e7e5"].iter().map(|m| m.to_string()).collect();
    let id = sf.go(Go {
        moves: moves.clone(),
        wtime: ms(1000),
        btime: ms(1000),
        ponder: true,
        deadline: ms(1500),
        ..Go::default()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    sf.ponderhit();
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(4)).await;
    assert!(legal::<Chess>(None, &["e2e4", "e7e5"], best(&end)));
    assert_eq!(sf.restarts(), 0);
    sf.quit().await;
}

#[tokio::test]
async fn ponder_needs_the_spec() {
    let Some(spec) = stockfish() else { return };
    let (sf, mut rx) = ExternalEngine::start(spec, None, false, "g3")
        .await
        .unwrap();
    let id = sf.go(Go {
        ponder: true,
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(1)).await;
    assert!(failure(&end).contains("ponder = true"), "{end:?}");
    // A move that would break the protocol never reaches the engine.
    let id = sf.go(Go {
        moves: vec!["e2e4\nquit".into()],
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(1)).await;
    assert!(failure(&end).contains("bad move"), "{end:?}");
    sf.quit().await;
}

#[tokio::test]
async fn unknown_variants_are_refused() {
    let cases = [(stockfish(), "crazyhouse"), (fairy(), "nonesuch")];
    for (spec, variant) in cases {
        let Some(spec) = spec else { continue };
        let name = spec.name.clone();
        let err = ExternalEngine::start(spec, Some(variant.into()), false, "g4")
            .await
            .expect_err("refused");
        assert!(
            matches!(&err, ExternalError::UnknownVariant { engine, variant: v, .. } if *engine == name && v == variant),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&name) && message.contains(variant),
            "{message}"
        );
    }
}

#[tokio::test]
async fn fairy_probe_lists_lichess_variants() {
    let Some(spec) = fairy() else { return };
    let id = probe(&spec).await.unwrap();
    assert!(id.name.starts_with("Fairy-Stockfish"), "{id:?}");
    assert!(id.chess960);
    for v in [
        "crazyhouse",
        "antichess",
        "horde",
        "kingofthehill",
        "racingkings",
        "3check",
    ] {
        assert!(
            id.variants.iter().any(|x| x == v),
            "{v} not in {:?}",
            id.variants
        );
    }
}

#[tokio::test]
async fn fairy_plays_crazyhouse() {
    let Some(spec) = fairy() else { return };
    let (fairy, mut rx) = ExternalEngine::start(spec, Some("crazyhouse".into()), false, "zh")
        .await
        .unwrap();
    // Both sides hold a captured pawn.
    let moves = ["e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5"];
    let id = fairy.go(Go {
        moves: moves.iter().map(|m| m.to_string()).collect(),
        movetime: ms(200),
        deadline: ms(1200),
        ..Go::default()
    });
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(5)).await;
    assert!(legal::<Crazyhouse>(None, &moves, best(&end)), "{end:?}");
    assert!(!infos.is_empty());

    // A FEN with pockets, where a drop mates: Q@f7 (the f7 pawn is gone).
    let fen = "r1bqkbnr/pppp2pp/2n5/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR[Qp] w KQkq - 0 5";
    let id = fairy.go(Go {
        fen: Some(fen.to_string()),
        depth: Some(6),
        ..Go::default()
    });
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(5)).await;
    let mv = best(&end);
    assert!(legal::<Crazyhouse>(Some(fen), &[], mv), "{end:?}");
    assert_eq!(mv, "Q@f7", "{infos:?}");
    assert_eq!(infos.last().and_then(|i| i.score), Some(Score::Mate(1)));
    fairy.quit().await;
}

#[tokio::test]
async fn a_missing_executable_is_named() {
    let spec = spec("ghost", "/nonexistent/engine-binary", &[]);
    let err = probe(&spec).await.unwrap_err();
    assert!(matches!(err, ExternalError::Spawn { .. }), "{err:?}");
    assert!(
        err.to_string().contains("/nonexistent/engine-binary"),
        "{err}"
    );
    assert!(err.to_string().contains("ghost"), "{err}");
    let err = ExternalEngine::start(spec, None, false, "g5")
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ExternalError::Spawn { .. }), "{err:?}");
    assert!(
        err.to_string().contains("/nonexistent/engine-binary"),
        "{err}"
    );
}

/// An engine written in `sh`: it answers `uci` and `isready`, runs
/// `on_go` on `go`, `on_stop` on `stop` and `on_quit` on `quit`. `$n` is how many times it
/// was started (a counter file in `dir`), `$$` its pid. The script is run
/// by `/bin/sh` rather than executed, so writing it cannot race with
/// another test's fork (ETXTBSY).
fn scripted(dir: &Path, uci_extra: &str, on_go: &str, on_stop: &str, on_quit: &str) -> EngineSpec {
    let script = dir.join("engine.sh");
    let count = dir.join("count");
    let body = format!(
        r#"n=0
[ -f '{count}' ] && read -r n < '{count}'
n=$((n+1))
echo "$n" > '{count}'
while IFS= read -r line; do
  case "$line" in
    uci) echo "id name Scripted $n"; {uci_extra}
         echo "option name Hash type spin default 16 min 1 max 64"
         echo "option name Threads type spin default 1 min 1 max 4"
         echo uciok ;;
    isready) echo readyok ;;
    go*) {on_go} ;;
    stop) {on_stop} ;;
    quit) {on_quit} ;;
    *) echo "$line" >> '{input}' ;;
  esac
done
"#,
        count = count.display(),
        input = dir.join("input").display(),
    );
    std::fs::write(&script, body).unwrap();
    spec("scripted", "/bin/sh", &[script.to_str().unwrap()])
}

#[tokio::test]
async fn a_hung_engine_is_killed_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    // The first process never answers `go` nor `stop`; the second does.
    let spec = scripted(
        dir.path(),
        "",
        r#"if [ "$n" -ge 2 ]; then echo "bestmove e2e4"; fi"#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "hang")
        .await
        .unwrap();
    let pid = engine.pid().unwrap();
    let started = Instant::now();
    let id = engine.go(Go {
        movetime: ms(100),
        deadline: ms(300),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(5)).await;
    let took = started.elapsed();
    assert!(failure(&end).contains("stop"), "{end:?}");
    // Killed a grace after the deadline: a quarter of it, at least 100 ms.
    let grace = stop_grace(ms(300));
    assert_eq!(grace, Duration::from_millis(100));
    assert!(
        took >= Duration::from_millis(300) + grace && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert!(!alive(pid), "the hung process is killed and reaped");
    assert_eq!(engine.pid(), None);
    assert_eq!(engine.restarts(), 0);

    let id = engine.go(Go {
        movetime: ms(100),
        deadline: ms(300),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(5)).await;
    assert_eq!(best(&end), "e2e4");
    assert_eq!(engine.restarts(), 1);
    let second = engine.pid().unwrap();
    assert_ne!(second, pid);
    engine.quit().await;
    assert!(!alive(second));
}

/// UCI separates tokens by any whitespace: a tab after `bestmove` was
/// not taken for one, and the search waited for an answer it had had.
#[tokio::test]
async fn a_bestmove_after_a_tab_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        "",
        r#"printf 'bestmove\te2e4\tponder\te7e5\n'"#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "tab")
        .await
        .unwrap();
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    engine.quit().await;
}

#[tokio::test]
async fn a_crashed_engine_is_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        "",
        r#"if [ "$n" -lt 2 ]; then exit 3; fi
           echo "info depth 1 score cp 7 nodes 5 pv e2e4"; echo "bestmove e2e4""#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "crash")
        .await
        .unwrap();
    let pid = engine.pid().unwrap();
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    let error = failure(&end);
    assert!(error.contains("exited") && error.contains('3'), "{error}");
    assert!(!alive(pid));

    let id = engine.go(Go::default());
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    assert_eq!(
        infos,
        [Info {
            depth: 1,
            score: Some(Score::Cp(7)),
            nodes: 5,
            pv: vec!["e2e4".into()]
        }]
    );
    assert_eq!(engine.restarts(), 1);
    engine.quit().await;
}

#[tokio::test]
async fn a_crash_loop_ends_in_failures() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "", "exit 1", ":", "exit 0");
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "loop")
        .await
        .unwrap();
    for _ in 0..=MAX_RESTARTS {
        let id = engine.go(Go::default());
        let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
        assert!(failure(&end).contains("exited"), "{end:?}");
    }
    assert_eq!(engine.restarts(), MAX_RESTARTS);
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(1)).await;
    assert!(failure(&end).contains("not restarted"), "{end:?}");
    assert_eq!(engine.restarts(), MAX_RESTARTS);
    assert_eq!(engine.pid(), None);
    engine.quit().await;
}

#[tokio::test]
async fn garbage_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let junk = r#"printf 'garbage \377\376\n'; echo "option name"; echo id; echo "bestmovex"
         head -c 200000 /dev/zero | tr '\0' x; echo"#;
    let on_go = r#"printf 'info \377\376 depth\n'; echo "info depth"; echo "info score cp"
           echo "info depth x nodes y"; echo "info string hello"; echo "bestmovex"; echo readyok
           head -c 200000 /dev/zero | tr '\0' 7; echo
           echo "info depth 8 multipv 2 score cp 0 pv d2d4"
           echo "info depth 7 seldepth 9 score cp 31 lowerbound nodes 1234 nps 5 pv e2e4 e7e5"
           echo "bestmove e2e4 ponder e7e5""#;
    let spec = scripted(dir.path(), junk, on_go, ":", "exit 0");
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "junk")
        .await
        .unwrap();
    assert_eq!(engine.id().name, "Scripted 1");
    assert_eq!(engine.id().options, ["Hash", "Threads"]);
    let id = engine.go(Go::default());
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(
        end,
        Event::BestMove {
            id,
            best: "e2e4".into(),
            ponder: Some("e7e5".into())
        }
    );
    assert_eq!(
        infos,
        [Info {
            depth: 7,
            score: Some(Score::Cp(31)),
            nodes: 1234,
            pv: vec!["e2e4".into(), "e7e5".into()]
        }]
    );
    assert_eq!(engine.restarts(), 0);
    engine.quit().await;
}

#[tokio::test]
async fn a_stray_bestmove_after_stop_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // `go movetime` answers at once, `go` waits for `stop`, and `stop` is
    // answered twice: the second `bestmove` must not become the answer to
    // the next search.
    let spec = scripted(
        dir.path(),
        "",
        r#"case "$line" in *movetime*) echo "bestmove e2e4" ;; esac"#,
        r#"echo "bestmove a7a6"; echo "bestmove h7h6""#,
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "stray")
        .await
        .unwrap();
    let first = engine.go(Go::default());
    let second = engine.go(Go {
        movetime: ms(10),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, first, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "a7a6");
    let (_, end) = outcome(&mut rx, second, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    // And after an explicit stop.
    let third = engine.go(Go::default());
    engine.stop();
    let (_, end) = outcome(&mut rx, third, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "a7a6");
    let fourth = engine.go(Go {
        movetime: ms(10),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, fourth, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    assert_eq!(engine.restarts(), 0);
    engine.quit().await;
}

#[tokio::test]
async fn bestmove_none_fails_the_search() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "", r#"echo "bestmove (none)""#, ":", "exit 0");
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "none")
        .await
        .unwrap();
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert!(failure(&end).contains("(none)"), "{end:?}");
    assert_eq!(engine.restarts(), 0);
    engine.quit().await;
}

#[tokio::test]
async fn an_engine_that_ignores_quit_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        "trap '' TERM INT HUP",
        ":",
        ":",
        "exec sleep 600",
    );
    let (engine, _rx) = ExternalEngine::start(spec.clone(), None, false, "deaf")
        .await
        .unwrap();
    let pid = engine.pid().unwrap();
    let started = Instant::now();
    engine.quit().await;
    assert!(started.elapsed() < Duration::from_millis(2500));
    assert!(!alive(pid), "killed and reaped");

    // Dropping the handle does the same, in the background.
    let (engine, _rx) = ExternalEngine::start(spec, None, false, "deaf2")
        .await
        .unwrap();
    let pid = engine.pid().unwrap();
    drop(engine);
    assert!(gone_within(pid, Duration::from_secs(3)).await);
}

/// A wrapper that starts a helper of its own and exits on `quit` (or
/// dies) before it: the helper goes with it, not left running.
#[tokio::test]
async fn what_a_wrapper_leaves_behind_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let helpers = dir.path().join("helpers");
    let spec = scripted(
        dir.path(),
        &format!(
            "sleep 600 </dev/null >/dev/null 2>&1 & echo $! >> '{}'",
            helpers.display()
        ),
        r#"if [ "$n" -lt 2 ]; then exit 3; fi; echo "bestmove e2e4""#,
        ":",
        "exit 0",
    );
    let helper = |i: usize| -> u32 {
        let text = std::fs::read_to_string(&helpers).unwrap();
        text.lines().nth(i).unwrap().parse().unwrap()
    };
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "wrap")
        .await
        .unwrap();
    let first = helper(0);
    assert!(running(first));
    // The first process dies at `go`: its helper dies too.
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert!(failure(&end).contains("exited"), "{end:?}");
    assert!(stopped_within(first, Duration::from_secs(3)).await);
    // The second exits on `quit`: so does its helper.
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    let second = helper(1);
    assert!(running(second));
    engine.quit().await;
    assert!(stopped_within(second, Duration::from_secs(3)).await);
}

/// Whether `pid` runs (neither gone nor a zombie: an orphan's zombie
/// waits for whoever adopted it).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

async fn stopped_within(pid: u32, within: Duration) -> bool {
    holds_within(within, || !running(pid)).await
}

#[tokio::test]
async fn handshake_failures() {
    let dir = tempfile::tempdir().unwrap();
    // Exits at once.
    let exits = dir.path().join("exits.sh");
    std::fs::write(&exits, "echo 'not an engine' >&2; exit 2\n").unwrap();
    let err = probe(&spec("quitter", "/bin/sh", &[exits.to_str().unwrap()]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExternalError::Exited { engine, .. } if engine == "quitter"),
        "{err:?}"
    );
    // Never says uciok (and keeps reading, so it must be killed).
    let mute = dir.path().join("mute.sh");
    std::fs::write(&mute, "while read -r line; do :; done\n").unwrap();
    let started = Instant::now();
    let err = ExternalEngine::start(
        spec("mute", "/bin/sh", &[mute.to_str().unwrap()]),
        None,
        false,
        "g6",
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(&err, ExternalError::Timeout { engine, what: "uciok", .. } if engine == "mute"),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(12));
}

/// The grace after `stop` fits in the deadline's clock: a quarter of the
/// deadline, between 100 ms and two seconds.
#[test]
fn the_stop_grace_scales_with_the_deadline() {
    assert_eq!(stop_grace(None), STOP_DEADLINE);
    assert_eq!(stop_grace(ms(60_000)), STOP_DEADLINE);
    assert_eq!(stop_grace(ms(4_000)), Duration::from_secs(1));
    assert_eq!(stop_grace(ms(100)), Duration::from_millis(100));
}

/// A restart is the search's time: the deadline counts from `go`, the
/// clocks the engine is told are as much shorter, and a restart that
/// outlasts the deadline fails the search then, not when it is done.
#[tokio::test]
async fn a_restart_counts_against_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let told = dir.path().join("told");
    let die = dir.path().join("die");
    // The first process dies on `go`, and so does any while `die` exists;
    // the second takes 600 ms to answer `uci` and writes the `go` it was
    // sent; the third takes 2 s.
    let spec = scripted(
        dir.path(),
        r#"if [ "$n" -eq 2 ]; then sleep 0.6; fi; if [ "$n" -eq 3 ]; then sleep 2; fi"#,
        &format!(
            r#"if [ "$n" -eq 1 ] || [ -f '{die}' ]; then rm -f '{die}'; exit 3; fi
               echo "$line" >> '{told}'; echo "bestmove e2e4""#,
            die = die.display(),
            told = told.display()
        ),
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "restart")
        .await
        .unwrap();
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert!(failure(&end).contains("exited"), "{end:?}");

    let started = Instant::now();
    let id = engine.go(Go {
        wtime: ms(10_000),
        btime: ms(10_000),
        deadline: ms(5_000),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "e2e4");
    assert!(started.elapsed() >= Duration::from_millis(600));
    let line = std::fs::read_to_string(&told).unwrap();
    let wtime: u64 = line
        .split_whitespace()
        .skip_while(|w| *w != "wtime")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        wtime <= 9_400,
        "White, to move, is told its clock less the restart: {line}"
    );
    assert!(line.contains("btime 10000"), "{line}");

    // Dead again; the next restart is slower than the deadline.
    std::fs::write(&die, "").unwrap();
    let id = engine.go(Go::default());
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert!(failure(&end).contains("exited"), "{end:?}");
    let started = Instant::now();
    let id = engine.go(Go {
        wtime: ms(1_000),
        deadline: ms(300),
        ..Go::default()
    });
    let (_, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    let took = started.elapsed();
    assert!(failure(&end).contains("deadline"), "{end:?}");
    assert!(
        took < Duration::from_millis(550),
        "failed at its deadline: {took:?}"
    );
    engine.quit().await;
}

/// A game set up from a position the Chess960 way writes castling as
/// king-takes-rook: the engine, started for chess, is switched to
/// Chess960 before it reads such a move.
#[tokio::test]
async fn a_chess960_search_switches_the_engine_to_chess960() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        r#"echo "option name UCI_Chess960 type check default false""#,
        r#"echo "bestmove d1c1""#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "960")
        .await
        .unwrap();
    let input = dir.path().join("input");
    let id = engine.go(Go::default());
    outcome(&mut rx, id, Duration::from_secs(3)).await;
    let before = std::fs::read_to_string(&input).unwrap();
    assert!(
        before.contains("setoption name UCI_Chess960 value false"),
        "{before}"
    );
    assert!(!before.contains("value true"), "{before}");
    let id = engine.go(Go {
        fen: Some("1r1k3r/8/8/8/8/8/8/1R1K3R w HBhb - 0 1".into()),
        moves: vec!["d1h1".into()],
        chess960: true,
        ..Go::default()
    });
    outcome(&mut rx, id, Duration::from_secs(3)).await;
    let after = std::fs::read_to_string(&input).unwrap();
    let switched = after.find("setoption name UCI_Chess960 value true");
    let position = after.rfind("position fen");
    assert!(
        switched.is_some() && switched < position,
        "switched before the position: {after}"
    );
    engine.quit().await;
}

/// An engine that writes thousands of `info` lines a second sends a few
/// events, and the last line before `bestmove` is among them.
#[tokio::test]
async fn a_flood_of_info_lines_is_thinned() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        "",
        r#"i=0; while [ $i -lt 3000 ]; do echo "info depth 1 nodes $i pv e2e4"; i=$((i+1)); done
           echo "info depth 9 score cp 20 nodes 99999 pv d2d4"; echo "bestmove d2d4""#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "flood")
        .await
        .unwrap();
    let id = engine.go(Go::default());
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(10)).await;
    assert_eq!(best(&end), "d2d4");
    assert!(infos.len() < 300, "{} info events", infos.len());
    assert_eq!(infos.last().map(|i| i.depth), Some(9), "{infos:?}");
    engine.quit().await;
}

/// Lines without a score or a line (Stockfish's `currmove` line after a
/// few seconds, a `nodes` line) keep what the search said last: the move
/// a hung engine is relieved by, and the score the rules read.
#[tokio::test]
async fn lines_without_a_score_or_a_line_keep_the_last_ones() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(
        dir.path(),
        "",
        r#"echo "info depth 10 seldepth 14 score cp 40 nodes 500 pv g1f3 d7d5"
           echo "info depth 11 currmove e2e4 currmovenumber 1"
           echo "info nodes 900 nps 100 hashfull 3"; echo "bestmove g1f3""#,
        ":",
        "exit 0",
    );
    let (engine, mut rx) = ExternalEngine::start(spec, None, false, "partial")
        .await
        .unwrap();
    let id = engine.go(Go::default());
    let (infos, end) = outcome(&mut rx, id, Duration::from_secs(3)).await;
    assert_eq!(best(&end), "g1f3");
    assert_eq!(
        infos.last(),
        Some(&Info {
            depth: 11,
            score: Some(Score::Cp(40)),
            nodes: 900,
            pv: vec!["g1f3".into(), "d7d5".into()]
        }),
        "{infos:?}"
    );
    engine.quit().await;
}
