//! The clock test harness: complete engine-against-engine games played
//! in-process through the `Engine` handle, on clocks kept by the harness
//! (wall time from `go` or `ponderhit` to `bestmove`, plus a simulated
//! network lag per move that really passes), so that time losses and the
//! share of the clock used are measured, not reported by the engine.
//!
//! Lichess rules for the clock: a control with no base time starts with
//! the increment or 3 s, whichever is more; the increment is added after
//! each move; a side whose clock runs out loses (the harness counts it as
//! a time loss whatever the material).

use crate::chess::{Color, Outcome, Position};
use crate::engine::limits::Limits;
use crate::engine::thread::{BestMove, Engine, EngineOptions, Event, GoRequest, SearchId};
use crate::engine::timeman::TimeManager;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// A time control: base time and increment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimeControl {
    pub base: Duration,
    pub increment: Duration,
}

impl TimeControl {
    /// Parses `minutes+seconds` ("1+0", "0+1", "3+2", "0.25+0.1").
    pub fn parse(s: &str) -> Result<TimeControl, String> {
        let (b, i) = s
            .split_once('+')
            .ok_or_else(|| format!("time control {s:?}: expected minutes+seconds"))?;
        let num = |x: &str| -> Result<f64, String> {
            match x.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && (0.0..=600.0).contains(&v) => Ok(v),
                _ => Err(format!("time control {s:?}: bad number {x:?}")),
            }
        };
        let (base, inc) = (num(b)?, num(i)?);
        if base == 0.0 && inc == 0.0 {
            return Err(format!("time control {s:?}: no time at all"));
        }
        Ok(TimeControl {
            base: Duration::from_secs_f64(base * 60.0),
            increment: Duration::from_secs_f64(inc),
        })
    }

    /// The clock at the start (Lichess: base 0 starts at max(inc, 3 s)).
    pub fn initial(&self) -> Duration {
        if self.base.is_zero() {
            self.increment.max(Duration::from_secs(3))
        } else {
            self.base
        }
    }

    pub fn name(&self) -> String {
        format!(
            "{}+{}",
            self.base.as_secs_f64() / 60.0,
            self.increment.as_secs_f64()
        )
    }
}

/// How the games are played.
#[derive(Clone, Debug)]
pub struct ClockTestConfig {
    pub control: TimeControl,
    pub games: usize,
    /// Games played at the same time (two engine threads each).
    pub concurrency: usize,
    /// Simulated lag per move, drawn uniformly from this range.
    pub lag_min: Duration,
    pub lag_max: Duration,
    /// Move overhead given to the engines.
    pub overhead: Duration,
    pub ponder: bool,
    pub hash_mb: usize,
    /// Time manager of White in even games and Black in odd ones (the
    /// other side uses `opponent_manager`).
    pub manager: TimeManager,
    pub opponent_manager: TimeManager,
    /// Random plies from the start position, for variety.
    pub random_plies: usize,
    /// A game reaching this many plies is adjudicated a draw.
    pub max_plies: usize,
    pub seed: u64,
}

/// The end of one game.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRecord {
    /// "1-0", "0-1" or "1/2-1/2".
    pub result: &'static str,
    pub reason: String,
    /// The side that lost on time, if any.
    pub flagged: Option<Color>,
    pub plies: usize,
    /// Share of the time each side had (base + increments received) that
    /// it used, White then Black.
    pub share_used: [f64; 2],
    /// Least time left on each clock after any move.
    pub min_left: [Duration; 2],
    /// Ponder searches started and how many of them were hit.
    pub ponders: usize,
    pub ponder_hits: usize,
    /// Result from the point of view of the side using `manager`
    /// (1, 0.5, 0).
    pub manager_score: f64,
}

/// What a run of games measured.
#[derive(Clone, Debug, Default)]
pub struct ClockTestReport {
    pub games: Vec<GameRecord>,
}

impl ClockTestReport {
    pub fn time_losses(&self) -> usize {
        self.games.iter().filter(|g| g.flagged.is_some()).count()
    }

    pub fn summary(&self, control: &TimeControl) -> String {
        let n = self.games.len();
        if n == 0 {
            return "no games".into();
        }
        let shares: Vec<f64> = self.games.iter().flat_map(|g| g.share_used).collect();
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        let long: Vec<f64> = self
            .games
            .iter()
            .filter(|g| g.plies >= 120)
            .flat_map(|g| g.share_used)
            .collect();
        let long_mean = if long.is_empty() {
            f64::NAN
        } else {
            long.iter().sum::<f64>() / long.len() as f64
        };
        let min_left = self
            .games
            .iter()
            .flat_map(|g| g.min_left)
            .min()
            .unwrap_or_default();
        let plies = self.games.iter().map(|g| g.plies).sum::<usize>() as f64 / n as f64;
        let (p, h) = self
            .games
            .iter()
            .fold((0, 0), |(p, h), g| (p + g.ponders, h + g.ponder_hits));
        let (w, d, l) = self
            .games
            .iter()
            .fold((0, 0, 0), |(w, d, l), g| match g.result {
                "1-0" => (w + 1, d, l),
                "0-1" => (w, d, l + 1),
                _ => (w, d + 1, l),
            });
        let score: f64 = self.games.iter().map(|g| g.manager_score).sum();
        let mut s = format!(
            "tc {}: {n} games (+{w} ={d} -{l} white's view), time losses {}, \
             mean plies {plies:.0}, clock share used mean {:.1}% (games >= 120 plies: {:.1}%, {} sides), \
             least time left {} ms, manager score {score}/{n}",
            control.name(),
            self.time_losses(),
            mean * 100.0,
            long_mean * 100.0,
            long.len(),
            min_left.as_millis(),
        );
        if p > 0 {
            s.push_str(&format!(
                ", ponder hits {h}/{p} ({:.1}%)",
                100.0 * h as f64 / p as f64
            ));
        }
        s
    }
}

/// Plays `config.games` games, `config.concurrency` at a time, calling
/// `progress` after each.
pub fn run(
    config: &ClockTestConfig,
    progress: &(dyn Fn(usize, &GameRecord) + Sync),
) -> ClockTestReport {
    let next = AtomicUsize::new(0);
    let records = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..config.concurrency.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= config.games {
                        break;
                    }
                    let g = play_game(config, i);
                    progress(i, &g);
                    if let Ok(mut r) = records.lock() {
                        r.push((i, g));
                    }
                }
            });
        }
    });
    let mut games = records.into_inner().unwrap_or_default();
    games.sort_by_key(|(i, _)| *i);
    ClockTestReport {
        games: games.into_iter().map(|(_, g)| g).collect(),
    }
}

struct Player {
    engine: Engine,
    events: UnboundedReceiver<Event>,
    /// A ponder search under way: its id and the key of the position it
    /// searches (the one after the expected reply).
    pondering: Option<(SearchId, u64)>,
}

fn wait_best(p: &mut Player, want: SearchId) -> Option<BestMove> {
    loop {
        match p.events.blocking_recv()? {
            Event::BestMove { id, best } if id == want => return Some(best),
            Event::Failed { id, .. } if id == want => return None,
            _ => {}
        }
    }
}

fn limits_for(clocks: &[Duration; 2], tc: &TimeControl, overhead: Duration) -> Limits {
    Limits {
        wtime: Some(clocks[0]),
        btime: Some(clocks[1]),
        winc: Some(tc.increment),
        binc: Some(tc.increment),
        move_overhead: overhead,
        ..Limits::default()
    }
}

/// Plays game number `index` to its end.
pub fn play_game(config: &ClockTestConfig, index: usize) -> GameRecord {
    let mut rng =
        fastrand::Rng::with_seed(config.seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let tc = config.control;
    // The side that uses `manager`: White in even games.
    let manager_side = if index.is_multiple_of(2) { 0 } else { 1 };
    let mut players: Vec<Player> = (0..2)
        .map(|side| {
            let options = EngineOptions {
                hash_mb: config.hash_mb,
                ..EngineOptions::default()
            };
            let (mut engine, events) = Engine::spawn(options);
            engine.set_ponder(config.ponder);
            engine.set_time_manager(if side == manager_side {
                config.manager
            } else {
                config.opponent_manager
            });
            Player {
                engine,
                events,
                pondering: None,
            }
        })
        .collect();

    let mut pos = Position::startpos();
    let mut history: Vec<u64> = Vec::new();
    for _ in 0..config.random_plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        let m = moves[rng.usize(..moves.len())];
        history.push(pos.key());
        pos = pos.play(m);
    }
    // Random openings that already ended: start from the start position.
    if pos.outcome(&history).is_some() {
        pos = Position::startpos();
        history.clear();
    }

    let mut clocks = [tc.initial(); 2];
    let mut granted = [tc.initial(); 2];
    let mut min_left = clocks;
    let (mut ponders, mut hits) = (0, 0);
    let mut plies = 0;
    let mut flagged = None;
    let outcome: Option<Outcome>;
    let mut reason = String::new();
    loop {
        if let Some(o) = pos.outcome(&history) {
            outcome = Some(o);
            break;
        }
        if plies >= config.max_plies {
            outcome = None;
            reason = format!("adjudicated a draw after {plies} plies");
            break;
        }
        let side = pos.turn().index();
        let limits = limits_for(&clocks, &tc, config.overhead);
        let p = &mut players[side];
        // Our clock starts now: the opponent's move has just arrived.
        let started = Instant::now();
        let id = match p.pondering.take() {
            Some((id, key)) if key == pos.key() => {
                hits += 1;
                p.engine.ponderhit();
                id
            }
            Some((id, _)) => {
                p.engine.stop();
                let _ = wait_best(p, id);
                p.engine
                    .go(GoRequest::new(pos.clone(), history.clone(), limits.clone()))
            }
            None => p
                .engine
                .go(GoRequest::new(pos.clone(), history.clone(), limits.clone())),
        };
        let best = wait_best(p, id);
        let think = started.elapsed();
        let lag = config.lag_min
            + Duration::from_millis(
                rng.u64(..=config.lag_max.saturating_sub(config.lag_min).as_millis() as u64),
            );
        // The lag really passes (the opponent ponders through it).
        std::thread::sleep(lag);
        let spent = think + lag;
        let Some(Some(mv)) = best.map(|b| b.mv) else {
            reason = "engine gave no move".into();
            outcome = None;
            break;
        };
        if !pos.is_legal(mv) {
            reason = format!("illegal move {}", mv.to_uci(false));
            outcome = None;
            break;
        }
        if spent >= clocks[side] {
            flagged = Some(pos.turn());
            clocks[side] = Duration::ZERO;
            min_left[side] = Duration::ZERO;
            reason = format!(
                "{:?} lost on time at ply {plies} (spent {} ms)",
                pos.turn(),
                spent.as_millis()
            );
            outcome = None;
            break;
        }
        clocks[side] -= spent;
        min_left[side] = min_left[side].min(clocks[side]);
        clocks[side] += tc.increment;
        granted[side] += tc.increment;
        let ponder_move = best.and_then(|b| b.ponder);
        history.push(pos.key());
        pos = pos.play(mv);
        plies += 1;

        // Think on the opponent's time about the expected reply.
        if config.ponder
            && let Some(pm) = ponder_move.filter(|&pm| pos.is_legal(pm))
        {
            let child = pos.play(pm);
            if child
                .outcome(&{
                    let mut h = history.clone();
                    h.push(pos.key());
                    h
                })
                .is_none()
            {
                let mut h = history.clone();
                h.push(pos.key());
                // The clocks as they will be when the reply comes:
                // the opponent's share is unknown, so the current one.
                let limits = limits_for(&clocks, &tc, config.overhead);
                let mut req = GoRequest::new(child, h, limits);
                req.ponder = true;
                let p = &mut players[side];
                let key = req.position.key();
                let id = p.engine.go(req);
                p.pondering = Some((id, key));
                ponders += 1;
            }
        }
    }
    // Stop whatever is still pondering before the engines are dropped.
    for p in &mut players {
        if let Some((id, _)) = p.pondering.take() {
            p.engine.stop();
            let _ = wait_best(p, id);
        }
    }
    let result = match (flagged, outcome) {
        (Some(Color::White), _) => "0-1",
        (Some(Color::Black), _) => "1-0",
        (None, Some(o)) => {
            reason = format!("{o:?}");
            o.result()
        }
        (None, None) => "1/2-1/2",
    };
    let white_score = match result {
        "1-0" => 1.0,
        "0-1" => 0.0,
        _ => 0.5,
    };
    let manager_score = if manager_side == 0 {
        white_score
    } else {
        1.0 - white_score
    };
    let share = |s: usize| {
        let g = granted[s].as_secs_f64();
        if g <= 0.0 {
            0.0
        } else {
            ((g - clocks[s].as_secs_f64()) / g).clamp(0.0, 1.0)
        }
    };
    GameRecord {
        result,
        reason,
        flagged,
        plies,
        share_used: [share(0), share(1)],
        min_left,
        ponders,
        ponder_hits: hits,
        manager_score,
    }
}

/// `kaissa clocktest`: every configuration at once (each with its own
/// `concurrency` games), a line per game when `verbose` or on a flag
/// fall, then one summary per control; an error if any game was lost on
/// time.
pub fn run_controls(configs: &[ClockTestConfig], verbose: bool) -> anyhow::Result<()> {
    // All controls at once, `concurrency` games each.
    let reports: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = configs
            .iter()
            .map(|config| {
                scope.spawn(move || {
                    let control = config.control;
                    run(config, &|i, g| {
                        if verbose || g.flagged.is_some() {
                            eprintln!(
                                "{} game {i}: {} {} plies {} share {:.0}%/{:.0}% min left {}/{} ms ponder {}/{}",
                                control.name(),
                                g.result,
                                g.reason,
                                g.plies,
                                g.share_used[0] * 100.0,
                                g.share_used[1] * 100.0,
                                g.min_left[0].as_millis(),
                                g.min_left[1].as_millis(),
                                g.ponder_hits,
                                g.ponders
                            );
                        }
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut losses = 0;
    for (config, report) in configs.iter().zip(reports) {
        let report = report.map_err(|_| anyhow::anyhow!("a game thread panicked"))?;
        losses += report.time_losses();
        println!("{}", report.summary(&config.control));
    }
    if losses > 0 {
        anyhow::bail!("{losses} game(s) lost on time");
    }
    Ok(())
}
