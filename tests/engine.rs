//! The `Engine` handle as the bot daemon uses it: go/stop/ponderhit,
//! one `BestMove` per search with its id, legal moves even when stopped
//! at once, history-aware draws, and a clean drop.

use kaissa::chess::Position;
use kaissa::engine::{BestMove, Engine, EngineOptions, Event, GoRequest, Limits, SearchId};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

fn wait_best(rx: &mut UnboundedReceiver<Event>, want: SearchId) -> (BestMove, usize) {
    let (best, infos, _) = wait_best_nodes(rx, want);
    (best, infos)
}

/// [`wait_best`], with the node count of the search's last `info`.
fn wait_best_nodes(rx: &mut UnboundedReceiver<Event>, want: SearchId) -> (BestMove, usize, u64) {
    let mut infos = 0;
    let mut nodes = 0;
    loop {
        match rx.blocking_recv().expect("engine alive") {
            Event::Info { id, info } if id == want => {
                infos += 1;
                nodes = info.nodes;
            }
            Event::BestMove { id, best } if id == want => return (best, infos, nodes),
            _ => {}
        }
    }
}

#[test]
fn go_stop_and_ponderhit() {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions::default());
    let pos = Position::startpos();

    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(5)));
    let (best, infos) = wait_best(&mut rx, id);
    assert!(pos.is_legal(best.mv.expect("a move")));
    assert!(infos >= 5);

    // Stopped before it could finish anything: still a legal move.
    let limits = Limits {
        infinite: true,
        ..Limits::default()
    };
    let id = engine.go(GoRequest::new(pos.clone(), vec![], limits.clone()));
    engine.stop();
    let (best, _) = wait_best(&mut rx, id);
    assert!(pos.is_legal(best.mv.expect("a move")));

    // A new go supersedes a running one; both answer, in order.
    let first = engine.go(GoRequest::new(pos.clone(), vec![], limits));
    let second = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(3)));
    assert!(second > first);
    let (b1, _) = wait_best(&mut rx, first);
    let (b2, _) = wait_best(&mut rx, second);
    assert!(b1.mv.is_some() && b2.mv.is_some());

    // Pondering ignores the clock until ponderhit, then obeys it.
    let clock = Limits {
        wtime: Some(Duration::from_millis(3_000)),
        btime: Some(Duration::from_millis(3_000)),
        ..Limits::default()
    };
    let mut req = GoRequest::new(pos.clone(), vec![], clock);
    req.ponder = true;
    let id = engine.go(req);
    std::thread::sleep(Duration::from_millis(700));
    // Still thinking: no answer yet.
    while let Ok(e) = rx.try_recv() {
        assert!(
            !matches!(e, Event::BestMove { .. }),
            "answered while pondering"
        );
    }
    let hit = Instant::now();
    engine.ponderhit();
    let (best, _) = wait_best(&mut rx, id);
    assert!(best.mv.is_some());
    assert!(hit.elapsed() < Duration::from_secs(2));

    // No legal move: an answer without a move.
    let mated = Position::from_fen("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1").expect("valid");
    let id = engine.go(GoRequest::new(mated, vec![], Limits::depth(4)));
    assert_eq!(
        wait_best(&mut rx, id).0,
        BestMove {
            mv: None,
            ponder: None
        }
    );

    engine.set_hash(4);
    engine.set_multipv(3);
    engine.new_game();
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(4)));
    let (_, infos) = wait_best(&mut rx, id);
    assert_eq!(infos, 12, "3 lines x 4 depths");

    // Dropping the handle while it searches stops and joins the thread.
    engine.go(GoRequest::new(
        pos,
        vec![],
        Limits {
            infinite: true,
            ..Limits::default()
        },
    ));
    drop(engine);
}

#[test]
fn hash_file_through_the_handle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("game.hash");
    let (mut engine, mut rx) = Engine::spawn(EngineOptions {
        hash_mb: 2,
        ..EngineOptions::default()
    });
    // Nothing saved yet: reported, not trusted.
    let err = engine
        .load_hash(&path)
        .blocking_recv()
        .expect("answer")
        .expect_err("missing");
    assert!(err.to_string().contains("not found"), "{err}");

    let pos = Position::startpos();
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(8)));
    let (first, _, fresh_nodes) = wait_best_nodes(&mut rx, id);
    assert!(pos.is_legal(first.mv.expect("a move")));
    let info = engine
        .save_hash(&path)
        .blocking_recv()
        .expect("answer")
        .expect("saved");
    assert_eq!(info.bytes, 2 << 20);
    assert!(info.used > 0);
    drop(engine);

    // A restarted engine loads it and knows the position: the same
    // depth-8 search takes fewer nodes than it took on an empty table
    // (one thread: the count is exact). Its move may differ, since the
    // table's deeper entries change what it sees.
    let (mut engine, mut rx) = Engine::spawn(EngineOptions::default());
    let loaded = engine
        .load_hash(&path)
        .blocking_recv()
        .expect("answer")
        .expect("loaded");
    assert_eq!(loaded, info);
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(8)));
    let (again, _, loaded_nodes) = wait_best_nodes(&mut rx, id);
    assert!(pos.is_legal(again.mv.expect("a move")));
    assert!(
        loaded_nodes < fresh_nodes,
        "{loaded_nodes} nodes with the loaded table, {fresh_nodes} without"
    );

    // A damaged file is refused and the table kept.
    let mut bytes = std::fs::read(&path).expect("read");
    let n = bytes.len();
    bytes[n / 2] ^= 0xFF;
    std::fs::write(&path, &bytes).expect("write");
    let err = engine
        .load_hash(&path)
        .blocking_recv()
        .expect("answer")
        .expect_err("corrupted");
    assert!(err.to_string().contains("checksum"), "{err}");
    std::fs::write(&path, &bytes[..n - 100]).expect("write");
    let err = engine
        .load_hash(&path)
        .blocking_recv()
        .expect("answer")
        .expect_err("truncated");
    assert!(err.to_string().contains("truncated"), "{err}");
    // The table still knows the position.
    let id = engine.go(GoRequest::new(pos, vec![], Limits::depth(8)));
    let (_, _, kept_nodes) = wait_best_nodes(&mut rx, id);
    assert!(
        kept_nodes < fresh_nodes,
        "{kept_nodes} nodes with the kept table, {fresh_nodes} without"
    );
}

/// Search threads of this process whose name starts with `prefix`.
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Polls the number of helper threads until it is `want` (or 5 s have
/// passed) and returns the last count; panics if it ever exceeds 2.
#[cfg(target_os = "linux")]
fn settle_helpers(want: usize) -> usize {
    let mut n = threads_named("kaissa-helper");
    for _ in 0..500 {
        assert!(n <= 2, "{n} helper threads for Threads=3");
        if n == want {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        n = threads_named("kaissa-helper");
    }
    n
}

#[test]
fn lazy_smp_threads() {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions {
        threads: 3,
        ..EngineOptions::default()
    });
    let pos =
        Position::from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
            .expect("valid");
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(9)));
    let (best, infos) = wait_best(&mut rx, id);
    assert!(pos.is_legal(best.mv.expect("a move")));
    assert_eq!(infos, 9, "only the main thread reports");

    let limits = Limits {
        infinite: true,
        ..Limits::default()
    };
    // The first search's helpers are gone (the OS may take a moment to
    // reap a thread whose work is done).
    #[cfg(target_os = "linux")]
    assert_eq!(settle_helpers(0), 0);
    let id = engine.go(GoRequest::new(pos.clone(), vec![], limits));
    // Two helpers besides the main search thread, never more.
    #[cfg(target_os = "linux")]
    assert_eq!(settle_helpers(2), 2);
    engine.stop();
    assert!(pos.is_legal(wait_best(&mut rx, id).0.mv.expect("a move")));
    // Helpers end with their search.
    #[cfg(target_os = "linux")]
    assert_eq!(settle_helpers(0), 0);

    engine.set_threads(1);
    let id = engine.go(GoRequest::new(pos.clone(), vec![], limits_infinite()));
    std::thread::sleep(Duration::from_millis(100));
    #[cfg(target_os = "linux")]
    assert_eq!(threads_named("kaissa-helper"), 0);
    engine.stop();
    wait_best(&mut rx, id);
}

fn limits_infinite() -> Limits {
    Limits {
        infinite: true,
        ..Limits::default()
    }
}
