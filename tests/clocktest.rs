//! A short run of the clock test harness: complete games between two
//! engines on harness-kept clocks, with pondering and lag. The full runs
//! (hundreds of bullet games) are `kaissa clocktest`; this checks that
//! games are played to a recorded end and accounted consistently. Time
//! losses are reported by the harness, not asserted here (they depend on
//! the machine's load).

use kaissa::engine::timeman::TimeManager;
use kaissa::tools::clocktest::{ClockTestConfig, TimeControl, run};
use std::time::Duration;

#[test]
fn harness_plays_complete_games() {
    let control = TimeControl::parse("0+0.1").expect("valid");
    assert_eq!(control.initial(), Duration::from_secs(3));
    assert!(TimeControl::parse("1").is_err());
    assert!(TimeControl::parse("0+0").is_err());
    assert!(TimeControl::parse("x+1").is_err());
    let config = ClockTestConfig {
        control,
        games: 2,
        concurrency: 2,
        lag_min: Duration::from_millis(5),
        lag_max: Duration::from_millis(20),
        overhead: Duration::from_millis(30),
        ponder: true,
        hash_mb: 4,
        manager: TimeManager::Adaptive,
        opponent_manager: TimeManager::Fixed,
        random_plies: 4,
        max_plies: 40,
        seed: 7,
    };
    let report = run(&config, &|_, _| {});
    assert_eq!(report.games.len(), 2);
    for g in &report.games {
        assert!(g.plies > 0 && g.plies <= 40, "{g:?}");
        assert!(["1-0", "0-1", "1/2-1/2"].contains(&g.result), "{g:?}");
        assert!(
            !g.reason.starts_with("illegal") && !g.reason.contains("no move"),
            "{g:?}"
        );
        for s in g.share_used {
            assert!((0.0..=1.0).contains(&s), "{g:?}");
        }
        assert!(g.ponder_hits <= g.ponders, "{g:?}");
        if g.flagged.is_none() {
            assert!(
                g.min_left.iter().all(|t| !t.is_zero()) || g.plies < 2,
                "{g:?}"
            );
        }
    }
    assert!(!report.summary(&control).is_empty());
}
