//! The rules a single value cannot express: ranges, min before max, user
//! ids, chat templates that Lichess will take.

use crate::lichess::MAX_CHAT_LEN;

use super::error::{ConfigError, invalid};
use super::sections::{ChallengeConfig, Config, PlayableVariant, parse_challenge_time};
use super::terms::Challenger;

impl Config {
    /// Checks the rules a single value cannot express, section by
    /// section.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_lichess()?;
        self.validate_engine()?;
        self.validate_challenge()?;
        self.validate_bot()?;
        self.validate_matchmaking()?;
        self.validate_chat()?;
        self.validate_web()?;
        self.sources.validate()
    }

    /// `[lichess]`'s rules.
    fn validate_lichess(&self) -> Result<(), ConfigError> {
        let l = &self.lichess;
        match reqwest::Url::parse(&l.url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => {
                return Err(invalid(
                    "lichess.url",
                    format!("{:?} is not an http(s) URL", l.url),
                ));
            }
        }
        check_range("lichess.stream_timeout_secs", l.stream_timeout_secs, 1, 300)?;
        check_range(
            "lichess.rate_limit_pause_secs",
            l.rate_limit_pause_secs,
            0,
            900,
        )?;
        if l.token_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Err(invalid("lichess.token_file", "is empty"));
        }
        Ok(())
    }

    /// `[engine]`'s rules.
    fn validate_engine(&self) -> Result<(), ConfigError> {
        let e = &self.engine;
        if !(1..=1 << 20).contains(&e.hash_mb) {
            return Err(invalid(
                "engine.hash_mb",
                format!("{} is out of range 1..=1048576", e.hash_mb),
            ));
        }
        if !(1..=1024).contains(&e.threads) {
            return Err(invalid(
                "engine.threads",
                format!("{} is out of range 1..=1024", e.threads),
            ));
        }

        check_range(
            "engine.move_overhead_ms",
            e.move_overhead_ms,
            0,
            super::MOVE_OVERHEAD_MAX_MS,
        )?;
        Ok(())
    }

    /// `[challenge]`'s rules, and those of the policy of each of its
    /// sections (`[challenge.humans]`, `[challenge.bots]`) with what it
    /// inherits.
    fn validate_challenge(&self) -> Result<(), ConfigError> {
        let c = &self.challenge;
        validate_terms("challenge", c)?;
        for who in [Challenger::Human, Challenger::Bot] {
            if c.terms(who).is_some() {
                let section = format!("challenge.{}", who.section());
                validate_terms(&section, &c.for_challenger(who))?;
            }
        }
        if c.only_bots && !c.accept_bots {
            return Err(invalid(
                "challenge.only_bots",
                "is true but challenge.accept_bots is false: nobody could play",
            ));
        }
        self.validate_challenge_lists()?;
        check_range(
            "challenge.max_games_per_opponent",
            c.max_games_per_opponent.into(),
            1,
            1000,
        )?;
        check_range(
            "challenge.max_games_per_bot_per_day",
            c.max_games_per_bot_per_day.into(),
            0,
            1000,
        )?;
        check_range(
            "challenge.max_bot_rematches",
            c.max_bot_rematches.into(),
            0,
            1000,
        )?;
        check_range("challenge.queue_size", c.queue_size.into(), 0, 1000)?;
        Ok(())
    }

    /// `[challenge]`'s lists: users, and the online block lists.
    fn validate_challenge_lists(&self) -> Result<(), ConfigError> {
        let c = &self.challenge;
        for (key, list) in [
            ("challenge.block_list", &c.block_list),
            ("challenge.allow_list", &c.allow_list),
        ] {
            if let Some(bad) = list.iter().find(|id| !is_user_id(id)) {
                return Err(invalid(key, format!("{bad:?} is not a Lichess username")));
            }
        }
        for url in &c.online_block_lists {
            match reqwest::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => {
                    return Err(invalid(
                        "challenge.online_block_lists",
                        format!("{url:?} is not an http(s) URL"),
                    ));
                }
            }
        }
        check_range(
            "challenge.block_list_refresh_secs",
            c.block_list_refresh_secs,
            60,
            7 * 86_400,
        )?;
        Ok(())
    }

    /// `[bot]`'s rules.
    fn validate_bot(&self) -> Result<(), ConfigError> {
        let (b, c) = (&self.bot, &self.challenge);
        if b.concurrency == 0 {
            return Err(invalid("bot.concurrency", "must be at least 1"));
        }
        if c.reserved_for_humans >= b.concurrency && c.accept_bots {
            return Err(invalid(
                "challenge.reserved_for_humans",
                format!(
                    "{} leaves no slot of bot.concurrency ({}) for bots; set it lower or \
                     challenge.accept_bots = false",
                    c.reserved_for_humans, b.concurrency
                ),
            ));
        }
        if c.reserved_for_humans > b.concurrency {
            return Err(invalid(
                "challenge.reserved_for_humans",
                format!(
                    "{} is more than bot.concurrency ({})",
                    c.reserved_for_humans, b.concurrency
                ),
            ));
        }
        check_range("bot.max_takebacks", b.max_takebacks.into(), 0, 100)?;
        check_range(
            "bot.correspondence_move_secs",
            b.correspondence_move_secs,
            1,
            3600,
        )?;
        check_range(
            "bot.correspondence_park_secs",
            b.correspondence_park_secs,
            0,
            3600,
        )?;
        check_range("bot.playing_check_secs", b.playing_check_secs, 1, 86_400)?;
        check_range("bot.bot_games_per_day", b.bot_games_per_day.into(), 0, 100)?;
        check_range("bot.abort_time_secs", b.abort_time_secs, 1, 3600)?;
        check_range(
            "bot.game_start_timeout_secs",
            b.game_start_timeout_secs,
            1,
            3600,
        )?;
        check_range(
            "bot.shutdown_deadline_secs",
            b.shutdown_deadline_secs,
            0,
            86_400,
        )?;
        // Scores are compared as i32 centipawns; a mate counts 100000.
        check_range("bot.draw_score_cp", b.draw_score_cp.into(), 0, 100_000)?;
        check_range("bot.resign_score_cp", b.resign_score_cp.into(), 1, 100_000)?;
        check_range(
            "bot.draw_resign_min_moves",
            b.draw_resign_min_moves.into(),
            0,
            500,
        )?;
        check_range(
            "bot.opponent_low_time_secs",
            b.opponent_low_time_secs,
            0,
            3600,
        )?;
        if b.draw_moves == 0 {
            return Err(invalid("bot.draw_moves", "must be at least 1"));
        }
        if b.resign_moves == 0 {
            return Err(invalid("bot.resign_moves", "must be at least 1"));
        }
        Ok(())
    }

    /// `[matchmaking]`'s rules.
    fn validate_matchmaking(&self) -> Result<(), ConfigError> {
        let m = &self.matchmaking;
        check_range("matchmaking.idle_secs", m.idle_secs, 1, 86_400)?;
        for (key, value) in [
            ("matchmaking.min_rating_diff", m.min_rating_diff),
            ("matchmaking.max_rating_diff", m.max_rating_diff),
            ("matchmaking.target_rating_diff", m.target_rating_diff),
        ] {
            if !(-4000..=4000).contains(&value) {
                return Err(invalid(
                    key,
                    format!("{value} is out of range -4000..=4000"),
                ));
            }
        }
        if m.min_rating_diff > m.max_rating_diff {
            return Err(invalid(
                "matchmaking.min_rating_diff",
                format!(
                    "{} is more than matchmaking.max_rating_diff ({})",
                    m.min_rating_diff, m.max_rating_diff
                ),
            ));
        }
        if !(m.min_rating_diff..=m.max_rating_diff).contains(&m.target_rating_diff) {
            return Err(invalid(
                "matchmaking.target_rating_diff",
                format!(
                    "{} is outside min_rating_diff..=max_rating_diff ({}..={})",
                    m.target_rating_diff, m.min_rating_diff, m.max_rating_diff
                ),
            ));
        }
        for (key, value) in [
            ("matchmaking.later_cooldown_secs", m.later_cooldown_secs),
            ("matchmaking.offer_cooldown_secs", m.offer_cooldown_secs),
            ("matchmaking.block_secs", m.block_secs),
        ] {
            check_range(key, value, 0, 365 * 86_400)?;
        }
        check_range(
            "matchmaking.block_after_declines",
            m.block_after_declines.into(),
            0,
            100,
        )?;
        check_range(
            "matchmaking.challenge_timeout_secs",
            m.challenge_timeout_secs,
            1,
            3600,
        )?;
        check_range(
            "matchmaking.decline_cooldown_secs",
            m.decline_cooldown_secs,
            0,
            30 * 86_400,
        )?;
        check_range(
            "matchmaking.played_cooldown_secs",
            m.played_cooldown_secs,
            0,
            86_400,
        )?;
        if m.time_controls.is_empty() {
            return Err(invalid("matchmaking.time_controls", "is empty"));
        }
        for tc in &m.time_controls {
            parse_challenge_time(tc).map_err(|e| invalid("matchmaking.time_controls", e))?;
        }
        if m.variants.is_empty() {
            return Err(invalid("matchmaking.variants", "is empty"));
        }
        if m.variants.contains(&PlayableVariant::FromPosition) {
            return Err(invalid(
                "matchmaking.variants",
                "fromPosition needs a position: use standard or chess960",
            ));
        }
        super::engines::validate(&self.engines)?;
        self.tournaments.validate()?;
        for who in [Challenger::Human, Challenger::Bot] {
            let c = &self.challenge;
            let key = match c.terms(who).and_then(|t| t.variants.as_ref()) {
                Some(_) => format!("challenge.{}.variants", who.section()),
                None => "challenge.variants".to_owned(),
            };
            super::engines::check_served(&key, &c.for_challenger(who).variants, &self.engines)?;
        }
        super::engines::check_served("matchmaking.variants", &m.variants, &self.engines)?;
        Ok(())
    }

    /// `[web]`'s rules.
    fn validate_web(&self) -> Result<(), ConfigError> {
        if self.web.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(invalid(
                "web.listen",
                format!(
                    "{:?} is not an address and port (such as 127.0.0.1:8089)",
                    self.web.listen
                ),
            ));
        }
        Ok(())
    }

    /// `[chat]`'s rules.
    fn validate_chat(&self) -> Result<(), ConfigError> {
        let chat = &self.chat;
        for (key, template) in [
            ("chat.greeting", &chat.greeting),
            ("chat.greeting_spectator", &chat.greeting_spectator),
            ("chat.goodbye", &chat.goodbye),
            ("chat.goodbye_spectator", &chat.goodbye_spectator),
        ] {
            check_template(key, template)?;
        }
        Ok(())
    }
}

/// `value` within `min..=max`: every duration and score has bounds, so
/// none overflows an `Instant` or wraps negative.
pub(super) fn check_range(key: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!("{value} is out of range {min}..={max}"),
        ))
    }
}

/// The name of `[section.NAME]` (`key`, e.g. `engines.fairy`): letters,
/// digits, `-` and `_`; `what` names what the section is.
pub(super) fn check_name(key: &str, name: &str, what: &str) -> Result<(), ConfigError> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!("{what}'s name is letters, digits, - and _"),
        ))
    }
}

fn check_order(min_key: &str, min: u32, max_key: &str, max: u32) -> Result<(), ConfigError> {
    if min > max {
        Err(invalid(
            min_key,
            format!("{min} is more than {max_key} ({max})"),
        ))
    } else {
        Ok(())
    }
}

/// Whether `id` is a Lichess username (letters, digits, `_`, `-`; at
/// most 30).
pub fn is_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 30
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_template(key: &str, template: &str) -> Result<(), ConfigError> {
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start..];
        let placeholder = after.find('}').map(|end| &after[..=end]);
        match placeholder {
            Some("{me}") | Some("{opponent}") => {}
            _ => {
                let shown: String = after.chars().take(20).collect();
                return Err(invalid(
                    key,
                    format!("unknown placeholder at {shown:?}: use {{me}} or {{opponent}}"),
                ));
            }
        }
        rest = &after[1..];
    }
    let len = template.chars().count();
    if len > MAX_CHAT_LEN {
        return Err(invalid(
            key,
            format!("is {len} characters long; Lichess takes {MAX_CHAT_LEN}"),
        ));
    }
    Ok(())
}

/// The rules of the game terms of one challenge policy, `[challenge]` or
/// one of its sections: keys are named `{section}.KEY`.
fn validate_terms(section: &str, c: &ChallengeConfig) -> Result<(), ConfigError> {
    let key = |name: &str| format!("{section}.{name}");
    check_order(&key("min_base"), c.min_base, &key("max_base"), c.max_base)?;
    check_order(
        &key("min_increment"),
        c.min_increment,
        &key("max_increment"),
        c.max_increment,
    )?;
    check_order(
        &key("min_rating"),
        c.min_rating,
        &key("max_rating"),
        c.max_rating,
    )?;
    if !c.rated && !c.casual {
        return Err(invalid(
            &key("rated"),
            format!("and {} are both false: nobody could play", key("casual")),
        ));
    }
    check_range(&key("min_days_per_turn"), c.min_days_per_turn.into(), 1, 14)?;
    check_range(&key("max_days_per_turn"), c.max_days_per_turn.into(), 1, 14)?;
    check_order(
        &key("min_days_per_turn"),
        c.min_days_per_turn,
        &key("max_days_per_turn"),
        c.max_days_per_turn,
    )?;
    check_range(&key("max_rating_diff"), c.max_rating_diff.into(), 0, 4000)?;
    check_range(&key("max_game_secs"), c.max_game_secs.into(), 0, 86_400)
}
