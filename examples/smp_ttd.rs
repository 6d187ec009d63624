//! Time to depth of lazy SMP (a measurement, not a test): every bench
//! position searched to a fixed depth through the `Engine` handle with 1
//! and with N threads, fresh table each time; prints wall time per run.
//!
//! cargo run --release --example smp_ttd -- [depth] [threads] [positions]

use kaissa::chess::Position;
use kaissa::engine::bench::POSITIONS;
use kaissa::engine::{Engine, EngineOptions, Event, GoRequest, Limits};
use std::time::{Duration, Instant};

fn time_to_depth(threads: usize, pos: &Position, depth: u32) -> Duration {
    let (mut engine, mut rx) = Engine::spawn(EngineOptions {
        hash_mb: 64,
        threads,
        multipv: 1,
    });
    let start = Instant::now();
    let id = engine.go(GoRequest::new(pos.clone(), vec![], Limits::depth(depth)));
    loop {
        match rx.blocking_recv() {
            Some(Event::BestMove { id: got, .. }) if got == id => return start.elapsed(),
            None => return start.elapsed(),
            _ => {}
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let depth: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(14);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let count: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(POSITIONS.len());
    let (mut one, mut many) = (Duration::ZERO, Duration::ZERO);
    for (i, fen) in POSITIONS.iter().take(count).enumerate() {
        let pos = Position::from_fen(fen).expect("bench FEN");
        let a = time_to_depth(1, &pos, depth);
        let b = time_to_depth(threads, &pos, depth);
        println!(
            "{i:>3} 1T {:>8} ms  {threads}T {:>8} ms",
            a.as_millis(),
            b.as_millis()
        );
        one += a;
        many += b;
    }
    println!(
        "depth {depth}: 1 thread {} ms, {threads} threads {} ms, speed-up {:.2}x",
        one.as_millis(),
        many.as_millis(),
        one.as_secs_f64() / many.as_secs_f64().max(1e-9)
    );
}
