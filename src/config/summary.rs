//! What `kaissa check` prints about the configuration: the settings an
//! operator most needs to see at a glance (slots, queue, fair limits,
//! quota, correspondence, matchmaking, tournaments, PGNs).

use super::sections::{AcceptedSpeed, Config, PgnFile};
use super::terms::Challenger;

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
                "on: after {} s idle, rating {:+}..={:+} (target {:+}), {} {}, {}{}, timeout {} s; \
                 declined: that clock or variant skipped {} s, later/generic {} s, no answer {} s, \
                 {}",
                m.idle_secs,
                m.min_rating_diff,
                m.max_rating_diff,
                m.target_rating_diff,
                m.time_controls.join(" "),
                m.variants
                    .iter()
                    .map(|v| v.key().as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                if m.rated { "rated" } else { "casual" },
                if m.pairs { ", in pairs" } else { "" },
                m.challenge_timeout_secs,
                m.offer_cooldown_secs,
                m.later_cooldown_secs,
                m.decline_cooldown_secs,
                match m.block_after_declines {
                    0 => "never blocked".to_owned(),
                    n => format!("blocked {} s after {n} in a row", m.block_secs),
                }
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
                "challenges from humans: {}",
                self.policy_summary(Challenger::Human)
            ),
            format!(
                "challenges from bots: {}",
                self.policy_summary(Challenger::Bot)
            ),
            format!(
                "challenge queue: up to {}, {}by {}",
                c.queue_size,
                if c.queue_first.is_empty() {
                    String::new()
                } else {
                    let first: Vec<&str> = c.queue_first.iter().map(|g| g.as_str()).collect();
                    format!("{} first, then ", first.join(", "))
                },
                c.queue_order.as_str()
            ),
            format!(
                "rating difference: {rating_diff}; days per move: {}..={}",
                c.min_days_per_turn, c.max_days_per_turn
            ),
            format!("bot games per day: {}", b.bot_games_per_day),
            format!(
                "correspondence: {} s per move, parked {} s after; ongoing games checked every {} s",
                b.correspondence_move_secs, b.correspondence_park_secs, b.playing_check_secs
            ),
            format!("takebacks per game: {}", b.max_takebacks),
            format!("PGN: {}", self.pgn_summary()),
            format!("matchmaking: {matchmaking}"),
            format!("tournaments: {}", self.tournaments_summary()),
            format!("search threads: {}", self.threads_summary()),
            format!("memory: {}", self.memory_summary()),
        ]
    }

    /// What challengers of one kind may ask for, and from which section.
    fn policy_summary(&self, who: Challenger) -> String {
        let c = &self.challenge;
        match who {
            Challenger::Human if c.only_bots => return "declined (only_bots)".to_owned(),
            Challenger::Bot if !c.accept_bots => {
                return "declined (accept_bots = false)".to_owned();
            }
            _ => {}
        }
        let p = c.for_challenger(who);
        let list = |items: Vec<&str>| items.join(" ");
        let mut text = format!(
            "{}; {}; base {}..={} s, increment {}..={} s",
            list(p.variants.iter().map(|v| v.key().as_str()).collect()),
            list(p.speeds.iter().map(|s| s.speed().as_str()).collect()),
            p.min_base,
            p.max_base,
            p.min_increment,
            p.max_increment,
        );
        if p.bullet_requires_increment {
            text.push_str(", bullet needs an increment");
        }
        if p.max_game_secs > 0 {
            text.push_str(&format!(", games up to {} s", p.max_game_secs));
        }
        let modes = match (p.rated, p.casual) {
            (true, true) => "rated or casual",
            (true, false) => "rated only",
            _ => "casual only",
        };
        text.push_str(&format!(
            "; {modes}; rating {}..={}",
            p.min_rating, p.max_rating
        ));
        match c.terms(who) {
            Some(_) => text.push_str(&format!(" ([challenge.{}])", who.section())),
            None => text.push_str(" ([challenge])"),
        }
        text
    }

    /// Where the PGNs go, in which files, with which comments.
    fn pgn_summary(&self) -> String {
        let b = &self.bot;
        let Some(dir) = &b.pgn_dir else {
            return "not written".to_owned();
        };
        let file = match b.pgn_file {
            PgnFile::Game => "one file per game",
            PgnFile::Opponent => "one file per opponent (appended)",
            PgnFile::All => "one file for all games (games.pgn, appended)",
        };
        let comments: Vec<&str> = b.pgn_comments.iter().map(|c| c.as_str()).collect();
        let comments = match comments.join(" ") {
            none if none.is_empty() => "none".to_owned(),
            some => some,
        };
        format!("in {}, {file}; comments: {comments}", dir.display())
    }

    /// The most memory the configuration can take, MiB: for the built-in
    /// engine the README's bound (2 x `hash_mb` + 64 + 32 per game), and
    /// for the external engines, each game played by the hungriest of
    /// them (its `Hash`, 16 when unset, plus 30 MiB of process).
    pub fn memory_need_mib(&self) -> (u64, u64) {
        let games = u64::from(self.bot.concurrency);
        let builtin = 2 * u64::from(self.engine.hash_mb) + 64 + 32 * games;
        let hungriest = self
            .engines
            .values()
            .map(|e| {
                let hash = e
                    .options
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("hash"))
                    .and_then(|(_, v)| v.to_string().parse::<u64>().ok())
                    .unwrap_or(DEFAULT_EXTERNAL_HASH_MIB);
                hash + EXTERNAL_PROCESS_MIB
            })
            .max()
            .unwrap_or(0);
        (builtin, hungriest * games)
    }

    fn memory_summary(&self) -> String {
        let (builtin, external) = self.memory_need_mib();
        if external == 0 {
            format!("up to about {builtin} MiB")
        } else {
            format!(
                "up to about {} MiB ({builtin} for kaissa, {external} for external engines)",
                builtin + external
            )
        }
    }

    /// A warning when the configuration can take more memory than `limit`
    /// MiB (the service's `MemoryMax`; `None`: the shipped units' 256).
    pub fn memory_warning(&self, limit: Option<u64>) -> Option<String> {
        let (builtin, external) = self.memory_need_mib();
        let need = builtin + external;
        let (limit, what) = match limit {
            Some(l) => (l, "this cgroup's memory.max"),
            None => (SHIPPED_MEMORY_MAX_MIB, "the shipped unit's MemoryMax"),
        };
        (need > limit).then(|| {
            format!(
                "the configuration can take about {need} MiB ({builtin} for kaissa's tables and \
                 games, {external} for external engines' Hash and processes), more than {what} \
                 ({limit} MiB): raise MemoryMax with `systemctl edit kaissa` (README, \
                 \"Running as a service\") or lower engine.hash_mb, bot.concurrency or the \
                 engines' Hash"
            )
        })
    }

    /// How the games share the search threads.
    fn threads_summary(&self) -> String {
        let (threads, games) = (self.engine.threads.max(1), self.bot.concurrency);
        if games <= threads {
            return format!("{threads} for up to {games} games: one each");
        }
        format!(
            "{threads} for up to {games} games: shared by urgency (the game whose clock is \
             shortest first; a search with time to spare is cut short for a game that \
             cannot wait)"
        )
    }

    /// A warning when games can starve for a search thread: bullet
    /// accepted with more games than threads. `kaissa check` prints it.
    pub fn sharing_warning(&self) -> Option<String> {
        let (threads, games) = (self.engine.threads.max(1), self.bot.concurrency);
        let bullet = self.challenge.speeds.contains(&AcceptedSpeed::Bullet)
            || (self.matchmaking.enabled
                && self
                    .matchmaking
                    .time_controls
                    .iter()
                    .any(|tc| is_bullet(tc)));
        (bullet && games > threads).then(|| {
            format!(
                "bot.concurrency ({games}) is above engine.threads ({threads}) with bullet \
                 allowed: a bullet game may wait for a thread while other games search. \
                 kaissa serves the most urgent game first and cuts a longer search short \
                 for it (that game then plays on less thought); for full-strength bullet, \
                 set engine.threads to bot.concurrency, up to the cores you can give"
            )
        })
    }
}

/// `MemoryMax` of the shipped units, MiB.
const SHIPPED_MEMORY_MAX_MIB: u64 = 256;
/// An external engine's `Hash` when the configuration sets none (Stockfish
/// and Fairy-Stockfish default to 16 MiB), and its process besides.
const DEFAULT_EXTERNAL_HASH_MIB: u64 = 16;
const EXTERNAL_PROCESS_MIB: u64 = 30;

/// This process's cgroup memory limit in MiB (cgroup v2), if it has one:
/// under systemd, the unit's `MemoryMax`.
pub fn cgroup_memory_max_mib() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let max = std::fs::read_to_string(format!("/sys/fs/cgroup{}/memory.max", path.trim())).ok()?;
    max.trim().parse::<u64>().ok().map(|b| b >> 20)
}

/// Whether a matchmaking time control (`minutes+increment`) is bullet by
/// Lichess's estimate (initial + 40 x increment under 180 s).
fn is_bullet(tc: &str) -> bool {
    let Some((minutes, inc)) = tc.split_once('+') else {
        return false;
    };
    let (Ok(minutes), Ok(inc)) = (minutes.trim().parse::<f64>(), inc.trim().parse::<f64>()) else {
        return false;
    };
    minutes * 60.0 + 40.0 * inc < 180.0
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
            "{arenas}; read every {} s; {}; draws {}",
            t.check_every_secs,
            if t.leave_at_shutdown {
                "left at a stop"
            } else {
                "kept at a stop"
            },
            if t.draws { "on" } else { "off" }
        )
    }
}
