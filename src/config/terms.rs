//! `[challenge.humans]` and `[challenge.bots]`: the games each kind of
//! challenger may ask for. Every key left out takes `[challenge]`'s value,
//! so a section holds only what differs (bots: bullet and blitz, rated;
//! humans: anything up to classical, say). [`ChallengeConfig::for_challenger`]
//! gives the policy a challenge is judged by.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::sections::{AcceptedSpeed, ChallengeConfig, PlayableVariant};

/// The keys of `[challenge]` a `[challenge.humans]` or `[challenge.bots]`
/// section may set for its challengers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChallengeTerms {
    pub variants: Option<Vec<PlayableVariant>>,
    pub speeds: Option<Vec<AcceptedSpeed>>,
    pub min_base: Option<u32>,
    pub max_base: Option<u32>,
    pub min_increment: Option<u32>,
    pub max_increment: Option<u32>,
    pub bullet_requires_increment: Option<bool>,
    pub max_game_secs: Option<u32>,
    pub correspondence: Option<bool>,
    pub min_days_per_turn: Option<u32>,
    pub max_days_per_turn: Option<u32>,
    pub rated: Option<bool>,
    pub casual: Option<bool>,
    pub min_rating: Option<u32>,
    pub max_rating: Option<u32>,
    pub max_rating_diff: Option<u32>,
}

/// Who challenges: the policy of `[challenge.humans]` or
/// `[challenge.bots]` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenger {
    Human,
    Bot,
}

impl Challenger {
    /// The section's name under `[challenge]`.
    pub fn section(self) -> &'static str {
        match self {
            Challenger::Human => "humans",
            Challenger::Bot => "bots",
        }
    }
}

impl ChallengeConfig {
    /// The terms of `[challenge.humans]` or `[challenge.bots]`, if set.
    pub fn terms(&self, who: Challenger) -> Option<&ChallengeTerms> {
        match who {
            Challenger::Human => self.humans.as_ref(),
            Challenger::Bot => self.bots.as_ref(),
        }
    }

    /// The policy a challenger of this kind is judged by: `[challenge]`
    /// with the keys of its section, if it has one, put over it.
    pub fn for_challenger(&self, who: Challenger) -> Cow<'_, ChallengeConfig> {
        let Some(terms) = self.terms(who) else {
            return Cow::Borrowed(self);
        };
        let mut policy = self.clone();
        macro_rules! over {
            ($($key:ident),*) => {
                $(if let Some(value) = &terms.$key {
                    policy.$key = value.clone();
                })*
            };
        }
        over!(
            variants,
            speeds,
            min_base,
            max_base,
            min_increment,
            max_increment,
            bullet_requires_increment,
            max_game_secs,
            correspondence,
            min_days_per_turn,
            max_days_per_turn,
            rated,
            casual,
            min_rating,
            max_rating,
            max_rating_diff
        );
        Cow::Owned(policy)
    }

    /// The variants some challenger may ask for: those of the humans'
    /// policy and of the bots'.
    pub fn any_variants(&self) -> Vec<PlayableVariant> {
        let mut all = Vec::new();
        for who in [Challenger::Human, Challenger::Bot] {
            for &v in &self.for_challenger(who).variants {
                if !all.contains(&v) {
                    all.push(v);
                }
            }
        }
        all
    }
}
