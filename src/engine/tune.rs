//! The search's tunable constants (margins, reductions): each one's
//! default and the range SPSA may move it in (`scripts/spsa.py`).
//!
//! In the default build a tunable is its default, a constant the compiler
//! folds. Built with `--features tune`, each is a relaxed atomic that the
//! UCI front end lists as a spin option named `tune_<name>` and sets with
//! `setoption`; the default build lists none of them.

use std::sync::atomic::{AtomicI32, Ordering};

/// One tunable constant, for the UCI front end.
pub struct Tunable {
    pub name: &'static str,
    pub default: i32,
    pub min: i32,
    pub max: i32,
    cell: &'static AtomicI32,
}

impl Tunable {
    /// Sets the value (read by tune builds only); `false` if out of range.
    pub fn set(&self, v: i32) -> bool {
        if !(self.min..=self.max).contains(&v) {
            return false;
        }
        self.cell.store(v, Ordering::Relaxed);
        true
    }
}

macro_rules! tunables {
    ($($(#[doc = $doc:literal])* $name:ident = $default:literal in $min:literal..=$max:literal;)*) => {
        #[allow(non_upper_case_globals)]
        mod cells {
            use std::sync::atomic::AtomicI32;
            $(pub static $name: AtomicI32 = AtomicI32::new($default);)*
        }

        $(
            $(#[doc = $doc])*
            #[inline(always)]
            pub fn $name() -> i32 {
                if cfg!(feature = "tune") {
                    cells::$name.load(Ordering::Relaxed)
                } else {
                    $default
                }
            }
        )*

        /// Every tunable, in declaration order.
        pub static TUNABLES: &[Tunable] = &[$(Tunable {
            name: stringify!($name),
            default: $default,
            min: $min,
            max: $max,
            cell: &cells::$name,
        }),*];
    };
}

tunables! {
    /// Reverse futility: margin per ply of depth (centipawns).
    rfp_margin = 77 in 30..=160;
    /// Reverse futility: deepest node it applies to.
    rfp_depth = 8 in 4..=12;
    /// Razoring: margin base and per depth squared.
    razor_base = 200 in 50..=400;
    razor_depth2 = 250 in 100..=400;
    /// Null move: the static-eval condition's base and slope per ply.
    nmp_eval_base = 160 in 0..=320;
    nmp_eval_depth = 20 in 0..=40;
    /// Null move: eval-minus-beta per extra ply of reduction.
    nmp_eval_div = 193 in 100..=400;
    /// Futility of quiets: base and margin per ply of reduced depth.
    futility_base = 92 in 20..=200;
    futility_depth = 88 in 40..=160;
    /// Futility of quiets: history divisor of the margin bonus.
    futility_hist_div = 87 in 16..=256;
    /// SEE pruning of quiets, per reduced depth squared (negated).
    see_quiet = 26 in 5..=60;
    /// SEE pruning of captures, per ply (negated).
    see_capture = 94 in 30..=180;
    /// Singular extension: margin per ply below the stored score.
    singular_margin = 2 in 1..=6;
    /// Late-move reductions: table base and divisor, in hundredths.
    lmr_base = 78 in 25..=125;
    lmr_div = 214 in 150..=350;
    /// Late-move reductions: history per ply of reduction.
    lmr_hist_div = 7592 in 3000..=16000;
    /// Aspiration window: first half-width.
    asp_delta = 20 in 8..=40;
    /// Quiescence delta pruning margin.
    qs_delta = 150 in 50..=300;
}

/// The tunable called `name` (case-insensitive), if any.
pub fn find(name: &str) -> Option<&'static Tunable> {
    TUNABLES.iter().find(|t| t.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lie_in_their_ranges_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for t in TUNABLES {
            assert!(t.min <= t.default && t.default <= t.max, "{}", t.name);
            assert!(names.insert(t.name), "{} twice", t.name);
        }
        assert_eq!(find("RFP_MARGIN").map(|t| t.default), Some(rfp_margin()));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let t = find("asp_delta").unwrap();
        assert!(!t.set(t.max + 1));
        assert!(!t.set(t.min - 1));
        assert!(t.set(t.default));
        assert_eq!(asp_delta(), t.default);
        assert_eq!(find("no_such_constant").map(|t| t.name), None);
    }
}
