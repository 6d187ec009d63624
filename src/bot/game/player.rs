//! The engine that plays a game, built-in or external, behind one
//! interface: [`Player::go`] searches for our move, [`Player::ponder`]
//! thinks on the opponent's time, [`Player::ponderhit`] and
//! [`Player::stop`]; its answers come back as one [`Answer`]. The game
//! (`mover.rs`) decides what to search and with which clocks, the same
//! way whichever engine plays; only here do the two differ: the built-in
//! engine gets the position and the key history on kaissa's board and
//! counts our clock from the state's arrival, an external one gets the
//! move list and the clocks as they stand, less our overhead (see
//! [`clock::told_for_search`]).

use super::clock;
use crate::bot::board::Record;
use crate::bot::external::{self, ExternalEngine};
use crate::chess::Move;
use crate::engine::{self, Engine, GoRequest, Limits, SearchId, SearchInfo};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Who thinks for us: the built-in engine (its own thread and table) or
/// an external UCI engine (its own process).
pub(super) enum Player {
    BuiltIn(Engine),
    External(ExternalEngine),
}

/// The answers of the game's engine, as they come.
pub(super) enum Answers {
    BuiltIn(mpsc::UnboundedReceiver<engine::Event>),
    External(mpsc::UnboundedReceiver<external::Event>),
}

/// A search of the built-in engine or of an external one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SearchRef {
    BuiltIn(SearchId),
    External(external::SearchId),
}

/// What an engine said of a search in progress (its last line).
#[derive(Debug, Clone)]
pub(super) enum Said {
    BuiltIn(SearchInfo),
    External(external::Info),
}

/// An engine's best move and the reply it expects; the built-in engine's
/// on kaissa's board, an external one's as text (UCI).
#[derive(Debug)]
pub(super) enum Best {
    BuiltIn {
        mv: Option<Move>,
        ponder: Option<Move>,
    },
    External {
        mv: String,
        ponder: Option<String>,
    },
}

impl Best {
    /// The move and the expected reply as Lichess writes them (UCI, in
    /// the game's castling notation).
    pub(super) fn texts(self, record: &Record) -> (Option<String>, Option<String>) {
        match self {
            Best::BuiltIn { mv, ponder } => {
                let chess960 = record.native().is_some_and(|r| r.chess960());
                let text = |m: Move| m.to_uci(chess960);
                (mv.map(text), ponder.map(text))
            }
            Best::External { mv, ponder } => (Some(mv), ponder),
        }
    }
}

/// An answer of the engine.
#[derive(Debug)]
pub(super) enum Answer {
    /// A search's progress (the principal line only).
    Info { id: SearchRef, said: Said },
    /// A search is over (exactly one a search, stopped or not).
    BestMove { id: SearchRef, best: Best },
    /// A search ended without a move (an external engine's process died,
    /// hung, or said `bestmove (none)`; the built-in search panicked).
    Failed { id: SearchRef, error: String },
}

impl Answers {
    /// The next answer; `None` when the engine is gone.
    pub(super) async fn recv(&mut self) -> Option<Answer> {
        match self {
            Answers::BuiltIn(rx) => loop {
                let answer = match rx.recv().await? {
                    engine::Event::Info { info, .. } if info.multipv > 1 => continue,
                    engine::Event::Info { id, info } => Answer::Info {
                        id: SearchRef::BuiltIn(id),
                        said: Said::BuiltIn(info),
                    },
                    engine::Event::BestMove { id, best } => Answer::BestMove {
                        id: SearchRef::BuiltIn(id),
                        best: Best::BuiltIn {
                            mv: best.mv,
                            ponder: best.ponder,
                        },
                    },
                    engine::Event::Failed { id, error } => Answer::Failed {
                        id: SearchRef::BuiltIn(id),
                        error,
                    },
                };
                return Some(answer);
            },
            Answers::External(rx) => Some(match rx.recv().await? {
                external::Event::Info { id, info } => Answer::Info {
                    id: SearchRef::External(id),
                    said: Said::External(info),
                },
                external::Event::BestMove { id, best, ponder } => Answer::BestMove {
                    id: SearchRef::External(id),
                    best: Best::External { mv: best, ponder },
                },
                external::Event::Failed { id, error } => Answer::Failed {
                    id: SearchRef::External(id),
                    error,
                },
            }),
        }
    }
}

/// A search as the game orders it, whichever engine plays.
pub(super) struct Order<'a> {
    /// The game so far.
    pub record: &'a Record,
    /// Moves (UCI) to play on from the record first: none for our move,
    /// ours and the expected reply for a ponder search.
    pub ahead: &'a [String],
    /// The limits from the game's clocks as they stood when `arrived`
    /// (see `Game::limits`): our share of the threads, depth and nodes
    /// included.
    pub limits: Limits,
    pub us: crate::chess::Color,
    /// When the state that made it our turn arrived: our clock has run
    /// since.
    pub arrived: Instant,
    /// The moves to choose among (UCI); empty for all.
    pub searchmoves: Vec<String>,
}

impl Player {
    /// Starts the search for our move; `None` if this engine cannot
    /// search the order (the built-in engine off kaissa's board).
    pub(super) fn go(&mut self, order: Order) -> Option<SearchRef> {
        match self {
            Player::BuiltIn(engine) => {
                let mut request = native_request(&order)?;
                request.clock_start = Some(order.arrived.into_std());
                Some(SearchRef::BuiltIn(engine.go(request)))
            }
            Player::External(engine) => {
                // The clocks as they stand now.
                let limits = clock::run_for(order.limits, order.us, order.arrived.elapsed());
                let told = clock::told_for_search(&limits, order.us, limits.thread_share);
                Some(SearchRef::External(engine.go(external_go(
                    order.record,
                    order.ahead,
                    &limits,
                    &told,
                    order.searchmoves,
                    false,
                ))))
            }
        }
    }

    /// Starts a search on the opponent's time, of the position after
    /// `order.ahead` (our move and the expected reply), with the clocks as
    /// they will be at the reply (`clocks_run`: Lichess adds our
    /// increment); `None` if the moves are not legal. `order.limits` hold
    /// our clock as it stands now, after the post.
    pub(super) fn ponder(&mut self, order: Order, clocks_run: bool) -> Option<SearchRef> {
        let limits = order.limits.clone();
        match self {
            Player::BuiltIn(engine) => {
                let limits = clock::at_reply(&limits, order.us, clocks_run);
                let request = native_request(&Order { limits, ..order })?;
                Some(SearchRef::BuiltIn(engine.go_ponder(request)))
            }
            Player::External(engine) => {
                let told = clock::told_for_ponder(&limits, order.us, clocks_run);
                Some(SearchRef::External(engine.go(external_go(
                    order.record,
                    order.ahead,
                    &limits,
                    &told,
                    Vec::new(),
                    true,
                ))))
            }
        }
    }

    /// The opponent played the expected reply, which arrived at
    /// `arrived`: the ponder search becomes the search for our move, on
    /// our clock since then (not since the game got round to it).
    pub(super) fn ponderhit(&mut self, arrived: Instant) {
        match self {
            Player::BuiltIn(engine) => engine.ponderhit_at(arrived.into_std()),
            Player::External(engine) => engine.ponderhit_at(arrived),
        }
    }

    /// Stops the search in progress; its answer still comes, and is
    /// ignored by its id.
    pub(super) fn stop(&mut self) {
        match self {
            Player::BuiltIn(engine) => engine.stop(),
            Player::External(engine) => engine.stop(),
        }
    }

    /// Whether this engine plays `variant`'s rules: the built-in engine
    /// chess only, an external one what its section claims (the game was
    /// given it for this variant) in the rules the board knows.
    pub(super) fn plays(&self, variant: crate::lichess::model::VariantKey) -> bool {
        let chess = variant.is_chess();
        match self {
            Player::BuiltIn(_) => chess,
            Player::External(_) => {
                chess || crate::bot::board::variant::shakmaty_variant(variant).is_some()
            }
        }
    }
}

impl Said {
    /// What the search said, for the log, the PGN and the rules: `None`
    /// without a score (or, for the built-in engine, off its board).
    pub(super) fn report(&self, record: &Record) -> Option<super::mover::Report> {
        match self {
            Said::BuiltIn(info) => record
                .native()
                .map(|r| super::mover::Report::of_search(info, r.position())),
            Said::External(info) => super::mover::Report::of_external(info, record),
        }
    }

    /// The first move of the line it reported, as text (UCI, in the
    /// game's castling notation); the caller checks it is legal.
    pub(super) fn first_move(&self, record: &Record) -> Option<String> {
        match self {
            Said::BuiltIn(info) => {
                let chess960 = record.native().is_some_and(|r| r.chess960());
                info.pv.first().map(|m| m.to_uci(chess960))
            }
            Said::External(info) => info.pv.first().cloned(),
        }
    }
}

/// The built-in engine's request for `order`: the position after the
/// moves ahead, with the keys of every position before it.
fn native_request(order: &Order) -> Option<GoRequest> {
    let record = order.record.native()?;
    let mut pos = record.position().clone();
    let mut history = record.history();
    for text in order.ahead {
        let m = pos.parse_uci(text, record.chess960()).ok()?;
        history.push(pos.key());
        pos = pos.play(m);
    }
    let mut limits = order.limits.clone();
    limits.searchmoves = order
        .searchmoves
        .iter()
        .filter_map(|t| pos.parse_uci(t, record.chess960()).ok())
        .collect();
    Some(GoRequest::new(pos, history, limits))
}

/// An external engine's `go`: the whole move list from the game's start,
/// the clocks it is told, and depth and nodes from the limits.
fn external_go(
    record: &Record,
    ahead: &[String],
    limits: &Limits,
    told: &clock::Told,
    searchmoves: Vec<String>,
    ponder: bool,
) -> external::Go {
    let mut moves = record.uci_moves();
    moves.extend(ahead.iter().cloned());
    external::Go {
        fen: record.engine_fen(),
        moves,
        searchmoves,
        wtime: told.wtime,
        btime: told.btime,
        winc: told.winc,
        binc: told.binc,
        movetime: if ponder { None } else { limits.movetime },
        depth: limits.depth,
        nodes: limits.nodes,
        ponder,
        deadline: told.deadline,
        chess960: record.chess960(),
    }
}
