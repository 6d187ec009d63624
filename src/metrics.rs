//! The daemon's metrics, one registry a process ([`metrics`]), written in
//! Prometheus's text exposition format (version 0.0.4) for `GET
//! /metrics` (`src/bot/web.rs`). Counters and histograms are updated where
//! things happen (the client's transport, the game tasks, the daemon's
//! loop); the gauges (games playing and parked, ratings) are set by the
//! daemon. Updating one is a lock held for a map insert: nothing here can
//! cost a game measurable time.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The histogram buckets of durations, in seconds: from a fast move to a
/// long correspondence think.
const SECONDS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];

/// A metric's labels, as `(name, value)` pairs in a fixed order.
type Labels = Vec<(&'static str, String)>;

/// One histogram: the count in each bucket (not cumulative), the sum and
/// the count.
#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; SECONDS.len()],
    sum: f64,
    count: u64,
}

/// What a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every metric the daemon exports: name, kind and help.
const CATALOGUE: &[(&str, Kind, &str)] = &[
    (
        "kaissa_games_playing",
        Kind::Gauge,
        "Games with a task now.",
    ),
    (
        "kaissa_games_parked",
        Kind::Gauge,
        "Correspondence games waiting for the opponent.",
    ),
    (
        "kaissa_moves_total",
        Kind::Counter,
        "Moves posted (and taken by Lichess).",
    ),
    (
        "kaissa_think_seconds",
        Kind::Histogram,
        "Time spent choosing a move, search or source.",
    ),
    (
        "kaissa_permit_wait_seconds",
        Kind::Histogram,
        "Time a move waited for a search thread.",
    ),
    (
        "kaissa_requests_total",
        Kind::Counter,
        "Lichess requests answered, by endpoint and HTTP status.",
    ),
    (
        "kaissa_request_failures_total",
        Kind::Counter,
        "Lichess requests with no answer (connection, timeout), by endpoint.",
    ),
    (
        "kaissa_rate_limited_total",
        Kind::Counter,
        "429 answers, by endpoint.",
    ),
    (
        "kaissa_rate_limit_pauses_total",
        Kind::Counter,
        "Pauses of an endpoint's gate after a 429, by endpoint.",
    ),
    (
        "kaissa_stream_reconnects_total",
        Kind::Counter,
        "Reopenings of the event stream.",
    ),
    (
        "kaissa_games_total",
        Kind::Counter,
        "Games finished, by speed, opponent (bot or human) and result for us.",
    ),
    (
        "kaissa_time_losses_total",
        Kind::Counter,
        "Games we lost on time.",
    ),
    (
        "kaissa_rating",
        Kind::Gauge,
        "Our rating, by perf, as the account last said.",
    ),
];

/// The registry.
#[derive(Debug, Default)]
pub struct Metrics {
    values: Mutex<BTreeMap<(&'static str, Labels), f64>>,
    histograms: Mutex<BTreeMap<&'static str, Histogram>>,
}

/// This process's registry.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::default)
}

impl Metrics {
    /// Adds one to the counter `name` with `labels`.
    pub fn inc(&self, name: &'static str, labels: &[(&'static str, &str)]) {
        self.add(name, labels, 1.0);
    }

    fn add(&self, name: &'static str, labels: &[(&'static str, &str)], by: f64) {
        debug_assert!(kind(name).is_some(), "{name} is not in the catalogue");
        let key = (name, own(labels));
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        *values.entry(key).or_insert(0.0) += by;
    }

    /// Sets the gauge `name` with `labels`.
    pub fn set(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        debug_assert_eq!(kind(name), Some(Kind::Gauge), "{name}");
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.insert((name, own(labels)), value);
    }

    /// Records `value` in the histogram `name`.
    pub fn observe(&self, name: &'static str, value: Duration) {
        debug_assert_eq!(kind(name), Some(Kind::Histogram), "{name}");
        let secs = value.as_secs_f64();
        let mut histograms = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let h = histograms.entry(name).or_default();
        if let Some(i) = SECONDS.iter().position(|&b| secs <= b) {
            h.buckets[i] += 1;
        }
        h.sum += secs;
        h.count += 1;
    }

    /// The value of a counter or gauge (0 if never set).
    pub fn value(&self, name: &'static str, labels: &[(&'static str, &str)]) -> f64 {
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.get(&(name, own(labels))).copied().unwrap_or(0.0)
    }

    /// Every metric in Prometheus's text format: `# HELP` and `# TYPE`
    /// for each, even one with no sample yet (a counter reads 0).
    pub fn render(&self) -> String {
        let values = self
            .values
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let histograms = self
            .histograms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut out = String::new();
        for &(name, kind, help) in CATALOGUE {
            let type_name = match kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {type_name}");
            if kind == Kind::Histogram {
                let h = histograms.get(name).cloned().unwrap_or_default();
                let mut cumulative = 0;
                for (bound, n) in SECONDS.iter().zip(h.buckets) {
                    cumulative += n;
                    let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
                }
                let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "{name}_sum {}", h.sum);
                let _ = writeln!(out, "{name}_count {}", h.count);
                continue;
            }
            let mut any = false;
            for ((_, labels), value) in values.iter().filter(|((n, _), _)| *n == name) {
                any = true;
                let _ = writeln!(out, "{name}{} {value}", label_text(labels));
            }
            if !any && kind == Kind::Counter && !has_labels(name) {
                let _ = writeln!(out, "{name} 0");
            }
        }
        out
    }
}

fn kind(name: &str) -> Option<Kind> {
    CATALOGUE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, k, _)| k)
}

/// Whether samples of `name` carry labels (then none is written before
/// the first one happens).
fn has_labels(name: &str) -> bool {
    matches!(
        name,
        "kaissa_requests_total"
            | "kaissa_request_failures_total"
            | "kaissa_rate_limited_total"
            | "kaissa_rate_limit_pauses_total"
            | "kaissa_games_total"
            | "kaissa_rating"
    )
}

fn own(labels: &[(&'static str, &str)]) -> Labels {
    labels.iter().map(|&(k, v)| (k, v.to_owned())).collect()
}

/// `{a="x",b="y"}`, the values escaped as the format asks; empty without
/// labels.
fn label_text(labels: &Labels) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\"")
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_format_has_every_metric_once_with_its_samples() {
        let m = Metrics::default();
        m.inc("kaissa_moves_total", &[]);
        m.inc("kaissa_moves_total", &[]);
        m.inc(
            "kaissa_requests_total",
            &[("endpoint", "Game"), ("status", "200")],
        );
        m.set("kaissa_rating", &[("perf", "blitz")], 2012.0);
        m.observe("kaissa_think_seconds", Duration::from_millis(300));
        m.observe("kaissa_think_seconds", Duration::from_secs(500));
        m.inc(
            "kaissa_games_total",
            &[("speed", "blitz"), ("opponent", "say \"hi\"")],
        );
        let text = m.render();
        for (name, _, _) in CATALOGUE {
            assert_eq!(
                text.matches(&format!("# TYPE {name} ")).count(),
                1,
                "{name}"
            );
        }
        assert!(text.contains("kaissa_moves_total 2\n"), "{text}");
        assert!(
            text.contains("kaissa_stream_reconnects_total 0\n"),
            "{text}"
        );
        assert!(text.contains("kaissa_requests_total{endpoint=\"Game\",status=\"200\"} 1\n"));
        assert!(text.contains("kaissa_rating{perf=\"blitz\"} 2012\n"));
        assert!(text.contains("kaissa_think_seconds_bucket{le=\"0.25\"} 0\n"));
        assert!(text.contains("kaissa_think_seconds_bucket{le=\"0.5\"} 1\n"));
        assert!(text.contains("kaissa_think_seconds_bucket{le=\"120\"} 1\n"));
        assert!(text.contains("kaissa_think_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert!(text.contains("kaissa_think_seconds_count 2\n"));
        assert!(text.contains("opponent=\"say \\\"hi\\\"\""), "{text}");
        assert_eq!(m.value("kaissa_moves_total", &[]), 2.0);
    }
}
