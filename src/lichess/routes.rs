//! Every Lichess endpoint the client calls, in one table: its method, its
//! path as the API specification writes it (a `{param}` for each part a
//! call fills in, in order) and the rate-limit gate it waits at. A new
//! endpoint is a line here and a call in `client/mod.rs`; the spec test
//! checks every line against the specification's paths and methods.

use super::gates::Endpoint;
use reqwest::Method;

/// One endpoint.
#[derive(Debug, Clone)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    /// Whose rate-limit gate it waits at and closes.
    pub endpoint: Endpoint,
}

const fn get(path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method: Method::GET,
        path,
        endpoint,
    }
}

const fn post(path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method: Method::POST,
        path,
        endpoint,
    }
}

pub const ACCOUNT: Route = get("/api/account", Endpoint::Account);
pub const UPGRADE: Route = post("/api/bot/account/upgrade", Endpoint::Account);
pub const TOKEN_TEST: Route = post("/api/token/test", Endpoint::TokenTest);
pub const ONLINE_BOTS: Route = get("/api/bot/online", Endpoint::OnlineBots);
/// Behind the online bots' gate: matchmaking asks both.
pub const USERS_STATUS: Route = get("/api/users/status", Endpoint::OnlineBots);
pub const PLAYING: Route = get("/api/account/playing", Endpoint::Playing);
pub const EVENTS: Route = get("/api/stream/event", Endpoint::Events);
pub const GAME_STREAM: Route = get("/api/bot/game/stream/{gameId}", Endpoint::Game);
pub const MOVE: Route = post("/api/bot/game/{gameId}/move/{move}", Endpoint::Game);
pub const CHAT: Route = post("/api/bot/game/{gameId}/chat", Endpoint::Chat);
pub const CHAT_HISTORY: Route = get("/api/bot/game/{gameId}/chat", Endpoint::Chat);
pub const ABORT: Route = post("/api/bot/game/{gameId}/abort", Endpoint::Game);
pub const RESIGN: Route = post("/api/bot/game/{gameId}/resign", Endpoint::Game);
/// `{accept}`: `yes` or `no`.
pub const DRAW: Route = post("/api/bot/game/{gameId}/draw/{accept}", Endpoint::Offers);
pub const TAKEBACK: Route = post("/api/bot/game/{gameId}/takeback/{accept}", Endpoint::Offers);
pub const CLAIM_VICTORY: Route = post("/api/bot/game/{gameId}/claim-victory", Endpoint::Game);
pub const CLAIM_DRAW: Route = post("/api/bot/game/{gameId}/claim-draw", Endpoint::Game);
pub const CHALLENGE_CREATE: Route = post("/api/challenge/{username}", Endpoint::ChallengeCreate);
pub const CHALLENGE_ACCEPT: Route = post(
    "/api/challenge/{challengeId}/accept",
    Endpoint::ChallengeAnswer,
);
pub const CHALLENGE_DECLINE: Route = post(
    "/api/challenge/{challengeId}/decline",
    Endpoint::ChallengeAnswer,
);
pub const CHALLENGE_CANCEL: Route = post(
    "/api/challenge/{challengeId}/cancel",
    Endpoint::ChallengeCancel,
);
pub const TOURNAMENT: Route = get("/api/tournament/{id}", Endpoint::Tournament);
pub const TOURNAMENT_JOIN: Route = post("/api/tournament/{id}/join", Endpoint::Tournament);
pub const TOURNAMENT_WITHDRAW: Route = post("/api/tournament/{id}/withdraw", Endpoint::Tournament);
/// lila's route has no `/api`.
pub const TEAM_JOIN: Route = post("/team/{teamId}/join", Endpoint::Tournament);

/// The whole table.
pub const ALL: &[Route] = &[
    ACCOUNT,
    UPGRADE,
    TOKEN_TEST,
    ONLINE_BOTS,
    USERS_STATUS,
    PLAYING,
    EVENTS,
    GAME_STREAM,
    MOVE,
    CHAT,
    CHAT_HISTORY,
    ABORT,
    RESIGN,
    DRAW,
    TAKEBACK,
    CLAIM_VICTORY,
    CLAIM_DRAW,
    CHALLENGE_CREATE,
    CHALLENGE_ACCEPT,
    CHALLENGE_DECLINE,
    CHALLENGE_CANCEL,
    TOURNAMENT,
    TOURNAMENT_JOIN,
    TOURNAMENT_WITHDRAW,
    TEAM_JOIN,
];

impl Route {
    /// The path with its `{param}`s replaced by `args`, in order (the
    /// caller checked them: ids, a UCI move).
    pub fn path_with(&self, args: &[&str]) -> String {
        let mut out = String::with_capacity(self.path.len() + 16);
        let mut args = args.iter();
        let mut rest = self.path;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
            out.push_str(args.next().copied().unwrap_or_default());
            rest = &rest[close..];
        }
        out.push_str(rest);
        out
    }

    /// How many parts a call fills in.
    pub fn params(&self) -> usize {
        self.path.matches('{').count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_filled_in_order() {
        assert_eq!(ACCOUNT.path_with(&[]), "/api/account");
        assert_eq!(
            MOVE.path_with(&["abcd1234", "e2e4"]),
            "/api/bot/game/abcd1234/move/e2e4"
        );
        assert_eq!(DRAW.path_with(&["g", "yes"]), "/api/bot/game/g/draw/yes");
        assert_eq!(TEAM_JOIN.path_with(&["coders"]), "/team/coders/join");
    }

    #[test]
    fn every_route_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for route in ALL {
            assert!(
                seen.insert((route.method.as_str(), route.path)),
                "{} {} twice",
                route.method,
                route.path
            );
        }
        assert_eq!(ALL.len(), 25);
    }
}
