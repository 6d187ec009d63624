//! The bot's policy, pure (no I/O; the daemon acts on its answers): which
//! challenges to accept ([`challenge`]) and which wait ([`queue`]), the
//! daily quota of bot games ([`quota`]), the budget of challenges we create
//! ([`budget`]), the online block lists ([`blocklists`]), whom to
//! challenge ([`matchmaker`]) and what their declines teach it
//! ([`declines`]), and the arenas we play in ([`arenas`]).

pub mod arenas;
pub mod blocklists;
pub mod budget;
pub mod challenge;
pub mod declines;
pub mod matchmaker;
pub mod queue;
pub mod quota;
