//! Matchmaking: when the bot has been idle for `matchmaking.idle_secs`,
//! challenge a bot that is online (`GET /api/bot/online`), rated within
//! the configured range of us in the perf offered, with the time controls
//! (clocks, or days for correspondence) and variants of the configuration
//! taken in turn.
//!
//! The [`Matchmaker`] holds the decisions and the state, and makes no
//! request: the daemon owns the timing, asks Lichess what
//! [`Matchmaker::search`] names, hands the answer to
//! [`Matchmaker::found`] and sends the challenge it picks
//! (`src/bot/daemon/outgoing.rs`). One challenge of ours is pending at
//! most, created with Lichess's `keepAliveStream` (a real-time challenge
//! made without it expires after 20 s) and held open by a task of the
//! daemon's; it is cancelled after
//! `challenge_timeout_secs`. A decline teaches what to avoid (that clock
//! or that variant with that bot, or the bot for a while; see
//! [`declines`](super::declines)).
//!
//! **Pairs.** With `matchmaking.pairs`, a game our challenge started is
//! followed by the return game: the same bot, clock and variant, the
//! colours swapped, challenged as soon as the bot is free. `kaissa ctl
//! challenge USER ... pairs=N` plans N such pairs the same way
//! ([`Matchmaker::plan`]); a decline drops the rest.
//!
//! **Variety.** The opponent is chosen among the bots that fit
//! (`matchmaking.selection`: weighted at random, in rotation, or the
//! nearest), so the daily bot-game cap is not spent on one bot. The games
//! against each bot in the last day ([`Played`], in
//! `engine.state_dir/played.json`) lower its chance and keep it out for
//! `played_cooldown_secs` times their number; `challenge.block_list`,
//! `challenge.allow_list` and the block lists apply to our challenges as
//! to theirs. A bot in a game now (`/api/users/status`) is skipped. The
//! opponent's rating minus ours must be within `min_rating_diff` and
//! `max_rating_diff`; the nearer `target_rating_diff`, the likelier.

use super::declines::{Aspects, Cooldowns};
use crate::bot::store::state;
use crate::config::{MatchmakingConfig, PlayableVariant, Selection};
use crate::lichess::client::{ChallengeTime, CreateChallenge};
use crate::lichess::model::{Account, ChallengeColor, OnlineBot, perf_rating};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// The played games' file.
pub const PLAYED_FILE: &str = "played.json";
/// Games against a bot are remembered this long (Unix seconds).
const PLAYED_WINDOW: u64 = 86_400;
/// Our account (for our ratings) is read again after this: `GET
/// /api/account` is limited (30 per 5 minutes), a rating moves slowly.
const ACCOUNT_FRESH: std::time::Duration = std::time::Duration::from_secs(600);
/// Our rating when the account has none in the perf offered.
pub const DEFAULT_RATING: u32 = 1500;

/// When we played each bot in the last day (Unix seconds), by user id.
#[derive(Debug, Default)]
pub struct Played {
    games: BTreeMap<String, Vec<u64>>,
    file: Option<PathBuf>,
}

impl Played {
    /// Read from the state directory, if there is one.
    pub fn load(state_dir: Option<&Path>) -> Played {
        let file = state::path(state_dir, PLAYED_FILE);
        let games = file.as_deref().and_then(state::load).unwrap_or_default();
        Played { games, file }
    }

    /// A game against `user` started at `now`.
    pub fn record(&mut self, user: &str, now: u64) {
        for times in self.games.values_mut() {
            times.retain(|&t| t + PLAYED_WINDOW > now);
        }
        self.games.retain(|_, times| !times.is_empty());
        self.games.entry(user.to_lowercase()).or_default().push(now);
        if let Some(file) = &self.file {
            state::save(file, &self.games);
        }
    }

    /// The games against `user` in the last day, oldest first.
    pub fn recent(&self, user: &str, now: u64) -> Vec<u64> {
        self.games
            .get(&user.to_lowercase())
            .map(|times| {
                times
                    .iter()
                    .copied()
                    .filter(|&t| t + PLAYED_WINDOW > now)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `user` is in its cooldown after a game: `cooldown` seconds
    /// per game against it in the last day, from the last one.
    pub fn cooling(&self, user: &str, cooldown: u64, now: u64) -> bool {
        let recent = self.recent(user, now);
        recent
            .last()
            .is_some_and(|&last| last + cooldown * recent.len() as u64 > now)
    }
}

/// The perf key of a game: the speed of a clock (Lichess's estimate:
/// base + 40 x increment) in standard chess and from a position,
/// `correspondence` for days per move, else the variant's own perf
/// (Chess960 and the other variants: the perf key is the variant key).
pub fn perf_key(variant: PlayableVariant, time: &ChallengeTime) -> &'static str {
    if !matches!(
        variant,
        PlayableVariant::Standard | PlayableVariant::FromPosition
    ) {
        return variant.key().as_str();
    }
    let ChallengeTime::Clock {
        limit_secs,
        increment_secs,
    } = *time
    else {
        return "correspondence";
    };
    match limit_secs + 40 * increment_secs {
        0..=29 => "ultraBullet",
        30..=179 => "bullet",
        180..=479 => "blitz",
        480..=1499 => "rapid",
        _ => "classical",
    }
}

/// What a bot may decline in an offer: its time control and variant.
pub fn aspects(offer: &CreateChallenge) -> Aspects {
    let time = match offer.time {
        ChallengeTime::Clock {
            limit_secs,
            increment_secs,
        } => format!("time {limit_secs}+{increment_secs}"),
        ChallengeTime::Correspondence { days } => format!("time {days}d"),
        ChallengeTime::Unlimited => "time unlimited".to_owned(),
    };
    Aspects {
        time,
        variant: format!("variant {}", offer.variant.as_str()),
    }
}

/// The challenge we offer on attempt `n`: time controls and variants in
/// turn. `None` if the configuration offers nothing.
pub fn offer(config: &MatchmakingConfig, n: usize) -> Option<(CreateChallenge, &'static str)> {
    let times = config.times();
    let time = *times.get(n % times.len().max(1))?;
    let variant = *config.variants.get(n % config.variants.len().max(1))?;
    let challenge = CreateChallenge {
        time,
        rated: config.rated,
        color: if config.pairs {
            ChallengeColor::White
        } else {
            ChallengeColor::Random
        },
        variant: variant.key(),
        fen: None,
    };
    Some((challenge, perf_key(variant, &time)))
}

/// The ratings we look for: the opponent's minus ours between `min` and
/// `max`, the nearer `target` the better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatingRange {
    pub min: i32,
    pub max: i32,
    pub target: i32,
}

impl RatingRange {
    pub fn of(config: &MatchmakingConfig) -> RatingRange {
        RatingRange {
            min: config.min_rating_diff,
            max: config.max_rating_diff,
            target: config.target_rating_diff,
        }
    }

    /// How far `theirs` is from the target, if it is in the range.
    fn distance(self, theirs: u32, ours: u32) -> Option<u32> {
        let diff = i64::from(theirs) - i64::from(ours);
        (i64::from(self.min)..=i64::from(self.max))
            .contains(&diff)
            .then(|| diff.abs_diff(i64::from(self.target)) as u32)
    }

    /// The farthest a rating in the range can be from the target.
    fn reach(self) -> u32 {
        self.target
            .abs_diff(self.min)
            .max(self.target.abs_diff(self.max))
            .max(1)
    }
}

/// Who may be challenged with an offer, besides the ratings.
#[derive(Debug, Clone, Copy)]
pub struct Eligibility<'a> {
    /// Our user id.
    pub me: &'a str,
    pub cooldowns: &'a Cooldowns,
    pub played: &'a Played,
    pub played_cooldown_secs: u64,
    /// `challenge.block_list` and `challenge.allow_list` (empty: anyone).
    pub block_list: &'a [String],
    pub allow_list: &'a [String],
    /// The users of the online block lists, lower case.
    pub online_blocked: &'a BTreeSet<String>,
    /// What we offer (a bot that declined it lately is left out).
    pub offer: &'a Aspects,
    pub now: u64,
}

impl Eligibility<'_> {
    fn admits(&self, bot: &OnlineBot) -> bool {
        !bot.id.eq_ignore_ascii_case(self.me)
            && !bot.disabled
            && !bot.tos_violation
            && !bot.playing
            && self.cooldowns.skipped(&bot.id, self.now).is_none()
            && !self.cooldowns.offer_skipped(&bot.id, self.offer, self.now)
            && !self
                .played
                .cooling(&bot.id, self.played_cooldown_secs, self.now)
            && lists_admit(
                &bot.id,
                self.block_list,
                self.allow_list,
                self.online_blocked,
            )
    }
}

/// Whether the lists let `user` be challenged: not on `block_list` nor
/// the online block lists (`online_blocked`, lower case), and on
/// `allow_list` unless it is empty.
fn lists_admit(
    user: &str,
    block_list: &[String],
    allow_list: &[String],
    online_blocked: &BTreeSet<String>,
) -> bool {
    let listed = |list: &[String]| list.iter().any(|u| u.eq_ignore_ascii_case(user));
    !listed(block_list)
        && !online_blocked.contains(&user.to_lowercase())
        && (allow_list.is_empty() || listed(allow_list))
}

/// The opponent to challenge: a bot that may be challenged
/// ([`Eligibility`]) whose rating in `perf` is in `range` of `ours`,
/// chosen by `selection`; `roll` (in [0, 1)) is the random draw of
/// [`Selection::Weighted`].
pub fn pick<'a>(
    bots: &'a [OnlineBot],
    perf: &str,
    ours: u32,
    range: RatingRange,
    who: &Eligibility<'_>,
    selection: Selection,
    roll: f64,
) -> Option<&'a OnlineBot> {
    let mut fits: Vec<(u32, &OnlineBot)> = bots
        .iter()
        .filter(|b| who.admits(b))
        .filter_map(|b| Some((range.distance(perf_rating(&b.perfs, perf)?, ours)?, b)))
        .collect();
    // The nearest the target first, then by id: a stable order.
    fits.sort_by(|(d1, b1), (d2, b2)| d1.cmp(d2).then_with(|| b1.id.cmp(&b2.id)));
    let games = |b: &OnlineBot| who.played.recent(&b.id, who.now);
    match selection {
        Selection::Nearest => fits.first().map(|(_, b)| *b),
        Selection::Rotate => fits
            .iter()
            .min_by_key(|(_, b)| games(b).last().copied().unwrap_or(0))
            .map(|(_, b)| *b),
        Selection::Weighted => {
            // Closeness from 1 (on target) down to 0.1 (the range's far
            // edge), divided by one more than the games of the last day.
            let weight = |distance: u32, b: &OnlineBot| {
                let closeness = 1.0 - 0.9 * f64::from(distance) / f64::from(range.reach());
                closeness / (1 + games(b).len()) as f64
            };
            let weights: Vec<f64> = fits.iter().map(|(d, b)| weight(*d, b)).collect();
            let mut target = roll.clamp(0.0, 1.0) * weights.iter().sum::<f64>();
            for ((_, b), w) in fits.iter().zip(&weights) {
                if target < *w {
                    return Some(*b);
                }
                target -= w;
            }
            fits.last().map(|(_, b)| *b)
        }
    }
}

/// What to ask Lichess for when looking for an opponent: the bots online,
/// and our account (for our rating in `perf`) unless `account` is fresh.
#[derive(Debug)]
pub struct Search {
    pub perf: &'static str,
    pub account: Option<Account>,
}

/// Our pending challenge.
#[derive(Debug, Clone)]
pub struct Pending {
    pub id: String,
    pub opponent: String,
    pub since: Instant,
    /// What we offered.
    pub offer: CreateChallenge,
    /// The task that holds the challenge's stream open (Lichess keeps the
    /// challenge while it is): aborted when the challenge is settled.
    keep_alive: Option<AbortHandle>,
}

/// How our pending challenge ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Accepted: the game started.
    Accepted,
    /// Declined for this reason (`timeout`: no answer).
    Declined(&'a str),
    /// We withdrew it (an incoming challenge needed its slot).
    Withdrawn,
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
    /// Games planned (pairs: matchmaking's return games, `kaissa ctl
    /// challenge ... pairs=N`), challenged in turn when the bot is free.
    planned: VecDeque<(String, CreateChallenge)>,
    /// The planned game being challenged for, until it is created.
    creating_planned: Option<(String, CreateChallenge)>,
    pub cooldowns: Cooldowns,
    pub played: Played,
    /// `challenge.block_list` and `challenge.allow_list`.
    block_list: Vec<String>,
    allow_list: Vec<String>,
    /// The users of the online block lists.
    online_blocked: BTreeSet<String>,
    /// Our account as last read, and when.
    account: Option<(Account, tokio::time::Instant)>,
}

impl Matchmaker {
    /// Matchmaking by `config`, never challenging a user of
    /// `block_list`, nor one missing from a non-empty `allow_list`.
    pub fn new(
        config: MatchmakingConfig,
        block_list: Vec<String>,
        allow_list: Vec<String>,
        state_dir: Option<&Path>,
    ) -> Matchmaker {
        Matchmaker {
            cooldowns: Cooldowns::load(state_dir),
            played: Played::load(state_dir),
            block_list,
            allow_list,
            online_blocked: BTreeSet::new(),
            account: None,
            config,
            stage: Stage::Idle,
            pending: None,
            attempts: 0,
            perf: "blitz",
            offer: None,
            planned: VecDeque::new(),
            creating_planned: None,
        }
    }

    /// The online block lists changed: their users are not challenged.
    pub fn set_online_blocked(&mut self, users: &BTreeSet<String>) {
        self.online_blocked.clone_from(users);
    }

    /// Switches matchmaking on or off (`kaissa ctl matchmaking`).
    pub fn set_enabled(&mut self, on: bool) {
        self.config.enabled = on;
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

    /// Plans `pairs` pairs of games against `opponent` on `offer`'s terms:
    /// White then Black each pair (or the offer's colour first), each
    /// challenged when the bot is free and the one before has started.
    pub fn plan(&mut self, opponent: &str, offer: CreateChallenge, pairs: u32) {
        let first = match offer.color {
            ChallengeColor::Black => ChallengeColor::Black,
            _ => ChallengeColor::White,
        };
        let other = match first {
            ChallengeColor::Black => ChallengeColor::White,
            _ => ChallengeColor::Black,
        };
        for _ in 0..pairs {
            for color in [first, other] {
                let mut game = offer.clone();
                game.color = color;
                self.planned.push_back((opponent.to_owned(), game));
            }
        }
    }

    /// Whether games are planned.
    pub fn has_planned(&self) -> bool {
        !self.planned.is_empty()
    }

    /// The next planned game, when nothing else is under way: whom to
    /// challenge with what (the daemon sends it at once, without waiting
    /// `idle_secs`, matchmaking on or off). A bot blocked meanwhile does
    /// not get it.
    pub fn next_planned(&mut self) -> Option<(String, CreateChallenge)> {
        if self.stage != Stage::Idle {
            return None;
        }
        let (opponent, offer) = self.planned.pop_front()?;
        if !lists_admit(
            &opponent,
            &self.block_list,
            &self.allow_list,
            &self.online_blocked,
        ) {
            self.drop_planned(&opponent, "blocked");
            return None;
        }
        tracing::info!(opponent = %opponent, time = ?offer.time, variant = offer.variant.as_str(), color = ?offer.color, left = self.planned.len(), "matchmaking: challenging for a planned game of a pair");
        self.offer = Some(offer.clone());
        self.stage = Stage::Creating;
        self.creating_planned = Some((opponent.clone(), offer.clone()));
        Some((opponent, offer))
    }

    /// Whether the challenge being created is a planned game (its
    /// opponent may be a human: `kaissa ctl challenge ... pairs=N`).
    pub fn creating_planned(&self) -> bool {
        self.creating_planned.is_some()
    }

    /// The challenge could not be created for a passing reason (a 429, a
    /// network error) or was withdrawn unanswered for want of a slot: a
    /// planned game goes back to the front of the plan.
    pub fn not_sent(&mut self) {
        if let Some(game) = self.creating_planned.take() {
            self.planned.push_front(game);
        }
        self.stage = Stage::Idle;
    }

    /// Drops the games planned against `opponent` (it declined one).
    fn drop_planned(&mut self, opponent: &str, why: &str) {
        let before = self.planned.len();
        self.planned
            .retain(|(o, _)| !o.eq_ignore_ascii_case(opponent));
        let dropped = before - self.planned.len();
        if dropped > 0 {
            tracing::info!(opponent = %opponent, dropped, why, "matchmaking: the planned games against this bot are dropped");
        }
    }

    /// Starts looking: what to ask Lichess for (the bots online, and our
    /// account unless a fresh one is known). `None` when there is nothing
    /// to offer.
    pub fn search(&mut self) -> Option<Search> {
        let (offer, perf) = offer(&self.config, self.attempts)?;
        self.attempts += 1;
        self.stage = Stage::Searching;
        self.perf = perf;
        self.offer = Some(offer);
        let account = self
            .account
            .as_ref()
            .filter(|(_, at)| at.elapsed() < ACCOUNT_FRESH)
            .map(|(a, _)| a.clone());
        Some(Search { perf, account })
    }

    /// The bots online came: whom to challenge, and with what, if one
    /// fits. The daemon sends the challenge and reports with
    /// [`created`](Self::created), [`refused`](Self::refused) or
    /// [`failed`](Self::failed).
    pub fn found(
        &mut self,
        bots: &[OnlineBot],
        account: &Account,
        now: u64,
    ) -> Option<(String, CreateChallenge)> {
        self.stage = Stage::Idle;
        if self
            .account
            .as_ref()
            .is_none_or(|(a, at)| a != account || at.elapsed() >= ACCOUNT_FRESH)
        {
            self.account = Some((account.clone(), tokio::time::Instant::now()));
        }
        let offer = self.offer.clone()?;
        let ours = perf_rating(&account.perfs, self.perf).unwrap_or(DEFAULT_RATING);
        let range = RatingRange::of(&self.config);
        let offered = aspects(&offer);
        let who = Eligibility {
            me: &account.id,
            cooldowns: &self.cooldowns,
            played: &self.played,
            played_cooldown_secs: self.config.played_cooldown_secs,
            block_list: &self.block_list,
            allow_list: &self.allow_list,
            online_blocked: &self.online_blocked,
            offer: &offered,
            now,
        };
        let selection = self.config.selection;
        let Some(bot) = pick(
            bots,
            self.perf,
            ours,
            range,
            &who,
            selection,
            fastrand::f64(),
        ) else {
            tracing::info!(
                online = bots.len(),
                perf = self.perf,
                rating = ours,
                min_diff = range.min,
                max_diff = range.max,
                "matchmaking: no bot online fits"
            );
            return None;
        };
        let opponent = bot.id.clone();
        tracing::info!(
            opponent = %opponent,
            selection = ?selection,
            games_today = self.played.recent(&opponent, now).len(),
            rating = perf_rating(&bot.perfs, self.perf).unwrap_or(0),
            ours,
            perf = self.perf,
            time = ?offer.time,
            variant = offer.variant.as_str(),
            rated = offer.rated,
            "matchmaking: challenging"
        );
        self.stage = Stage::Creating;
        Some((opponent, offer))
    }

    /// A request failed: back to idle.
    pub fn failed(&mut self) {
        self.creating_planned = None;
        self.stage = Stage::Idle;
    }

    /// Our challenge was created; the task of `keep_alive` holds it open
    /// until it is answered, and is aborted when it is settled here (none:
    /// it was answered before we heard it was created).
    pub fn created(&mut self, id: String, opponent: String, keep_alive: Option<AbortHandle>) {
        self.creating_planned = None;
        let Some(offer) = self.offer.clone() else {
            return;
        };
        self.stage = Stage::Pending;
        self.pending = Some(Pending {
            id,
            opponent,
            since: Instant::now(),
            offer,
            keep_alive,
        });
    }

    /// The opponent could not be challenged (refused by Lichess): skipped
    /// like a decline, or for `secs` when Lichess says how long (the
    /// opponent's daily cap).
    pub fn refused(&mut self, opponent: &str, reason: &str, secs: Option<u64>, now: u64) {
        self.creating_planned = None;
        self.stage = Stage::Idle;
        let secs = secs.unwrap_or(self.config.decline_cooldown_secs);
        tracing::info!(opponent = %opponent, reason, skip_s = secs, "matchmaking: skipping this bot for a while");
        self.cooldowns.skip(opponent, now + secs, reason, now);
        self.drop_planned(opponent, reason);
    }

    /// Our pending challenge `id` ended (see [`Outcome`]): a decline
    /// teaches what to avoid, an accepted first game of a pair plans the
    /// return game. Whether `id` was our pending challenge.
    pub fn settled(&mut self, id: &str, outcome: Outcome<'_>, now: u64) -> bool {
        let Some(pending) = self.pending.take_if(|p| p.id == id) else {
            return false;
        };
        if let Some(task) = &pending.keep_alive {
            task.abort();
        }
        self.stage = Stage::Idle;
        let opponent = &pending.opponent;
        match outcome {
            Outcome::Accepted => {
                self.cooldowns.played(opponent);
                let planned = self
                    .planned
                    .iter()
                    .any(|(o, _)| o.eq_ignore_ascii_case(opponent));
                if self.config.pairs && !planned && pending.offer.color == ChallengeColor::White {
                    // Matchmaking's pair: the return game, next.
                    let mut back = pending.offer.clone();
                    back.color = ChallengeColor::Black;
                    self.planned.push_front((opponent.clone(), back));
                }
            }
            Outcome::Declined(reason) => {
                self.drop_planned(opponent, reason);
                let offered = aspects(&pending.offer);
                let (lesson, blocked) =
                    self.cooldowns
                        .declined(opponent, reason, &offered, &self.config, now);
                match blocked {
                    Some(n) => {
                        tracing::info!(opponent = %opponent, reason, declines = n, block_s = self.config.block_secs, "matchmaking: this bot declines every time; leaving it alone")
                    }
                    None => {
                        tracing::info!(opponent = %opponent, reason, lesson = ?lesson, time = %offered.time, variant = %offered.variant, "matchmaking: declined; avoiding what it declined")
                    }
                }
            }
            Outcome::Withdrawn => {}
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

    static NOBODY: BTreeSet<String> = BTreeSet::new();

    static BLITZ: std::sync::LazyLock<Aspects> = std::sync::LazyLock::new(|| Aspects {
        time: "time 180+2".to_owned(),
        variant: "variant standard".to_owned(),
    });

    /// Who may be challenged at `now` = 100 000 with a 3+2 standard
    /// game, without lists.
    fn anyone<'a>(cooldowns: &'a Cooldowns, played: &'a Played) -> Eligibility<'a> {
        Eligibility {
            me: "me",
            cooldowns,
            played,
            played_cooldown_secs: 1800,
            block_list: &[],
            allow_list: &[],
            online_blocked: &NOBODY,
            offer: &BLITZ,
            now: 100_000,
        }
    }

    /// Within `window` either side of ours, the nearest best.
    fn window(window: i32) -> RatingRange {
        RatingRange {
            min: -window,
            max: window,
            target: 0,
        }
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
        let played = Played::default();
        let pick = |cd: &Cooldowns, w| {
            pick(
                &bots,
                "blitz",
                1500,
                window(w),
                &anyone(cd, &played),
                Selection::Nearest,
                0.5,
            )
            .map(|b| b.id.clone())
        };
        assert_eq!(pick(&none, 200).as_deref(), Some("nearer"));
        assert_eq!(pick(&none, 10), None);
        let mut cd = Cooldowns::default();
        cd.skip("Nearer", 100_100, "tooFast", 100_000);
        assert_eq!(pick(&cd, 200).as_deref(), Some("near"));
        assert_eq!(cd.skipped("nearer", 100_000).unwrap().reason, "tooFast");
        assert!(cd.skipped("nearer", 100_100).is_none());
        // No rating in the perf offered: not a candidate.
        let who = anyone(&none, &played);
        assert_eq!(
            super::pick(
                &bots,
                "rapid",
                1500,
                window(4000),
                &who,
                Selection::Weighted,
                0.5
            )
            .map(|b| b.id.clone()),
            None
        );
    }

    #[test]
    fn the_block_and_allow_lists_apply_to_our_challenges() {
        let bots = [bot("near", 1510), bot("nearer", 1505)];
        let (none, played) = (Cooldowns::default(), Played::default());
        let block = ["NEARER".to_owned()];
        let who = Eligibility {
            block_list: &block,
            ..anyone(&none, &played)
        };
        let picked = pick(
            &bots,
            "blitz",
            1500,
            window(100),
            &who,
            Selection::Nearest,
            0.0,
        );
        assert_eq!(picked.map(|b| b.id.as_str()), Some("near"));
        let online: BTreeSet<String> = ["near".to_owned()].into();
        let who = Eligibility {
            block_list: &block,
            online_blocked: &online,
            ..anyone(&none, &played)
        };
        assert!(
            pick(
                &bots,
                "blitz",
                1500,
                window(100),
                &who,
                Selection::Nearest,
                0.0
            )
            .is_none()
        );
        let allow = ["nobody".to_owned()];
        let who = Eligibility {
            allow_list: &allow,
            ..anyone(&none, &played)
        };
        assert!(
            pick(
                &bots,
                "blitz",
                1500,
                window(100),
                &who,
                Selection::Nearest,
                0.0
            )
            .is_none()
        );
    }

    #[test]
    fn weighted_choice_spreads_over_the_window_and_away_from_recent_opponents() {
        let bots = [bot("a", 1500), bot("b", 1550), bot("c", 1600)];
        let none = Cooldowns::default();
        let mut played = Played::default();
        let count = |played: &Played| {
            let who = Eligibility {
                played_cooldown_secs: 0,
                ..anyone(&none, played)
            };
            let mut counts = BTreeMap::new();
            for i in 0..1000 {
                let roll = (f64::from(i) + 0.5) / 1000.0;
                let b = pick(
                    &bots,
                    "blitz",
                    1500,
                    window(100),
                    &who,
                    Selection::Weighted,
                    roll,
                )
                .unwrap();
                *counts.entry(b.id.clone()).or_insert(0) += 1;
            }
            counts
        };
        // Weights 1, 0.55, 0.1: every bot gets games, the closest most.
        let even = count(&played);
        assert_eq!(even["a"], 606, "{even:?}");
        assert_eq!(even["b"], 333, "{even:?}");
        assert_eq!(even["c"], 61, "{even:?}");
        // Three games against "a" today divide its weight by four.
        for t in [90_000, 95_000, 99_000] {
            played.record("A", t);
        }
        let after = count(&played);
        assert!(after["a"] < 400 && after["b"] > 450, "{after:?}");
    }

    #[test]
    fn a_cooldown_after_games_that_grows_with_repeats_and_rotation() {
        let bots = [bot("a", 1500), bot("b", 1550)];
        let none = Cooldowns::default();
        let dir = tempfile::tempdir().unwrap();
        let mut played = Played::load(Some(dir.path()));
        played.record("a", 99_000);
        let who = anyone(&none, &played);
        // One game 1000 s ago: 1800 s of cooldown.
        assert!(played.cooling("a", 1800, 100_000));
        let picked = pick(
            &bots,
            "blitz",
            1500,
            window(100),
            &who,
            Selection::Nearest,
            0.0,
        );
        assert_eq!(picked.map(|b| b.id.as_str()), Some("b"));
        assert!(!played.cooling("a", 1800, 100_800));
        // Two games: twice as long, from the last.
        played.record("a", 101_000);
        assert!(played.cooling("a", 1800, 104_500));
        assert!(!played.cooling("a", 1800, 104_600));
        // A day later they are forgotten.
        assert!(played.recent("a", 200_000).is_empty());
        // Kept across restarts.
        let again = Played::load(Some(dir.path()));
        assert_eq!(again.recent("A", 101_000), vec![99_000, 101_000]);
        // Rotation: the bot never played comes first, then the one played
        // least recently.
        let who = Eligibility {
            played_cooldown_secs: 0,
            ..anyone(&none, &again)
        };
        let picked = pick(
            &bots,
            "blitz",
            1500,
            window(100),
            &who,
            Selection::Rotate,
            0.0,
        );
        assert_eq!(picked.map(|b| b.id.as_str()), Some("b"));
    }

    #[test]
    fn offers_in_turn() {
        let config = MatchmakingConfig {
            time_controls: vec!["1+0".into(), "3+2".into()],
            variants: vec![PlayableVariant::Standard, PlayableVariant::Chess960],
            ..MatchmakingConfig::default()
        };
        let (first, perf) = offer(&config, 0).unwrap();
        assert_eq!(first.color, ChallengeColor::Random);
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
        let clock = |limit_secs, increment_secs| ChallengeTime::Clock {
            limit_secs,
            increment_secs,
        };
        assert_eq!(perf_key(PlayableVariant::Standard, &clock(180, 2)), "blitz");
        assert_eq!(perf_key(PlayableVariant::Standard, &clock(600, 5)), "rapid");
        assert_eq!(perf_key(PlayableVariant::Atomic, &clock(180, 2)), "atomic");
        assert_eq!(
            perf_key(PlayableVariant::KingOfTheHill, &clock(60, 0)),
            "kingOfTheHill"
        );
        assert_eq!(
            perf_key(PlayableVariant::FromPosition, &clock(60, 0)),
            "bullet"
        );
        // Correspondence, and pairs: White first.
        let config = MatchmakingConfig {
            time_controls: vec!["3d".into()],
            pairs: true,
            ..MatchmakingConfig::default()
        };
        let (first, perf) = offer(&config, 0).unwrap();
        assert_eq!(perf, "correspondence");
        assert_eq!(first.time, ChallengeTime::Correspondence { days: 3 });
        assert_eq!(first.color, ChallengeColor::White);
        assert_eq!(aspects(&first).time, "time 3d");
    }

    #[test]
    fn the_rating_range_may_lean_up() {
        let bots = [
            bot("weaker", 1400),
            bot("even", 1500),
            bot("stronger", 1650),
        ];
        let (none, played) = (Cooldowns::default(), Played::default());
        let who = anyone(&none, &played);
        // Only stronger bots, 100 to 300 above us, 200 above best.
        let up = RatingRange {
            min: 100,
            max: 300,
            target: 200,
        };
        for selection in [Selection::Nearest, Selection::Weighted, Selection::Rotate] {
            let picked = pick(&bots, "blitz", 1500, up, &who, selection, 0.3);
            assert_eq!(picked.map(|b| b.id.as_str()), Some("stronger"));
        }
        // Even or weaker: the target says which first.
        let down = RatingRange {
            min: -200,
            max: 0,
            target: -100,
        };
        let picked = pick(&bots, "blitz", 1500, down, &who, Selection::Nearest, 0.0);
        assert_eq!(picked.map(|b| b.id.as_str()), Some("weaker"));
    }

    #[test]
    fn a_declined_offer_skips_that_bot_for_that_offer_only() {
        let bots = [bot("picky", 1510), bot("other", 1550)];
        let played = Played::default();
        let mut cd = Cooldowns::default();
        let config = MatchmakingConfig::default();
        cd.declined("picky", "tooFast", &BLITZ, &config, 99_000);
        let who = anyone(&cd, &played);
        let picked = pick(
            &bots,
            "blitz",
            1500,
            window(100),
            &who,
            Selection::Nearest,
            0.0,
        );
        assert_eq!(picked.map(|b| b.id.as_str()), Some("other"));
        let rapid = Aspects {
            time: "time 600+5".to_owned(),
            variant: "variant standard".to_owned(),
        };
        let who = Eligibility {
            offer: &rapid,
            ..anyone(&cd, &played)
        };
        let picked = pick(
            &bots,
            "blitz",
            1500,
            window(100),
            &who,
            Selection::Nearest,
            0.0,
        );
        assert_eq!(picked.map(|b| b.id.as_str()), Some("picky"));
    }

    #[test]
    fn a_planned_game_not_sent_stays_planned() {
        let config = MatchmakingConfig::default();
        let mut m = Matchmaker::new(config.clone(), vec![], vec![], None);
        let (offer, _) = offer(&config, 0).unwrap();
        m.plan("keen", offer, 1);
        let (who, first) = m.next_planned().unwrap();
        assert_eq!((who.as_str(), first.color), ("keen", ChallengeColor::White));
        assert!(m.creating_planned());
        // A 429: the same game is next again.
        m.not_sent();
        let (who, again) = m.next_planned().unwrap();
        assert_eq!((who.as_str(), again.color), ("keen", ChallengeColor::White));
        // A refusal for good drops it (and the rest against that user).
        m.refused("keen", "refused", None, 0);
        assert!(!m.creating_planned());
        assert!(!m.has_planned());
    }
}
