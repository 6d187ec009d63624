//! The web server (`[web]`) of a running daemon against the fake Lichess:
//! `/metrics` scraped after a whole game and read by a Prometheus text
//! parser (the `prometheus-parse` crate), and `/healthz` answering 200
//! while the event stream is up, then 503 once the fake cuts it and
//! refuses it.

use crate::support;

use std::time::Duration;

use prometheus_parse::{Sample, Scrape, Value};
use support::bot::Bot;
use support::fake_lichess::{AutoPlay, ChallengeSpec, FakeLichess, Policy, Side};

const WAIT: Duration = Duration::from_secs(20);

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

async fn get(url: &str) -> (u16, String) {
    match reqwest::get(url).await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    }
}

/// Polls `url` until it answers `status`; its last body.
async fn wait_for(url: &str, status: u16) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (got, body) = get(url).await;
        if got == status {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url}: {got} {body}, waited for {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The samples of metric `name` whose labels include `labels`.
fn samples<'a>(scrape: &'a Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect()
}

fn number(sample: &Sample) -> f64 {
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{}: not a number: {other:?}", sample.metric),
    }
}

/// The daemon against `fake`, its web server on a free port; the
/// server's base URL.
async fn start(fake: &FakeLichess) -> (Bot, String) {
    let port = free_port();
    let mut bot = Bot::configured(fake, |_| {
        format!(
            "[lichess]\nurl = \"{}\"\n[engine]\nhash_mb = 8\nmax_depth = 4\n\
             [bot]\nconcurrency = 1\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\"\n",
            fake.url()
        )
    });
    bot.spawn();
    fake.wait_event_stream(WAIT).await.unwrap();
    (bot, format!("http://127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_health_of_a_running_daemon() {
    let fake = FakeLichess::start().await;
    let (bot, base) = start(&fake).await;
    assert_eq!(wait_for(&format!("{base}/healthz"), 200).await, "ok\n");

    // A whole game.
    let id = fake.send_challenge(
        ChallengeSpec::default()
            .clock(60, 0)
            .challenger_color(Side::Random)
            .autoplay(Some(AutoPlay {
                policy: Policy::Greedy,
                think: Duration::from_millis(20),
                accept_draws: false,
            })),
    );
    let game = fake.wait_game_over(&id, WAIT * 6).await.unwrap();
    bot.wait_log("game end", WAIT).await;

    let (status, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(status, 200, "{text}");
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text");
    let moves = number(samples(&scrape, "kaissa_moves_total", &[])[0]);
    let ours = game.moves.len().div_ceil(2) as f64;
    assert!(
        (ours - 1.0..=ours).contains(&moves),
        "{moves} moves counted, the game had {} plies",
        game.moves.len()
    );
    // The histograms count every move.
    for name in ["kaissa_think_seconds", "kaissa_permit_wait_seconds"] {
        let sample = samples(&scrape, name, &[]);
        let Value::Histogram(buckets) = &sample[0].value else {
            panic!("{name} is not a histogram");
        };
        let inf = buckets.last().expect("a +Inf bucket");
        assert!(
            inf.less_than.is_infinite() && inf.count == moves,
            "{name}: {buckets:?}"
        );
        assert!(buckets.windows(2).all(|w| w[0].count <= w[1].count));
    }
    let games = samples(
        &scrape,
        "kaissa_games_total",
        &[("speed", "bullet"), ("opponent", "human")],
    );
    assert_eq!(games.iter().map(|s| number(s)).sum::<f64>(), 1.0, "{text}");
    let posts = samples(
        &scrape,
        "kaissa_requests_total",
        &[("endpoint", "game"), ("status", "200")],
    );
    assert!(number(posts[0]) >= moves, "{text}");
    assert_eq!(
        number(samples(&scrape, "kaissa_games_playing", &[])[0]),
        0.0
    );
    assert_eq!(
        number(samples(&scrape, "kaissa_time_losses_total", &[])[0]),
        0.0
    );
    assert!(
        number(samples(&scrape, "kaissa_rating", &[])[0]) > 0.0,
        "{text}"
    );
    assert!(!text.contains(&fake.token()), "the token is never served");

    // The event stream cut, and refused for a while: unhealthy.
    fake.fail_matching_with_429("/api/stream/event", 1000, Some(60));
    fake.cut_event_stream();
    let body = wait_for(&format!("{base}/healthz"), 503).await;
    assert!(body.contains("event stream"), "{body}");
    // The reopening meets the 429: counted by endpoint.
    let deadline = tokio::time::Instant::now() + WAIT;
    let scrape = loop {
        let (_, text) = get(&format!("{base}/metrics")).await;
        let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        if !samples(
            &scrape,
            "kaissa_rate_limited_total",
            &[("endpoint", "events")],
        )
        .is_empty()
        {
            break scrape;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no 429 counted:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(number(samples(&scrape, "kaissa_stream_reconnects_total", &[])[0]) >= 1.0);
    let log = bot.stop().await;
    support::bot::check_log(&log, &fake.token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_a_live_game_then_its_result() {
    let fake = FakeLichess::start().await;
    let (bot, base) = start(&fake).await;
    let (status, page) = get(&format!("{base}/")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<title>kaissa</title>") && page.contains("/api/status"));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no external asset"
    );

    let id = fake.send_challenge(
        ChallengeSpec::default()
            .clock(300, 0)
            .challenger_color(Side::White)
            .autoplay(Some(AutoPlay {
                policy: Policy::Greedy,
                think: Duration::from_millis(150),
                accept_draws: false,
            })),
    );
    // The game, live: its board, its graph, its clocks.
    let deadline = tokio::time::Instant::now() + WAIT;
    let game = loop {
        let (_, text) = get(&format!("{base}/api/status")).await;
        let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if let Some(g) = status["games"]
            .get(0)
            .filter(|g| g["plies"].as_u64() >= Some(4))
        {
            break g.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no live game: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(game["id"], id.as_str());
    assert_eq!(game["color"], "black");
    let board = game["board_svg"].as_str().unwrap();
    assert!(
        board.starts_with("<svg") && board.matches("<rect").count() >= 64,
        "{board}"
    );
    let pieces = board.matches("<text").count();
    assert!((20..=32).contains(&pieces), "{pieces} pieces");
    assert_eq!(
        game["fen"].as_str().unwrap().split('/').count(),
        8,
        "{game}"
    );
    assert!(
        game["last_move"].as_str().is_some_and(|m| m.len() >= 4),
        "{game}"
    );
    assert!(
        game["graph_svg"].as_str().unwrap().contains("<polyline"),
        "{game}"
    );
    assert!(
        game["our_clock_ms"].as_u64().is_some() && game["score"].is_string(),
        "{game}"
    );

    // Over: in the results.
    fake.opponent_resigns(&id).unwrap();
    fake.wait_game_over(&id, WAIT).await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (_, text) = get(&format!("{base}/api/status")).await;
        let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if let Some(r) = status["results"].get(0) {
            assert_eq!(r["id"], id.as_str());
            assert_eq!(r["result"], "win");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no result: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = bot.stop().await;
    support::bot::check_log(&log, &fake.token());
}
