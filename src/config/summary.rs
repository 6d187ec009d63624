//! What `kaissa check` prints about the configuration: the settings an
//! operator most needs to see at a glance (slots, queue, fair limits,
//! quota, correspondence, matchmaking, tournaments).

use super::sections::Config;

impl Config {
    /// One line per group of settings.
    pub fn summary(&self) -> Vec<String> {
        let (b, c, m) = (&self.bot, &self.challenge, &self.matchmaking);
        let rating_diff = match c.max_rating_diff {
            0 => "any".to_owned(),
            n => format!("{n}"),
        };
        let matchmaking = if m.enabled {
            format!(
                "on: after {} s idle, rating window {}, {} {}, {}, timeout {} s, decliners skipped {} s",
                m.idle_secs,
                m.rating_window,
                m.time_controls.join(" "),
                m.variants
                    .iter()
                    .map(|v| v.key().as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                if m.rated { "rated" } else { "casual" },
                m.challenge_timeout_secs,
                m.decline_cooldown_secs
            )
        } else {
            "off".to_owned()
        };
        vec![
            format!(
                "games at once: {} (kept for humans: {}, per opponent: {})",
                b.concurrency, c.reserved_for_humans, c.max_games_per_opponent
            ),
            format!(
                "challenge queue: up to {}, by {}",
                c.queue_size,
                c.queue_order.as_str()
            ),
            format!(
                "rating difference: {rating_diff}; days per move: {}..={}",
                c.min_days_per_turn, c.max_days_per_turn
            ),
            format!("bot games per day: {}", b.bot_games_per_day),
            format!(
                "correspondence: {} s per move; ongoing games checked every {} s",
                b.correspondence_move_secs, b.playing_check_secs
            ),
            format!("takebacks per game: {}", b.max_takebacks),
            format!("matchmaking: {matchmaking}"),
            format!("tournaments: {}", self.tournaments_summary()),
        ]
    }
}

impl Config {
    fn tournaments_summary(&self) -> String {
        let t = &self.tournaments;
        let arenas = if t.arenas.is_empty() {
            "no arena joined at start".to_owned()
        } else {
            let ids: Vec<String> = t
                .arenas
                .iter()
                .map(|a| match &a.team {
                    Some(team) => format!("{} (team {team})", a.id),
                    None => a.id.clone(),
                })
                .collect();
            format!("arenas {}", ids.join(", "))
        };
        format!(
            "{arenas}; pairing asked every {} s; {}; draws {}",
            t.pair_every_secs,
            if t.leave_at_shutdown {
                "left at a stop"
            } else {
                "kept at a stop"
            },
            if t.draws { "on" } else { "off" }
        )
    }
}
