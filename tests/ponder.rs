//! Pondering through the `Engine` handle: a hit, a miss and a stop while
//! pondering each end with one legal `BestMove` for the right search, and
//! the clock of a ponder search only starts at the hit. (The clock
//! arithmetic itself is unit-tested in `timeman`; these tests use
//! orderings in their assertions, and one a bound of seconds on a search
//! that should end at once.)

use kaissa::chess::Position;
use kaissa::engine::{BestMove, Engine, EngineOptions, Event, GoRequest, Limits, SearchId};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

fn wait_best(rx: &mut UnboundedReceiver<Event>, want: SearchId) -> BestMove {
    loop {
        match rx.blocking_recv().expect("engine alive") {
            Event::BestMove { id, best } if id == want => return best,
            _ => {}
        }
    }
}

/// Our clock as a bot sends it: a short budget (about a tenth of a second
/// per move), so a search under this clock ends by itself.
fn clock() -> Limits {
    Limits {
        wtime: Some(Duration::from_millis(2_000)),
        btime: Some(Duration::from_millis(2_000)),
        winc: Some(Duration::ZERO),
        binc: Some(Duration::ZERO),
        move_overhead: Duration::from_millis(10),
        ..Limits::default()
    }
}

/// Our move, and the position after the expected reply.
fn after_expected_reply(
    engine: &mut Engine,
    rx: &mut UnboundedReceiver<Event>,
) -> (Position, Vec<u64>, Position) {
    let pos = Position::startpos();
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(6)));
    let best = wait_best(rx, id);
    let ours = best.mv.expect("a move");
    let reply = best.ponder.expect("a ponder move after depth 6");
    let mid = pos.play(ours);
    assert!(mid.is_legal(reply));
    let ponder_pos = mid.play(reply);
    (mid, vec![pos.key()], ponder_pos)
}

/// No `BestMove` for `id` has arrived yet.
fn no_answer_yet(rx: &mut UnboundedReceiver<Event>, id: SearchId) {
    while let Ok(e) = rx.try_recv() {
        if let Event::BestMove { id: got, .. } = e {
            assert_ne!(got, id, "answered while pondering");
        }
    }
}

#[test]
fn ponder_hit_answers_under_the_clock() {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions::default());
    engine.set_ponder(true);
    let (mid, hist, ponder_pos) = after_expected_reply(&mut engine, &mut rx);
    let mut h = hist.clone();
    h.push(mid.key());
    let id = engine.go_ponder(GoRequest::new(ponder_pos.clone(), h, clock()));
    // Pondering is not bound by the clock: with a ~0.1 s budget, two
    // seconds of pondering still hold the answer back.
    std::thread::sleep(Duration::from_millis(2_000));
    no_answer_yet(&mut rx, id);
    engine.ponderhit();
    let best = wait_best(&mut rx, id);
    assert!(ponder_pos.is_legal(best.mv.expect("a move")));
    if let Some(p) = best.ponder {
        assert!(ponder_pos.play(best.mv.unwrap()).is_legal(p));
    }

    // A hit right away: the search then runs under the clock and ends by
    // itself (no stop is sent).
    let id = engine.go_ponder(GoRequest::new(ponder_pos.clone(), vec![], clock()));
    engine.ponderhit();
    let best = wait_best(&mut rx, id);
    assert!(ponder_pos.is_legal(best.mv.expect("a move")));
}

#[test]
fn ponder_miss_is_a_stop_and_a_new_search() {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions::default());
    engine.set_ponder(true);
    let (mid, hist, ponder_pos) = after_expected_reply(&mut engine, &mut rx);
    let mut h = hist.clone();
    h.push(mid.key());
    let ponder_id = engine.go_ponder(GoRequest::new(ponder_pos.clone(), h.clone(), clock()));
    std::thread::sleep(Duration::from_millis(300));
    no_answer_yet(&mut rx, ponder_id);

    // The opponent played something else.
    let expected = ponder_pos.key();
    let other = mid
        .legal_moves()
        .iter()
        .copied()
        .find(|&m| mid.play(m).key() != expected)
        .expect("another reply");
    let real = mid.play(other);
    engine.stop();
    let stale = wait_best(&mut rx, ponder_id);
    assert!(ponder_pos.is_legal(stale.mv.expect("a move")));
    let id = engine.go(GoRequest::new(real.clone(), h, clock()));
    assert!(id > ponder_id);
    let best = wait_best(&mut rx, id);
    assert!(real.is_legal(best.mv.expect("a move")));
    // A ponderhit after the miss concerns no search and changes nothing.
    engine.ponderhit();
    let id = engine.go(GoRequest::new(real.clone(), vec![], Limits::depth(3)));
    assert!(real.is_legal(wait_best(&mut rx, id).mv.expect("a move")));
}

#[test]
fn stop_while_pondering_answers_at_once() {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions::default());
    let (mid, hist, ponder_pos) = after_expected_reply(&mut engine, &mut rx);
    let mut h = hist;
    h.push(mid.key());
    // Stopped before the first iteration finished, and after a while.
    for wait in [0, 200] {
        let id = engine.go_ponder(GoRequest::new(ponder_pos.clone(), h.clone(), clock()));
        std::thread::sleep(Duration::from_millis(wait));
        no_answer_yet(&mut rx, id);
        engine.stop();
        let best = wait_best(&mut rx, id);
        assert!(ponder_pos.is_legal(best.mv.expect("a move")));
    }
    // Dropping the handle while pondering joins the thread.
    engine.go_ponder(GoRequest::new(ponder_pos, vec![], clock()));
    drop(engine);
}

/// A ponder search hit before the engine thread picked it up (it was
/// saving its table, say) is on our clock since the hit, not since the
/// pick-up: a hit half a minute old on a two-minute clock leaves nothing
/// of this move's budget, and the search answers at once instead of
/// thinking for seconds.
#[test]
fn a_hit_before_the_search_starts_counts_from_the_hit() {
    use kaissa::engine::search::{SearchControl, Searcher};
    use kaissa::engine::tt::TranspositionTable;
    use std::sync::OnceLock;
    use std::sync::atomic::AtomicBool;
    let limits = Limits {
        wtime: Some(Duration::from_secs(120)),
        btime: Some(Duration::from_secs(120)),
        ..clock()
    };
    let (stop, pondering) = (AtomicBool::new(false), AtomicBool::new(false));
    let hit = OnceLock::new();
    let started = std::time::Instant::now();
    hit.set(started - Duration::from_secs(30)).unwrap();
    let ctrl = SearchControl {
        ponderhit_at: Some(&hit),
        ..SearchControl::new(&stop, &pondering)
    };
    let tt = TranspositionTable::new(16);
    let pos = Position::startpos();
    let result = Searcher::new().search(&pos, &[], &limits, 1, &tt, &ctrl, &mut |_| {});
    let took = started.elapsed();
    assert!(pos.is_legal(result.best.expect("a move")));
    assert!(took < Duration::from_millis(500), "answered after {took:?}");
}
