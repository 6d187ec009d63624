//! The challenge policy: whether to accept a challenge, and if not, the
//! reason Lichess shows the challenger. Pure; the daemon calls [`decide`]
//! for each incoming challenge (its own merits), then [`fair`] (the fair
//! limits and the free slots: play, wait in the queue, or decline), and
//! reserves a game slot with [`Slots`].

use crate::config::{ChallengeConfig, Challenger};
use crate::lichess::model::{Challenge, Compat, DeclineReason, Speed, TimeControl, VariantKey};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What to do with a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Accept,
    Decline(DeclineReason),
}

/// Decides a challenge on its own merits (the fair limits and the free
/// slots come after, see [`fair`]). Rules, in order (the first that fails
/// gives the reason):
///
/// 0. a game the Bot API cannot play (the event's `compat.bot` is false,
///    as for an ultraBullet clock): `tooFast` for a clock, else `generic`;
/// 1. an anonymous challenger (`challenger: null`, no account to judge
///    or to block), a challenger blocked, or one not on a non-empty allow
///    list: `generic`;
/// 2. a bot when `accept_bots = false`: `noBot`; a human when
///    `only_bots`: `onlyBot`;
/// 3. variant not accepted: `standard` if the challenge is standard (the
///    policy wants other variants), else `variant`;
/// 4. correspondence/unlimited (or an unknown time control) when not
///    allowed: `timeControl`; fewer days per move than
///    `min_days_per_turn`: `tooFast`, more than `max_days_per_turn`:
///    `tooSlow`; a clock whose base or increment is below the minimum:
///    `tooFast`, above the maximum: `tooSlow`; a speed not in the list:
///    `tooFast`/`tooSlow` when every accepted real-time speed is
///    slower/faster, else `timeControl`;
/// 5. rated not accepted: `rated`; casual not accepted: `casual`;
/// 6. challenger rating outside the range: `generic` (no rating passes);
/// 7. more than `max_rating_diff` between the challenger's rating and
///    ours (`destUser.rating`): `generic`.
///
/// Rules 3 to 7 read the policy of the challenger's kind, `[challenge]`
/// with `[challenge.humans]` or `[challenge.bots]` over it. Rule 4 also
/// declines a bullet clock without increment when
/// `bullet_requires_increment` (`timeControl`) and a clock whose game
/// may last longer than `max_game_secs` (`tooSlow`, see [`game_secs`]).
pub fn decide(
    challenge: &Challenge,
    compat: Option<&Compat>,
    policy: &ChallengeConfig,
) -> Decision {
    let policy = policy.for_challenger(challenger_kind(challenge));
    match check(challenge, compat, &policy) {
        Ok(()) => Decision::Accept,
        Err(reason) => Decision::Decline(reason),
    }
}

fn check(
    challenge: &Challenge,
    compat: Option<&Compat>,
    policy: &ChallengeConfig,
) -> Result<(), DeclineReason> {
    use DeclineReason::*;
    if compat.is_some_and(|c| !c.bot) {
        return Err(match challenge.time_control {
            crate::lichess::model::TimeControl::Clock { .. } => TooFast,
            _ => Generic,
        });
    }
    let Some(user) = &challenge.challenger else {
        return Err(Generic);
    };
    if is_blocked(policy, &user.id) || !is_allowed(policy, &user.id) {
        return Err(Generic);
    }
    if user.is_bot() && !policy.accept_bots {
        return Err(NoBot);
    }
    if !user.is_bot() && policy.only_bots {
        return Err(OnlyBot);
    }
    let variant = challenge.variant.key;
    if !accepts_variant(policy, variant) {
        // Lichess shows `standard` as "I'm not accepting variant
        // challenges right now" (a standard game would do), `variant` as
        // "I'm not willing to play this variant right now".
        return Err(
            if variant != VariantKey::Standard && accepts_variant(policy, VariantKey::Standard) {
                Standard
            } else {
                Variant
            },
        );
    }
    check_time(challenge, policy)?;
    if !accepts_mode(policy, challenge.rated) {
        return Err(if challenge.rated { Rated } else { Casual });
    }
    if let Some(rating) = user.rating
        && !(policy.min_rating..=policy.max_rating).contains(&rating)
    {
        return Err(Generic);
    }
    if let (Some(theirs), Some(ours)) = (
        user.rating,
        challenge.dest_user.as_ref().and_then(|u| u.rating),
    ) && policy.max_rating_diff > 0
        && theirs.abs_diff(ours) > policy.max_rating_diff
    {
        return Err(Generic);
    }
    Ok(())
}

/// Whether a human or a bot challenges (an anonymous challenger is a
/// human).
pub fn challenger_kind(challenge: &Challenge) -> Challenger {
    if challenge.from_bot() {
        Challenger::Bot
    } else {
        Challenger::Human
    }
}

/// How long a game on this clock may last, estimated as Lichess estimates
/// a player's time (base + 40 x increment), for both players.
pub fn game_secs(base: u32, increment: u32) -> u32 {
    2 * (base + 40 * increment)
}

/// Where the games stand when a challenge that passed [`decide`] asks for
/// a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Load {
    /// `bot.concurrency`.
    pub concurrency: usize,
    /// Slots taken (games, accepted challenges, our pending challenge).
    pub in_use: usize,
    /// Of those, the slots bots hold.
    pub bots: usize,
    /// Games and queued challenges of this challenger.
    pub with_challenger: usize,
    /// The daily bot-game quota is reached.
    pub bot_quota_reached: bool,
    /// Games against this challenger in the last 24 hours (bots).
    pub with_challenger_today: usize,
    /// Rematches in a row this challenge would make (0: not a rematch).
    pub rematches: u32,
}

/// What the fair limits say about a challenge that [`decide`] accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fair {
    /// A slot is free for it: accept.
    Play,
    /// It may play, but not now: it waits in the queue.
    Wait,
    /// Declined for this reason, by the rule named.
    Decline(DeclineReason, &'static str),
}

/// The fair limits, in order: at most `max_games_per_opponent` games (and
/// queued challenges) per challenger (`later`, "per-opponent cap"); a bot
/// when the daily bot quota is reached (`later`, "daily bot quota"), after
/// `max_games_per_bot_per_day` games with us ("per-bot daily cap"), or
/// beyond `max_bot_rematches` rematches in a row ("rematch limit"); then
/// a free slot, which a bot may take only beyond the
/// `reserved_for_humans` ones, else it waits.
pub fn fair(challenge: &Challenge, policy: &ChallengeConfig, load: Load) -> Fair {
    let bot = challenge.from_bot();
    if load.with_challenger >= policy.max_games_per_opponent as usize {
        return Fair::Decline(DeclineReason::Later, "per-opponent cap");
    }
    if bot && load.bot_quota_reached {
        return Fair::Decline(DeclineReason::Later, "daily bot quota");
    }
    let per_day = policy.max_games_per_bot_per_day as usize;
    if bot && per_day > 0 && load.with_challenger_today >= per_day {
        return Fair::Decline(DeclineReason::Later, "per-bot daily cap");
    }
    if bot && load.rematches > policy.max_bot_rematches {
        return Fair::Decline(DeclineReason::Later, "rematch limit");
    }
    if may_take_slot(bot, policy, load) {
        Fair::Play
    } else {
        Fair::Wait
    }
}

/// Whether a slot is free for a human (`bot = false`) or a bot.
pub fn may_take_slot(bot: bool, policy: &ChallengeConfig, load: Load) -> bool {
    let free = load.in_use < load.concurrency;
    let bot_slots = load
        .concurrency
        .saturating_sub(policy.reserved_for_humans as usize);
    free && (!bot || load.bots < bot_slots)
}

fn check_time(challenge: &Challenge, policy: &ChallengeConfig) -> Result<(), DeclineReason> {
    match &challenge.time_control {
        TimeControl::Clock {
            limit, increment, ..
        } => {
            if *limit < policy.min_base || *increment < policy.min_increment {
                return Err(DeclineReason::TooFast);
            }
            if *limit > policy.max_base || *increment > policy.max_increment {
                return Err(DeclineReason::TooSlow);
            }
            if policy.max_game_secs > 0 && game_secs(*limit, *increment) > policy.max_game_secs {
                return Err(DeclineReason::TooSlow);
            }
            if policy.bullet_requires_increment
                && *increment == 0
                && challenge.speed == Speed::Bullet
            {
                return Err(DeclineReason::TimeControl);
            }
        }
        TimeControl::Correspondence { .. } | TimeControl::Unlimited | TimeControl::Unknown => {
            if !accepts_time_control(policy, &challenge.time_control) {
                return Err(DeclineReason::TimeControl);
            }
            if let TimeControl::Correspondence {
                days_per_turn: Some(days),
            } = challenge.time_control
            {
                if days < policy.min_days_per_turn {
                    return Err(DeclineReason::TooFast);
                }
                if days > policy.max_days_per_turn {
                    return Err(DeclineReason::TooSlow);
                }
            }
        }
    }
    let speed = challenge.speed;
    if speed == Speed::Unknown || accepts_speed(policy, speed) {
        return Ok(());
    }
    let rank = |s: Speed| match s {
        Speed::UltraBullet => Some(0),
        Speed::Bullet => Some(1),
        Speed::Blitz => Some(2),
        Speed::Rapid => Some(3),
        Speed::Classical => Some(4),
        Speed::Correspondence | Speed::Unknown => None,
    };
    let Some(r) = rank(speed) else {
        return Err(DeclineReason::TimeControl);
    };
    let accepted: Vec<u8> = policy
        .speeds
        .iter()
        .filter_map(|s| rank(s.speed()))
        .collect();
    if !accepted.is_empty() && accepted.iter().all(|&a| a > r) {
        Err(DeclineReason::TooFast)
    } else if !accepted.is_empty() && accepted.iter().all(|&a| a < r) {
        Err(DeclineReason::TooSlow)
    } else {
        Err(DeclineReason::TimeControl)
    }
}

/// Whether the user is on the block list (ids, any case).
fn is_blocked(policy: &ChallengeConfig, user_id: &str) -> bool {
    policy
        .block_list
        .iter()
        .any(|id| id.eq_ignore_ascii_case(user_id))
}

/// Whether the allow list lets the user in (an empty list lets anyone).
fn is_allowed(policy: &ChallengeConfig, user_id: &str) -> bool {
    policy.allow_list.is_empty()
        || policy
            .allow_list
            .iter()
            .any(|id| id.eq_ignore_ascii_case(user_id))
}

/// Whether the variant is accepted.
fn accepts_variant(policy: &ChallengeConfig, key: VariantKey) -> bool {
    policy.variants.iter().any(|v| v.key() == key)
}

/// Whether the speed is accepted. Correspondence also needs
/// `correspondence = true`.
fn accepts_speed(policy: &ChallengeConfig, speed: Speed) -> bool {
    policy.speeds.iter().any(|s| s.speed() == speed)
        && (speed != Speed::Correspondence || policy.correspondence)
}

/// Whether the time control is within bounds: a clock within
/// base/increment bounds, or no clock when `correspondence` is on.
fn accepts_time_control(policy: &ChallengeConfig, time_control: &TimeControl) -> bool {
    match time_control {
        TimeControl::Clock {
            limit, increment, ..
        } => {
            (policy.min_base..=policy.max_base).contains(limit)
                && (policy.min_increment..=policy.max_increment).contains(increment)
        }
        TimeControl::Correspondence { .. } | TimeControl::Unlimited => policy.correspondence,
        TimeControl::Unknown => false,
    }
}

/// Whether rated (`true`) or casual (`false`) games are accepted.
fn accepts_mode(policy: &ChallengeConfig, rated: bool) -> bool {
    if rated { policy.rated } else { policy.casual }
}

/// The game slots (`bot.concurrency`), some of which may be kept free
/// for arena pairings: challenges and matchmaking see only the rest.
#[derive(Debug, Clone)]
pub struct Slots {
    used: Arc<AtomicUsize>,
    /// Kept free for the arenas the bot waits in.
    kept: Arc<AtomicUsize>,
    total: usize,
}

/// A reserved slot, released on drop.
#[derive(Debug)]
pub struct SlotGuard {
    used: Arc<AtomicUsize>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.used.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Slots {
    pub fn new(total: usize) -> Slots {
        Slots {
            used: Arc::new(AtomicUsize::new(0)),
            kept: Arc::new(AtomicUsize::new(0)),
            total,
        }
    }

    /// Reserves one of the slots challenges may take, atomically, or
    /// `None` when they are all taken.
    pub fn try_reserve(&self) -> Option<SlotGuard> {
        self.reserve_below(self.capacity())
    }

    /// Reserves any slot, a kept one too (an arena game).
    pub fn try_reserve_kept(&self) -> Option<SlotGuard> {
        self.reserve_below(self.total)
    }

    fn reserve_below(&self, limit: usize) -> Option<SlotGuard> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| SlotGuard {
                used: Arc::clone(&self.used),
            })
    }

    /// Keeps `n` slots free for arena pairings.
    pub fn keep(&self, n: usize) {
        self.kept.store(n.min(self.total), Ordering::Release);
    }

    /// Slots kept for arenas now.
    pub fn kept(&self) -> usize {
        self.kept.load(Ordering::Acquire)
    }

    /// Slots in use now.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The slots challenges and matchmaking may fill: `bot.concurrency`
    /// less those kept for arenas.
    pub fn capacity(&self) -> usize {
        self.total.saturating_sub(self.kept())
    }

    /// `bot.concurrency`.
    pub fn total(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AcceptedSpeed, PlayableVariant};
    use DeclineReason::*;

    fn challenge(json: serde_json::Value) -> Challenge {
        let mut base = serde_json::json!({
            "id": "c1",
            "challenger": {"id": "alice", "name": "Alice", "rating": 1500},
            "variant": {"key": "standard"},
            "rated": true,
            "speed": "blitz",
            "timeControl": {"type": "clock", "limit": 180, "increment": 2},
        });
        for (k, v) in json.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    fn std_challenge() -> Challenge {
        challenge(serde_json::json!({}))
    }

    fn bot() -> serde_json::Value {
        serde_json::json!({"id": "robo", "name": "Robo", "title": "BOT", "rating": 2000})
    }

    fn policy() -> ChallengeConfig {
        ChallengeConfig::default()
    }

    fn d(c: &Challenge, p: &ChallengeConfig) -> Decision {
        decide(c, None, p)
    }

    #[test]
    fn accepts_a_plain_challenge() {
        assert_eq!(d(&std_challenge(), &policy()), Decision::Accept);
    }

    #[test]
    fn declines_what_the_bot_api_cannot_play() {
        let c = std_challenge();
        let compat = |bot| Compat { bot, board: true };
        assert_eq!(decide(&c, Some(&compat(true)), &policy()), Decision::Accept);
        assert_eq!(
            decide(&c, Some(&compat(false)), &policy()),
            Decision::Decline(DeclineReason::TooFast)
        );
    }

    #[test]
    fn humans_and_bots_have_their_own_policies() {
        let mut p = policy();
        p.humans = Some(crate::config::ChallengeTerms {
            speeds: Some(vec![AcceptedSpeed::Rapid, AcceptedSpeed::Classical]),
            rated: Some(false),
            ..Default::default()
        });
        p.bots = Some(crate::config::ChallengeTerms {
            variants: Some(vec![PlayableVariant::Standard]),
            max_base: Some(300),
            min_rating: Some(1800),
            ..Default::default()
        });
        // A human's blitz game is too fast for the humans' speeds, and a
        // rated one is declined once the clock fits.
        let human_blitz = std_challenge();
        assert_eq!(d(&human_blitz, &p), Decision::Decline(TooFast));
        let human_rapid = challenge(serde_json::json!({
            "speed": "rapid",
            "timeControl": {"type": "clock", "limit": 900, "increment": 10},
        }));
        assert_eq!(d(&human_rapid, &p), Decision::Decline(Rated));
        let casual = challenge(serde_json::json!({
            "speed": "rapid", "rated": false,
            "timeControl": {"type": "clock", "limit": 900, "increment": 10},
        }));
        assert_eq!(d(&casual, &p), Decision::Accept);
        // A bot's blitz is fine ([challenge]'s speeds), its rapid clock is
        // beyond the bots' max_base, and Chess960 is not a bots' variant.
        let bot_blitz = challenge(serde_json::json!({"challenger": bot()}));
        assert_eq!(d(&bot_blitz, &p), Decision::Accept);
        let bot_rapid = challenge(serde_json::json!({
            "challenger": bot(), "speed": "rapid",
            "timeControl": {"type": "clock", "limit": 900, "increment": 10},
        }));
        assert_eq!(d(&bot_rapid, &p), Decision::Decline(TooSlow));
        let bot_960 = challenge(serde_json::json!({
            "challenger": bot(), "variant": {"key": "chess960"},
        }));
        assert_eq!(d(&bot_960, &p), Decision::Decline(Standard));
        let weak_bot = challenge(serde_json::json!({
            "challenger": {"id": "tiny", "name": "Tiny", "title": "BOT", "rating": 1200},
        }));
        assert_eq!(d(&weak_bot, &p), Decision::Decline(Generic));
        // Without the sections, [challenge] judges both.
        assert_eq!(d(&human_blitz, &policy()), Decision::Accept);
        assert_eq!(d(&weak_bot, &policy()), Decision::Accept);
    }

    #[test]
    fn bullet_without_increment_and_long_games() {
        let bullet = |inc: u32| {
            challenge(serde_json::json!({
                "speed": "bullet",
                "timeControl": {"type": "clock", "limit": 60, "increment": inc},
            }))
        };
        let mut p = policy();
        assert_eq!(d(&bullet(0), &p), Decision::Accept);
        p.bullet_requires_increment = true;
        assert_eq!(d(&bullet(0), &p), Decision::Decline(TimeControl));
        assert_eq!(d(&bullet(1), &p), Decision::Accept);
        // 3+2 lasts up to 2 x (180 + 80) = 520 s by Lichess's estimate.
        assert_eq!(game_secs(180, 2), 520);
        p.max_game_secs = 519;
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(TooSlow));
        p.max_game_secs = 520;
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
        // Only for bots: humans keep [challenge]'s (no limit).
        p.max_game_secs = 0;
        p.bots = Some(crate::config::ChallengeTerms {
            max_game_secs: Some(300),
            ..Default::default()
        });
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
        let from_bot = challenge(serde_json::json!({"challenger": bot()}));
        assert_eq!(d(&from_bot, &p), Decision::Decline(TooSlow));
    }

    fn load(in_use: usize, bots: usize, with_challenger: usize) -> Load {
        Load {
            concurrency: 2,
            in_use,
            bots,
            with_challenger,
            bot_quota_reached: false,
            with_challenger_today: 0,
            rematches: 0,
        }
    }

    #[test]
    fn fair_limits() {
        let human = std_challenge();
        let from_bot = challenge(serde_json::json!({"challenger": bot()}));
        let mut p = policy();
        assert_eq!(fair(&human, &p, load(1, 0, 0)), Fair::Play);
        assert_eq!(fair(&human, &p, load(2, 0, 0)), Fair::Wait);
        assert_eq!(
            fair(&human, &p, load(1, 0, 1)),
            Fair::Decline(Later, "per-opponent cap")
        );
        p.max_games_per_opponent = 2;
        assert_eq!(fair(&human, &p, load(1, 0, 1)), Fair::Play);
        // One slot kept for humans: a bot waits for the other.
        p.reserved_for_humans = 1;
        assert_eq!(fair(&from_bot, &p, load(0, 0, 0)), Fair::Play);
        assert_eq!(fair(&from_bot, &p, load(1, 1, 0)), Fair::Wait);
        assert_eq!(fair(&human, &p, load(1, 1, 0)), Fair::Play);
        assert_eq!(fair(&from_bot, &p, load(1, 0, 0)), Fair::Play);
        let quota = Load {
            bot_quota_reached: true,
            ..load(0, 0, 0)
        };
        assert_eq!(
            fair(&from_bot, &p, quota),
            Fair::Decline(Later, "daily bot quota")
        );
        assert_eq!(fair(&human, &p, quota), Fair::Play);
    }

    #[test]
    fn a_bot_gets_so_many_games_a_day_and_rematches_in_a_row() {
        let human = std_challenge();
        let from_bot = challenge(serde_json::json!({"challenger": bot()}));
        let mut p = policy();
        p.max_games_per_bot_per_day = 3;
        p.max_bot_rematches = 2;
        let today = |n| Load {
            with_challenger_today: n,
            ..load(0, 0, 0)
        };
        assert_eq!(fair(&from_bot, &p, today(2)), Fair::Play);
        assert_eq!(
            fair(&from_bot, &p, today(3)),
            Fair::Decline(Later, "per-bot daily cap")
        );
        // Humans are not counted so.
        assert_eq!(fair(&human, &p, today(3)), Fair::Play);
        p.max_games_per_bot_per_day = 0;
        assert_eq!(fair(&from_bot, &p, today(500)), Fair::Play);
        let rematch = |n| Load {
            rematches: n,
            ..load(0, 0, 0)
        };
        assert_eq!(fair(&from_bot, &p, rematch(2)), Fair::Play);
        assert_eq!(
            fair(&from_bot, &p, rematch(3)),
            Fair::Decline(Later, "rematch limit")
        );
        assert_eq!(fair(&human, &p, rematch(3)), Fair::Play);
    }

    #[test]
    fn days_per_turn_and_rating_difference() {
        let mut p = policy();
        p.correspondence = true;
        p.min_days_per_turn = 2;
        p.max_days_per_turn = 5;
        let days = |n: u32| {
            challenge(serde_json::json!({
                "speed": "correspondence",
                "timeControl": {"type": "correspondence", "daysPerTurn": n},
            }))
        };
        assert_eq!(d(&days(1), &p), Decision::Decline(TooFast));
        assert_eq!(d(&days(2), &p), Decision::Accept);
        assert_eq!(d(&days(7), &p), Decision::Decline(TooSlow));
        let mut p = policy();
        p.max_rating_diff = 300;
        let vs = |ours: u32| {
            challenge(serde_json::json!({
                "destUser": {"id": "kaissa", "name": "kaissa", "rating": ours},
            }))
        };
        assert_eq!(d(&vs(1700), &p), Decision::Accept);
        assert_eq!(d(&vs(1900), &p), Decision::Decline(Generic));
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
        p.max_rating_diff = 0;
        assert_eq!(d(&vs(3900), &p), Decision::Accept);
    }

    #[test]
    fn variant_and_standard() {
        let mut p = policy();
        p.variants = vec![PlayableVariant::Standard];
        // A variant, where standard would do: "not accepting variant
        // challenges".
        let c = challenge(serde_json::json!({"variant": {"key": "chess960"}}));
        assert_eq!(d(&c, &p), Decision::Decline(Standard));
        let c = challenge(serde_json::json!({"variant": {"key": "atomic"}}));
        assert_eq!(d(&c, &policy()), Decision::Decline(Standard));
        // Standard, or a variant, where standard would not do either: "not
        // willing to play this variant".
        p.variants = vec![PlayableVariant::Chess960];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Variant));
        let c = challenge(serde_json::json!({"variant": {"key": "atomic"}}));
        assert_eq!(d(&c, &p), Decision::Decline(Variant));
    }

    #[test]
    fn time_control_for_correspondence_and_unlimited() {
        let c = challenge(serde_json::json!({
            "speed": "correspondence",
            "timeControl": {"type": "correspondence", "daysPerTurn": 2},
        }));
        assert_eq!(d(&c, &policy()), Decision::Decline(TimeControl));
        let u = challenge(serde_json::json!({
            "speed": "correspondence",
            "timeControl": {"type": "unlimited"},
        }));
        assert_eq!(d(&u, &policy()), Decision::Decline(TimeControl));
        let mut p = policy();
        p.correspondence = true;
        assert_eq!(d(&c, &p), Decision::Accept);
        assert_eq!(d(&u, &p), Decision::Accept);
    }

    #[test]
    fn too_fast_and_too_slow() {
        let mut p = policy();
        p.min_base = 60;
        p.max_base = 600;
        p.min_increment = 1;
        p.max_increment = 10;
        let clock = |limit: u32, inc: u32| {
            challenge(serde_json::json!({
                "timeControl": {"type": "clock", "limit": limit, "increment": inc},
            }))
        };
        assert_eq!(d(&clock(30, 2), &p), Decision::Decline(TooFast));
        assert_eq!(d(&clock(180, 0), &p), Decision::Decline(TooFast));
        assert_eq!(d(&clock(900, 2), &p), Decision::Decline(TooSlow));
        assert_eq!(d(&clock(180, 30), &p), Decision::Decline(TooSlow));
        assert_eq!(d(&clock(60, 1), &p), Decision::Accept);
        assert_eq!(d(&clock(600, 10), &p), Decision::Accept);
    }

    #[test]
    fn speed_not_in_list() {
        let mut p = policy();
        p.speeds = vec![AcceptedSpeed::Rapid, AcceptedSpeed::Classical];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(TooFast));
        p.speeds = vec![AcceptedSpeed::Bullet];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(TooSlow));
        p.speeds = vec![AcceptedSpeed::Bullet, AcceptedSpeed::Rapid];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(TimeControl));
    }

    #[test]
    fn rated_and_casual() {
        let mut p = policy();
        p.rated = false;
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Rated));
        let casual = challenge(serde_json::json!({"rated": false}));
        assert_eq!(d(&casual, &p), Decision::Accept);
        let mut p = policy();
        p.casual = false;
        assert_eq!(d(&casual, &p), Decision::Decline(Casual));
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
    }

    #[test]
    fn bots_and_humans() {
        let from_bot = challenge(serde_json::json!({"challenger": bot()}));
        let mut p = policy();
        assert_eq!(d(&from_bot, &p), Decision::Accept);
        p.accept_bots = false;
        assert_eq!(d(&from_bot, &p), Decision::Decline(NoBot));
        let mut p = policy();
        p.only_bots = true;
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(OnlyBot));
        assert_eq!(d(&from_bot, &p), Decision::Accept);
    }

    #[test]
    fn generic_for_lists_and_rating() {
        let mut p = policy();
        p.block_list = vec!["ALICE".into()];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Generic));
        let mut p = policy();
        p.allow_list = vec!["bob".into()];
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Generic));
        p.allow_list.push("Alice".into());
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
        let mut p = policy();
        p.min_rating = 1600;
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Generic));
        p.min_rating = 0;
        p.max_rating = 1400;
        assert_eq!(d(&std_challenge(), &p), Decision::Decline(Generic));
        let unrated =
            challenge(serde_json::json!({"challenger": {"id": "alice", "name": "Alice"}}));
        assert_eq!(d(&unrated, &p), Decision::Accept);
    }

    #[test]
    fn an_anonymous_challenger_is_declined_generic() {
        // The same challenge as the plain one accepted, from nobody.
        let anonymous = challenge(serde_json::json!({"challenger": null}));
        let mut p = policy();
        assert_eq!(d(&std_challenge(), &p), Decision::Accept);
        assert_eq!(d(&anonymous, &p), Decision::Decline(Generic));
        p.only_bots = true;
        assert_eq!(d(&anonymous, &p), Decision::Decline(Generic));
        assert_eq!(challenger_kind(&anonymous), Challenger::Human);
    }

    #[test]
    fn slots_reserve_and_release() {
        let slots = Slots::new(2);
        let a = slots.try_reserve().unwrap();
        let _b = slots.try_reserve().unwrap();
        assert!(slots.try_reserve().is_none());
        drop(a);
        assert_eq!(slots.in_use(), 1);
        assert!(slots.try_reserve().is_some());
        assert_eq!(slots.in_use(), 1);
    }

    #[test]
    fn kept_slots_are_for_arena_games_only() {
        let slots = Slots::new(2);
        slots.keep(1);
        assert_eq!((slots.capacity(), slots.total()), (1, 2));
        let _challenge = slots.try_reserve().unwrap();
        assert!(
            slots.try_reserve().is_none(),
            "the kept slot is not a challenge's"
        );
        let arena = slots.try_reserve_kept().unwrap();
        assert!(slots.try_reserve_kept().is_none());
        drop(arena);
        slots.keep(5);
        assert_eq!(slots.kept(), 2, "never more than there are");
        assert_eq!(slots.capacity(), 0);
    }

    #[test]
    fn slots_never_exceed_capacity_under_contention() {
        let slots = Slots::new(2);
        let peak = Arc::new(AtomicUsize::new(0));
        let holders = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(std::sync::Barrier::new(20));
        let handles: Vec<_> = (0..20)
            .map(|_| {
                let (slots, peak, holders, barrier) = (
                    slots.clone(),
                    Arc::clone(&peak),
                    Arc::clone(&holders),
                    Arc::clone(&barrier),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut got = 0;
                    for _ in 0..200 {
                        if let Some(guard) = slots.try_reserve() {
                            got += 1;
                            let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            std::thread::yield_now();
                            holders.fetch_sub(1, Ordering::SeqCst);
                            drop(guard);
                        }
                    }
                    got
                })
            })
            .collect();
        let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert!(total > 0);
        assert!(peak.load(Ordering::SeqCst) <= 2);
        assert_eq!(slots.in_use(), 0);
    }

    #[test]
    fn challenge_helpers() {
        // Not DeclineReason::TimeControl.
        use crate::lichess::model::TimeControl;
        let mut c = ChallengeConfig::default();
        assert!(accepts_variant(&c, VariantKey::Chess960));
        assert!(!accepts_variant(&c, VariantKey::Atomic));
        assert!(accepts_speed(&c, Speed::Blitz));
        assert!(!accepts_speed(&c, Speed::UltraBullet));
        assert!(!accepts_speed(&c, Speed::Correspondence));
        assert!(!accepts_time_control(&c, &TimeControl::Unlimited));
        c.correspondence = true;
        assert!(accepts_speed(&c, Speed::Correspondence));
        assert!(accepts_time_control(&c, &TimeControl::Unlimited));
        c.max_base = 300;
        let clock = |limit, increment| TimeControl::Clock {
            limit,
            increment,
            show: None,
        };
        assert!(accepts_time_control(&c, &clock(300, 2)));
        assert!(!accepts_time_control(&c, &clock(600, 2)));
        assert!(is_allowed(&c, "anyone"));
        c.block_list = vec!["12345".into(), "Bob".into()];
        assert!(is_blocked(&c, "bob"));
        c.allow_list = vec!["Alice".into()];
        assert!(is_allowed(&c, "alice"));
        assert!(!is_allowed(&c, "bob"));
        assert!(accepts_mode(&c, true) && accepts_mode(&c, false));
    }
}
