//! TEMPORARY compile stub (not committed)
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    pub name: String,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub working_dir: Option<PathBuf>,
    pub options: Vec<(String, String)>,
    pub ponder: bool,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineId {
    pub name: String,
    pub author: Option<String>,
    pub variants: Vec<String>,
    pub chess960: bool,
    pub options: Vec<String>,
}
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error("x")]
    X,
}
pub async fn probe(_spec: &EngineSpec) -> Result<EngineId, ExternalError> {
    unimplemented!()
}
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Go {
    pub fen: Option<String>,
    pub moves: Vec<String>,
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    pub movetime: Option<Duration>,
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    pub ponder: bool,
    pub deadline: Option<Duration>,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    Cp(i32),
    Mate(i32),
}
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub depth: u32,
    pub score: Option<Score>,
    pub nodes: u64,
    pub pv: Vec<String>,
}
pub type SearchId = u64;
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Info {
        id: SearchId,
        info: Info,
    },
    BestMove {
        id: SearchId,
        best: String,
        ponder: Option<String>,
    },
    Failed {
        id: SearchId,
        error: String,
    },
}
pub struct ExternalEngine {
    id: EngineId,
}
impl ExternalEngine {
    pub async fn start(
        _spec: EngineSpec,
        _variant: Option<String>,
        _chess960: bool,
        _game: &str,
    ) -> Result<(ExternalEngine, mpsc::UnboundedReceiver<Event>), ExternalError> {
        unimplemented!()
    }
    pub fn id(&self) -> &EngineId {
        &self.id
    }
    pub fn go(&self, _go: Go) -> SearchId {
        0
    }
    pub fn ponderhit(&self) {}
    pub fn stop(&self) {}
    pub async fn quit(self) {}
}
