//! The external UCI engine driver (`kaissa::bot::external`) against real
//! engines (Stockfish, Fairy-Stockfish) and against scripted ones that
//! hang, crash, print garbage or ignore `quit`: every failure ends in an
//! `Event::Failed`, a killed and reaped process, and a fresh process on
//! the next search.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kaissa::bot::external::{
    EngineSpec, Event, ExternalEngine, ExternalError, Go, SearchId, probe,
};
use tokio::sync::mpsc::UnboundedReceiver;

const STOCKFISH: &str = "/usr/games/stockfish";

fn spec(name: &str, command: &Path) -> EngineSpec {
    EngineSpec {
        name: name.to_owned(),
        command: command.to_owned(),
        args: Vec::new(),
        working_dir: None,
        options: vec![("Hash".to_owned(), "8".to_owned())],
        ponder: false,
    }
}

/// The events of search `id` up to its end: its last info and its move
/// (or the failure).
async fn answer(
    rx: &mut UnboundedReceiver<Event>,
    id: SearchId,
    within: Duration,
) -> (usize, Result<String, String>) {
    let mut infos = 0;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("an answer in time")
            .expect("the driver is alive");
        match event {
            Event::Info { id: i, .. } if i == id => infos += 1,
            Event::BestMove { id: i, best, .. } if i == id => return (infos, Ok(best)),
            Event::Failed { id: i, error } if i == id => return (infos, Err(error)),
            _ => {}
        }
    }
}

/// A shell-script engine in `dir`: `body` is the shell code of its main
/// loop over stdin lines (`$line`).
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) echo 'id name Scripted'; echo 'uciok' ;;\n    isready) echo 'readyok' ;;\n{body}\n  esac\ndone\n"
    );
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stockfish_is_probed_and_answers_with_clocks_and_move_times() {
    if !Path::new(STOCKFISH).exists() {
        eprintln!("note: no {STOCKFISH}: test skipped");
        return;
    }
    let id = probe(&spec("sf", Path::new(STOCKFISH))).await.unwrap();
    assert!(id.name.starts_with("Stockfish"), "{id:?}");
    assert!(id.chess960);
    let (mut engine, mut rx) =
        ExternalEngine::start(spec("sf", Path::new(STOCKFISH)), None, false, "test")
            .await
            .unwrap();
    let first = engine.go(Go {
        movetime: Some(Duration::from_millis(100)),
        ..Go::default()
    });
    let (infos, best) = answer(&mut rx, first, Duration::from_secs(10)).await;
    let best = best.unwrap();
    assert!(infos > 0);
    assert_eq!(best.len(), 4, "{best}");
    let second = engine.go(Go {
        moves: vec!["e2e4".into(), "e7e5".into()],
        wtime: Some(Duration::from_secs(3)),
        btime: Some(Duration::from_secs(3)),
        winc: Some(Duration::from_millis(100)),
        binc: Some(Duration::from_millis(100)),
        deadline: Some(Duration::from_secs(2)),
        ..Go::default()
    });
    let (_, best) = answer(&mut rx, second, Duration::from_secs(10)).await;
    assert!(best.is_ok(), "{best:?}");
    let pid = engine.pid();
    assert!(alive(pid));
    engine.quit().await;
    assert!(!alive(pid), "quit reaps the process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fairy_stockfish_plays_a_drop_and_refuses_a_variant_it_lacks() {
    let Some(fsf) = support::engines::fairy_stockfish() else {
        return;
    };
    let id = probe(&spec("fairy", &fsf)).await.unwrap();
    for v in [
        "crazyhouse",
        "antichess",
        "atomic",
        "horde",
        "kingofthehill",
        "racingkings",
        "3check",
    ] {
        assert!(id.variants.iter().any(|x| x == v), "{v} not in {id:?}");
    }
    let (mut engine, mut rx) = ExternalEngine::start(
        spec("fairy", &fsf),
        Some("crazyhouse".to_owned()),
        false,
        "test",
    )
    .await
    .unwrap();
    // White holds a pawn and a knight after the trades: any move will do,
    // but it must come.
    let search = engine.go(Go {
        moves: [
            "e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5", "g1f3", "g8f6",
        ]
        .iter()
        .map(|m| m.to_string())
        .collect(),
        movetime: Some(Duration::from_millis(100)),
        ..Go::default()
    });
    let (_, best) = answer(&mut rx, search, Duration::from_secs(10)).await;
    assert!(best.is_ok(), "{best:?}");
    engine.quit().await;

    let error = ExternalEngine::start(spec("fairy", &fsf), Some("shogi960".into()), false, "t")
        .await
        .err()
        .expect("an unknown variant is refused");
    assert!(
        matches!(error, ExternalError::UnknownVariant { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("fairy"), "{error}");
    assert!(error.to_string().contains("shogi960"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_engine_is_named_by_its_path() {
    let missing = Path::new("/nonexistent/engine");
    let error = probe(&spec("gone", missing)).await.unwrap_err();
    assert!(matches!(error, ExternalError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("/nonexistent/engine"), "{error}");
    assert!(
        ExternalEngine::start(spec("gone", missing), None, false, "t")
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_engine_is_stopped_killed_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    // Answers the handshake, then never answers `go` or `stop`.
    let hang = script(dir.path(), "hang.sh", "    go*) ;;\n    stop) ;;");
    let (mut engine, mut rx) = ExternalEngine::start(spec("hang", &hang), None, false, "t")
        .await
        .unwrap();
    let first_pid = engine.pid();
    let search = engine.go(Go {
        movetime: Some(Duration::from_millis(100)),
        deadline: Some(Duration::from_millis(300)),
        ..Go::default()
    });
    let started = std::time::Instant::now();
    let (_, result) = answer(&mut rx, search, Duration::from_secs(10)).await;
    assert!(result.is_err(), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    for _ in 0..40 {
        if !alive(first_pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(first_pid), "the hung engine was killed");
    // The next search starts a new process (which hangs too).
    let again = engine.go(Go {
        deadline: Some(Duration::from_millis(100)),
        ..Go::default()
    });
    let (_, result) = answer(&mut rx, again, Duration::from_secs(10)).await;
    assert!(result.is_err());
    assert_eq!(engine.restarts(), 1);
    engine.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_engine_fails_its_search_and_the_next_process_plays() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("crashed");
    // The first process exits on `go`; the next ones answer.
    let body = format!(
        "    go*) if [ -e {m} ]; then echo 'info depth 1 score cp 12 pv e2e4'; echo 'bestmove e2e4'; \
         else touch {m}; exit 3; fi ;;\n    stop) ;;\n    *) echo 'garbage that is not UCI' ;;",
        m = marker.display()
    );
    let crash = script(dir.path(), "crash.sh", &body);
    let (mut engine, mut rx) = ExternalEngine::start(spec("crash", &crash), None, false, "t")
        .await
        .unwrap();
    let search = engine.go(Go {
        movetime: Some(Duration::from_millis(50)),
        ..Go::default()
    });
    let (_, result) = answer(&mut rx, search, Duration::from_secs(10)).await;
    let error = result.unwrap_err();
    assert!(error.contains("exited"), "{error}");
    let search = engine.go(Go {
        movetime: Some(Duration::from_millis(50)),
        ..Go::default()
    });
    let (infos, result) = answer(&mut rx, search, Duration::from_secs(10)).await;
    assert_eq!(result, Ok("e2e4".to_owned()));
    assert_eq!(infos, 1);
    assert_eq!(engine.restarts(), 1);
    engine.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_ignores_quit_is_killed_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let stubborn = script(dir.path(), "stubborn.sh", "    quit) ;;");
    let (engine, _rx) = ExternalEngine::start(spec("stubborn", &stubborn), None, false, "t")
        .await
        .unwrap();
    let pid = engine.pid();
    assert!(alive(pid));
    let started = std::time::Instant::now();
    engine.quit().await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(!alive(pid), "killed and reaped");
}
