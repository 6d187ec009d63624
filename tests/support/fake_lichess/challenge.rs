//! Challenges: one challenge, in either direction, and its record.

use std::collections::HashMap;

use shakmaty::Color;

use super::records::ChallengeRecord;
use super::setup::ChallengeSpec;

pub(super) struct ChallengeState {
    pub(super) id: String,
    pub(super) status: &'static str,
    pub(super) direction: &'static str,
    pub(super) spec: ChallengeSpec,
    /// The challenger's final colour (incoming) / the bot's (outgoing).
    pub(super) challenger_color: Color,
    pub(super) decline_reason: Option<String>,
    pub(super) dest: Option<String>,
    pub(super) form: HashMap<String, String>,
    pub(super) game_id: Option<String>,
}

impl ChallengeState {
    pub(super) fn record(&self) -> ChallengeRecord {
        ChallengeRecord {
            id: self.id.clone(),
            status: self.status.to_owned(),
            direction: self.direction.to_owned(),
            decline_reason: self.decline_reason.clone(),
            dest: self.dest.clone(),
            form: self.form.clone(),
            game_id: self.game_id.clone(),
        }
    }
}
