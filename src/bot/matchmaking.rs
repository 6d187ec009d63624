//! Matchmaking: when the bot has been idle for `matchmaking.idle_secs`,
//! challenge a bot that is online (`GET /api/bot/online`), rated within
//! `matchmaking.rating_window` of us in the perf offered, with the time
//! controls and variants of the configuration taken in turn.
//!
//! The [`Matchmaker`] holds the decisions and the state; the daemon owns
//! the timing and sends the requests through the `spawn_*` functions here,
//! which report back on a channel (its loop never waits on a request).
//! One challenge of ours is pending at most, created with Lichess's
//! `keepAliveStream` (a real-time challenge made without it expires after
//! 20 s) and held open by a task of its own; it is cancelled after
//! `challenge_timeout_secs`. A bot that declined (or did not answer) is
//! skipped for `decline_cooldown_secs`; these [`Cooldowns`] are kept with
//! their reason in `engine.state_dir/declined.json`.

use super::state;
use crate::config::{MatchmakingConfig, PlayableVariant};
use crate::lichess::client::{
    ChallengeKeepAlive, ChallengeTime, Client, CreateChallenge, Error as ClientError,
};
use crate::lichess::model::{Account, Challenge, ChallengeColor, OnlineBot, perf_rating};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// The state file's name.
pub const FILE: &str = "declined.json";
/// Bots listed by `/api/bot/online`, at most.
const ONLINE_BOTS: u32 = 100;
/// Our rating when the account has none in the perf offered.
const DEFAULT_RATING: u32 = 1500;

/// What a matchmaking request came to.
#[derive(Debug)]
pub enum MatchEvent {
    /// The bots online and our account (for our rating).
    Found(Box<Result<(Vec<OnlineBot>, Account), ClientError>>),
    /// Our challenge to `opponent` was created (or not), with the stream
    /// that keeps it open.
    Created {
        opponent: String,
        result: Box<Result<(Challenge, ChallengeKeepAlive), ClientError>>,
    },
}

/// A bot that declined us, until when (Unix seconds), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    pub until: u64,
    pub reason: String,
}

/// Bots not to challenge for a while, by user id.
#[derive(Debug, Default)]
pub struct Cooldowns {
    skips: BTreeMap<String, Skip>,
    file: Option<PathBuf>,
}

impl Cooldowns {
    /// Read from the state directory, if there is one.
    pub fn load(state_dir: Option<&Path>) -> Cooldowns {
        let file = state::path(state_dir, FILE);
        let skips = file.as_deref().and_then(state::load).unwrap_or_default();
        Cooldowns { skips, file }
    }

    /// Skip `user` until `until` (Unix seconds), for `reason`.
    pub fn skip(&mut self, user: &str, until: u64, reason: &str, now: u64) {
        self.skips.retain(|_, s| s.until > now);
        self.skips.insert(
            user.to_lowercase(),
            Skip {
                until,
                reason: reason.to_owned(),
            },
        );
        if let Some(file) = &self.file {
            state::save(file, &self.skips);
        }
    }

    /// Why `user` is skipped at `now`, if it is.
    pub fn skipped(&self, user: &str, now: u64) -> Option<&Skip> {
        self.skips
            .get(&user.to_lowercase())
            .filter(|s| s.until > now)
    }
}

/// The perf key of a game: the speed of a clock (Lichess's estimate:
/// base + 40 x increment), or the variant's own perf.
pub fn perf_key(variant: PlayableVariant, base: u32, increment: u32) -> &'static str {
    if variant == PlayableVariant::Chess960 {
        return "chess960";
    }
    match base + 40 * increment {
        0..=29 => "ultraBullet",
        30..=179 => "bullet",
        180..=479 => "blitz",
        480..=1499 => "rapid",
        _ => "classical",
    }
}

/// The challenge we offer on attempt `n`: time controls and variants in
/// turn. `None` if the configuration offers nothing.
pub fn offer(config: &MatchmakingConfig, n: usize) -> Option<(CreateChallenge, &'static str)> {
    let clocks = config.clocks();
    let (base, increment) = *clocks.get(n % clocks.len().max(1))?;
    let variant = *config.variants.get(n % config.variants.len().max(1))?;
    let challenge = CreateChallenge {
        time: ChallengeTime::Clock {
            limit_secs: base,
            increment_secs: increment,
        },
        rated: config.rated,
        color: ChallengeColor::Random,
        variant: variant.key(),
        fen: None,
    };
    Some((challenge, perf_key(variant, base, increment)))
}

/// The opponent to challenge: a bot (not us, not closed, not skipped)
/// whose rating in `perf` is within `window` of `ours`, the closest first
/// (then by id, so the choice is stable).
pub fn pick<'a>(
    bots: &'a [OnlineBot],
    me: &str,
    perf: &str,
    ours: u32,
    window: u32,
    cooldowns: &Cooldowns,
    now: u64,
) -> Option<&'a OnlineBot> {
    bots.iter()
        .filter(|b| !b.id.eq_ignore_ascii_case(me) && !b.disabled && !b.tos_violation)
        .filter(|b| cooldowns.skipped(&b.id, now).is_none())
        .filter_map(|b| {
            let diff = perf_rating(&b.perfs, perf)?.abs_diff(ours);
            (diff <= window).then_some((diff, b))
        })
        .min_by(|(d1, b1), (d2, b2)| d1.cmp(d2).then_with(|| b1.id.cmp(&b2.id)))
        .map(|(_, b)| b)
}

/// Our pending challenge.
#[derive(Debug, Clone)]
pub struct Pending {
    pub id: String,
    pub opponent: String,
    pub since: Instant,
    /// The task that holds the challenge's stream open (Lichess keeps the
    /// challenge while it is): aborted when the challenge is settled.
    keep_alive: Option<AbortHandle>,
}

/// Where matchmaking stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Waiting to be idle long enough.
    Idle,
    /// Asking for the bots online.
    Searching,
    /// Creating a challenge.
    Creating,
    /// A challenge of ours is pending (see [`Matchmaker::pending`]).
    Pending,
}

/// Matchmaking's decisions and state.
#[derive(Debug)]
pub struct Matchmaker {
    config: MatchmakingConfig,
    stage: Stage,
    pending: Option<Pending>,
    /// Attempts so far (time controls and variants go in turn).
    attempts: usize,
    /// The perf of the attempt being made.
    perf: &'static str,
    offer: Option<CreateChallenge>,
    pub cooldowns: Cooldowns,
}

impl Matchmaker {
    pub fn new(config: MatchmakingConfig, state_dir: Option<&Path>) -> Matchmaker {
        Matchmaker {
            cooldowns: Cooldowns::load(state_dir),
            config,
            stage: Stage::Idle,
            pending: None,
            attempts: 0,
            perf: "blitz",
            offer: None,
        }
    }

    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// Whether to look for an opponent now: enabled, nothing under way,
    /// idle since `idle_since` for `idle_secs`.
    pub fn due(&self, idle_since: Instant) -> bool {
        self.config.enabled
            && self.stage == Stage::Idle
            && idle_since.elapsed() >= Duration::from_secs(self.config.idle_secs)
    }

    /// Whether a request or a challenge of ours is under way.
    pub fn busy(&self) -> bool {
        self.stage != Stage::Idle
    }

    /// Our pending challenge.
    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }

    /// Starts looking: asks for the bots online and our account.
    pub fn search(&mut self, client: &Client, tx: &mpsc::UnboundedSender<MatchEvent>) {
        let Some((offer, perf)) = offer(&self.config, self.attempts) else {
            return;
        };
        self.attempts += 1;
        self.stage = Stage::Searching;
        self.perf = perf;
        self.offer = Some(offer);
        let client = client.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = async {
                let bots = client.online_bots(ONLINE_BOTS).await?;
                let account = client.account().await?;
                Ok((bots, account))
            }
            .await;
            let _ = tx.send(MatchEvent::Found(Box::new(result)));
        });
    }

    /// The bots online came: challenge one, if one fits. Returns the
    /// opponent challenged.
    pub fn found(
        &mut self,
        bots: &[OnlineBot],
        account: &Account,
        client: &Client,
        tx: &mpsc::UnboundedSender<MatchEvent>,
        now: u64,
    ) -> Option<String> {
        self.stage = Stage::Idle;
        let ours = perf_rating(&account.perfs, self.perf).unwrap_or(DEFAULT_RATING);
        let window = self.config.rating_window;
        let Some(bot) = pick(
            bots,
            &account.id,
            self.perf,
            ours,
            window,
            &self.cooldowns,
            now,
        ) else {
            tracing::info!(
                online = bots.len(),
                perf = self.perf,
                rating = ours,
                window,
                "matchmaking: no bot online fits"
            );
            return None;
        };
        let offer = self.offer.clone()?;
        let opponent = bot.id.clone();
        tracing::info!(
            opponent = %opponent,
            rating = perf_rating(&bot.perfs, self.perf).unwrap_or(0),
            ours,
            perf = self.perf,
            time = ?offer.time,
            variant = offer.variant.as_str(),
            rated = offer.rated,
            "matchmaking: challenging"
        );
        self.stage = Stage::Creating;
        let client = client.clone();
        let tx = tx.clone();
        let who = opponent.clone();
        tokio::spawn(async move {
            let result = Box::new(client.create_challenge_kept(&who, &offer).await);
            let _ = tx.send(MatchEvent::Created {
                opponent: who,
                result,
            });
        });
        Some(opponent)
    }

    /// A request failed: back to idle.
    pub fn failed(&mut self) {
        self.stage = Stage::Idle;
    }

    /// Our challenge was created; `keep_alive` holds it open until it is
    /// answered or settled here.
    pub fn created(&mut self, id: String, opponent: String, keep_alive: ChallengeKeepAlive) {
        self.stage = Stage::Pending;
        let challenge = id.clone();
        let task = tokio::spawn(async move {
            let done = keep_alive.done().await;
            tracing::debug!(challenge = %challenge, done = done.as_deref().unwrap_or("-"), "our challenge's stream ended");
        });
        self.pending = Some(Pending {
            id,
            opponent,
            since: Instant::now(),
            keep_alive: Some(task.abort_handle()),
        });
    }

    /// The opponent could not be challenged (refused by Lichess): skipped
    /// like a decline, or for `secs` when Lichess says how long (the
    /// opponent's daily cap).
    pub fn refused(&mut self, opponent: &str, reason: &str, secs: Option<u64>, now: u64) {
        self.stage = Stage::Idle;
        match secs {
            Some(secs) => {
                tracing::info!(opponent = %opponent, reason, skip_s = secs, "matchmaking: skipping this bot until its limit lifts");
                self.cooldowns.skip(opponent, now + secs, reason, now);
            }
            None => self.cool_down(opponent, reason, now),
        }
    }

    /// Our pending challenge `id` ended: `declined` with a reason (the
    /// opponent is skipped for a while), or it became a game (`None`).
    pub fn settled(&mut self, id: &str, declined: Option<&str>, now: u64) -> bool {
        let Some(pending) = self.pending.take_if(|p| p.id == id) else {
            return false;
        };
        if let Some(task) = &pending.keep_alive {
            task.abort();
        }
        self.stage = Stage::Idle;
        if let Some(reason) = declined {
            self.cool_down(&pending.opponent, reason, now);
        }
        true
    }

    /// Our pending challenge, if it waited longer than the timeout.
    pub fn timed_out(&self) -> Option<&Pending> {
        let timeout = Duration::from_secs(self.config.challenge_timeout_secs);
        self.pending
            .as_ref()
            .filter(|p| p.since.elapsed() >= timeout)
    }

    fn cool_down(&mut self, opponent: &str, reason: &str, now: u64) {
        let until = now + self.config.decline_cooldown_secs;
        tracing::info!(opponent = %opponent, reason, skip_s = self.config.decline_cooldown_secs, "matchmaking: skipping this bot for a while");
        self.cooldowns.skip(opponent, until, reason, now);
    }
}

/// Withdraws our challenge `id` in the background.
pub fn spawn_cancel(client: &Client, id: String) {
    let client = client.clone();
    tokio::spawn(async move {
        match client.cancel_challenge(&id).await {
            Ok(()) => tracing::info!(challenge = %id, "our challenge cancelled"),
            Err(e) => tracing::warn!(challenge = %id, "cannot cancel our challenge: {e}"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot(id: &str, rating: u32) -> OnlineBot {
        serde_json::from_value(serde_json::json!({
            "id": id, "username": id, "title": "BOT",
            "perfs": {"blitz": {"rating": rating, "games": 10}},
        }))
        .unwrap()
    }

    #[test]
    fn picks_the_closest_inside_the_window() {
        let bots = [
            bot("far", 2500),
            bot("me", 1500),
            bot("near", 1560),
            bot("nearer", 1450),
        ];
        let none = Cooldowns::default();
        let pick = |cd: &Cooldowns, window| {
            pick(&bots, "me", "blitz", 1500, window, cd, 100).map(|b| b.id.clone())
        };
        assert_eq!(pick(&none, 200).as_deref(), Some("nearer"));
        assert_eq!(pick(&none, 10), None);
        let mut cd = Cooldowns::default();
        cd.skip("Nearer", 200, "tooFast", 100);
        assert_eq!(pick(&cd, 200).as_deref(), Some("near"));
        assert_eq!(cd.skipped("nearer", 100).unwrap().reason, "tooFast");
        assert!(cd.skipped("nearer", 200).is_none());
        // No rating in the perf offered: not a candidate.
        assert_eq!(
            super::pick(&bots, "me", "rapid", 1500, 4000, &none, 100).map(|b| b.id.clone()),
            None
        );
    }

    #[test]
    fn offers_in_turn() {
        let config = MatchmakingConfig {
            time_controls: vec!["1+0".into(), "3+2".into()],
            variants: vec![PlayableVariant::Standard, PlayableVariant::Chess960],
            ..MatchmakingConfig::default()
        };
        let (first, perf) = offer(&config, 0).unwrap();
        assert_eq!(perf, "bullet");
        assert_eq!(
            first.time,
            ChallengeTime::Clock {
                limit_secs: 60,
                increment_secs: 0
            }
        );
        let (_, perf) = offer(&config, 1).unwrap();
        assert_eq!(perf, "chess960");
        assert_eq!(perf_key(PlayableVariant::Standard, 180, 2), "blitz");
        assert_eq!(perf_key(PlayableVariant::Standard, 600, 5), "rapid");
    }

    #[test]
    fn cooldowns_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut cd = Cooldowns::load(Some(dir.path()));
        cd.skip("Slowbot", 500, "timeout", 100);
        let again = Cooldowns::load(Some(dir.path()));
        assert_eq!(again.skipped("slowbot", 400).unwrap().reason, "timeout");
    }
}
