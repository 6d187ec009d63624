//! Which engine plays a game, and whether the external ones can: the
//! built-in engine, or the `[engines.NAME]` section that claims the game
//! (`config::engine_for`). Each external engine is probed (started, `uci`,
//! its name and variants read, stopped) when the daemon starts, and again
//! in the background when its last probe is old or failed; a challenge it
//! would play is accepted only when its last probe succeeded and listed
//! the variant, so a missing or broken engine declines challenges with a
//! logged reason and never takes a game it cannot play.

use crate::bot::board::variant::uci_variant;
use crate::bot::external::{self, EngineId, EngineSpec};
use crate::bot::game::ExternalChoice;
use crate::config::{Config, ExternalEngineConfig, GameKind, engine_for};
use crate::lichess::model::VariantKey;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A failed probe is tried again after this, when a game wants the engine.
const RETRY_BROKEN: Duration = Duration::from_secs(60);
/// A good probe is refreshed after this (the binary may have changed).
const REFRESH_GOOD: Duration = Duration::from_secs(3600);

/// Who plays a game.
#[derive(Debug, Clone)]
pub enum Player {
    /// The built-in engine.
    BuiltIn,
    /// The external engine of this `[engines.NAME]` section.
    External(Arc<ExternalChoice>),
}

/// What the last probe of an engine said.
#[derive(Debug, Clone)]
enum Health {
    Good(EngineId),
    Broken(String),
}

#[derive(Debug)]
struct Probed {
    health: Health,
    at: Instant,
    /// A probe is running.
    probing: bool,
}

/// The external engines and their health.
#[derive(Debug, Default)]
pub struct Engines {
    config: BTreeMap<String, ExternalEngineConfig>,
    /// `engine.move_overhead_ms`: an engine's own when it sets none.
    overhead: Duration,
    probed: Mutex<HashMap<String, Probed>>,
}

/// The driver's description of the engine of section `name`.
pub fn spec(name: &str, config: &ExternalEngineConfig) -> EngineSpec {
    EngineSpec {
        name: name.to_owned(),
        command: config.command.clone(),
        args: config.args.clone(),
        working_dir: config.working_dir.clone(),
        options: config
            .options
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
        ponder: config.ponder,
    }
}

fn choice(name: &str, config: &ExternalEngineConfig, overhead: Duration) -> ExternalChoice {
    ExternalChoice {
        spec: spec(name, config),
        move_overhead: config.move_overhead(overhead),
        max_depth: config.max_depth,
        max_nodes: config.max_nodes,
    }
}

/// The variants `config` claims that the engine `id` does not name.
fn missing_variants(config: &ExternalEngineConfig, id: &EngineId) -> Vec<&'static str> {
    config
        .variants
        .iter()
        .map(|v| v.key())
        .filter(|&v| !id_plays(id, v))
        .map(VariantKey::as_str)
        .collect()
}

/// Whether an engine that said `id` plays `variant`: a variant of its
/// own must be in its `UCI_Variant` list, Chess960 needs `UCI_Chess960`.
pub fn id_plays(id: &EngineId, variant: VariantKey) -> bool {
    match uci_variant(variant) {
        Some(name) => id.variant(name).is_some(),
        None if variant == VariantKey::Chess960 => id.chess960,
        None => true,
    }
}

impl Engines {
    pub fn new(config: &Config) -> Arc<Engines> {
        Arc::new(Engines {
            config: config.engines.clone(),
            overhead: config.engine.move_overhead(),
            probed: Mutex::new(HashMap::new()),
        })
    }

    /// Probes every engine now (at start), logging what each is.
    pub async fn probe_all(self: &Arc<Engines>) {
        for name in self.config.keys() {
            self.probe(name).await;
        }
    }

    /// Probes `name` and records the result.
    async fn probe(&self, name: &str) {
        let Some(config) = self.config.get(name) else {
            return;
        };
        let health = match external::probe(&spec(name, config)).await {
            Ok(id) => {
                let missing = missing_variants(config, &id);
                if missing.is_empty() {
                    tracing::info!(engine = %name, id = %id.name, "external engine ready");
                } else {
                    tracing::warn!(engine = %name, id = %id.name, missing = %missing.join(","), "the engine does not play every variant it is configured for: those are declined");
                }
                Health::Good(id)
            }
            Err(e) => {
                tracing::error!(engine = %name, "external engine unusable: {e}; its games are declined");
                Health::Broken(e.to_string())
            }
        };
        if let Ok(mut probed) = self.probed.lock() {
            probed.insert(
                name.to_owned(),
                Probed {
                    health,
                    at: Instant::now(),
                    probing: false,
                },
            );
        }
    }

    /// Who plays a game of `kind`: Ok(player), or Err(why not) when the
    /// engine that would play it is not usable (or there is none). A probe
    /// that is old or failed a while ago is redone in the background; this
    /// answer uses what is known now.
    pub fn player(self: &Arc<Engines>, kind: GameKind) -> Result<Player, String> {
        let Some((name, config)) = engine_for(&self.config, kind) else {
            return if matches!(
                kind.variant,
                VariantKey::Standard | VariantKey::Chess960 | VariantKey::FromPosition
            ) {
                Ok(Player::BuiltIn)
            } else {
                Err(format!("no engine plays {}", kind.variant.as_str()))
            };
        };
        let verdict = {
            let Ok(mut probed) = self.probed.lock() else {
                return Err("engine registry poisoned".to_owned());
            };
            let entry = probed.get_mut(name);
            let (verdict, stale) = match entry.as_ref().map(|p| (&p.health, p.at, p.probing)) {
                None => (Err(format!("engine {name} not probed yet")), true),
                Some((Health::Good(id), at, _)) => (
                    if id_plays(id, kind.variant) {
                        Ok(())
                    } else {
                        Err(format!(
                            "engine {name} ({}) does not play {}",
                            id.name,
                            kind.variant.as_str()
                        ))
                    },
                    at.elapsed() >= REFRESH_GOOD,
                ),
                Some((Health::Broken(why), at, _)) => (
                    Err(format!("engine {name} unusable: {why}")),
                    at.elapsed() >= RETRY_BROKEN,
                ),
            };
            let probing = entry.as_ref().is_some_and(|p| p.probing);
            if stale && !probing {
                if let Some(p) = probed.get_mut(name) {
                    p.probing = true;
                }
                let engines = Arc::clone(self);
                let name = name.to_owned();
                tokio::spawn(async move { engines.probe(&name).await });
            }
            verdict
        };
        verdict.map(|()| Player::External(Arc::new(choice(name, config, self.overhead))))
    }

    /// One line per engine for `kaissa check`: its name, what it says it
    /// is, and the games it plays.
    pub async fn describe(self: &Arc<Engines>) -> Vec<String> {
        self.probe_all().await;
        let names: Vec<&String> = self.config.keys().collect();
        let probed = self.probed.lock().map(|p| {
            names
                .iter()
                .map(|n| (n.to_string(), p.get(*n).map(|p| p.health.clone())))
                .collect::<Vec<_>>()
        });
        let Ok(probed) = probed else {
            return Vec::new();
        };
        probed
            .into_iter()
            .map(|(name, health)| {
                let config = &self.config[&name];
                let games = describe_games(config);
                match health {
                    Some(Health::Good(id)) => {
                        let missing = missing_variants(config, &id);
                        let author = id.author.map(|a| format!(" by {a}")).unwrap_or_default();
                        let mut line = format!("engine {name}: {}{author}; plays {games}", id.name);
                        if !missing.is_empty() {
                            line +=
                                &format!("; NOT {} (the engine lacks them)", missing.join(", "));
                        }
                        line
                    }
                    Some(Health::Broken(why)) => format!("engine {name}: UNUSABLE: {why}"),
                    None => format!("engine {name}: not probed"),
                }
            })
            .collect()
    }

    /// Whether an engine is broken (for `kaissa check`'s exit status).
    pub fn any_broken(&self) -> bool {
        self.probed
            .lock()
            .map(|p| p.values().any(|p| matches!(p.health, Health::Broken(_))))
            .unwrap_or(true)
    }
}

/// "crazyhouse, atomic (blitz, rapid; humans; rated)".
fn describe_games(config: &ExternalEngineConfig) -> String {
    let variants: Vec<&str> = config.variants.iter().map(|v| v.key().as_str()).collect();
    let mut filters = Vec::new();
    if !config.speeds.is_empty() {
        filters.push(
            config
                .speeds
                .iter()
                .map(|s| s.speed().as_str())
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    match config.opponents {
        crate::config::Opponents::Any => {}
        crate::config::Opponents::Humans => filters.push("humans only".to_owned()),
        crate::config::Opponents::Bots => filters.push("bots only".to_owned()),
    }
    match config.rated {
        crate::config::RatedFilter::Any => {}
        crate::config::RatedFilter::Rated => filters.push("rated only".to_owned()),
        crate::config::RatedFilter::Casual => filters.push("casual only".to_owned()),
    }
    if filters.is_empty() {
        variants.join(", ")
    } else {
        format!("{} ({})", variants.join(", "), filters.join("; "))
    }
}
