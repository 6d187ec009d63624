//! Parking a correspondence game: it is the opponent's turn, who may take
//! days and did not answer within the park wait, so the task lets go of
//! everything (the game stream, the engine and its table; the daemon
//! gives back the slot) and ends. The daemon starts a new task when the
//! check of the games in progress finds it is our turn again.

use super::Game;

impl Game {
    pub(super) async fn park(mut self) {
        self.reader.stop();
        if self.search.thinking.take().is_some() {
            self.player.stop();
        }
        self.stop_pondering("parked");
        let ply = self.record.as_ref().map_or(0, |r| r.ply());
        tracing::info!(ply, "correspondence game parked until our turn");
        self.join_engine().await;
    }
}
