//! Time management: turns `Limits` and the side to move into a soft limit
//! (do not start another iteration after it) and a hard limit (abort the
//! search when it is reached).
//!
//! This is the simple first budget: soft = left/30 + 3/4 inc, hard =
//! 3 x soft, at most a fifth of the time left, both minus the move
//! overhead. A later task replaces it with one that scales by best-move
//! stability and score trend.

use super::limits::Limits;
use crate::chess::Color;
use std::time::Duration;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct TimeBudget {
    /// Do not start a new iteration once this much time has gone.
    pub soft: Option<Duration>,
    /// Stop searching when this much time has gone.
    pub hard: Option<Duration>,
}

/// The budget for a search by `us` under `limits`.
pub fn budget(limits: &Limits, us: Color) -> TimeBudget {
    if limits.infinite {
        return TimeBudget::default();
    }
    if let Some(mt) = limits.movetime {
        let t = mt
            .saturating_sub(limits.move_overhead)
            .max(Duration::from_millis(1));
        return TimeBudget {
            soft: Some(t),
            hard: Some(t),
        };
    }
    let (time, inc) = match us {
        Color::White => (limits.wtime, limits.winc),
        Color::Black => (limits.btime, limits.binc),
    };
    let Some(left) = time else {
        return TimeBudget::default();
    };
    let inc = inc.unwrap_or_default();
    let overhead = limits.move_overhead;
    // What we may spend at most, keeping the overhead for every move.
    let usable = left.saturating_sub(overhead);
    let moves = limits.movestogo.map_or(30, |m| m.clamp(1, 30));
    let soft = usable / moves + inc * 3 / 4;
    let cap = if limits.movestogo == Some(1) {
        usable * 4 / 5
    } else {
        usable / 5
    };
    let hard = (soft * 3).min(cap).max(Duration::from_millis(1));
    let soft = soft.min(hard);
    TimeBudget {
        soft: Some(soft),
        hard: Some(hard),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn clock_budgets() {
        let limits = Limits {
            wtime: Some(ms(60_000)),
            winc: Some(ms(1_000)),
            btime: Some(ms(1_000)),
            move_overhead: ms(50),
            ..Limits::default()
        };
        let b = budget(&limits, Color::White);
        let soft = b.soft.unwrap();
        let hard = b.hard.unwrap();
        assert!(soft > ms(2_000) && soft < ms(3_500), "{soft:?}");
        assert!(hard >= soft && hard <= ms(12_000));
        // Almost no time left: tiny but non-zero budget, under the clock.
        let b = budget(&limits, Color::Black);
        assert!(b.hard.unwrap() <= ms(200) && b.hard.unwrap() > ms(0));
        let zero = Limits {
            btime: Some(ms(0)),
            ..Limits::default()
        };
        assert_eq!(budget(&zero, Color::Black).hard, Some(ms(1)));
        let mt = Limits {
            movetime: Some(ms(500)),
            move_overhead: ms(20),
            ..Limits::default()
        };
        assert_eq!(budget(&mt, Color::White).hard, Some(ms(480)));
        assert_eq!(
            budget(&Limits::default(), Color::White),
            TimeBudget::default()
        );
    }
}
