//! The search: iterative deepening over a principal-variation (PVS),
//! fail-soft negamax alpha-beta with aspiration windows, a quiescence
//! search at the leaves, and the selective rules that let it look deep
//! where it matters (pruning, reductions, extensions; each is explained
//! where it is applied).
//!
//! A `Searcher` is one search thread's private state (history tables,
//! stacks, node count). It never allocates inside the tree: the stacks
//! are fixed arrays and the key history is a `Vec` reserved up front.

use super::eval::evaluate;
use super::history::{ContKey, CorrKeys, History, stat_bonus};
use super::limits::Limits;
use super::movepick::{
    CheckInfo, MovePicker, OrderingContext, captured_role, is_capture, is_noisy,
};
use super::nnue::{self, AccumulatorStack, Network};
use super::score::{
    DRAW, INFINITE, MATE_BOUND, MAX_PLY, Score, TB_WIN, is_mate, mate_in, mated_in,
};
use super::see::{SEE_VALUE, see_ge};
use super::tablebase::{CURSED, Outcome as TbOutcome, Tablebases};
use super::timeman::{self, Pacer, SearchClock, TimeBudget, TimeManager};
use super::tt::{Bound, TranspositionTable};
use super::tune;
use crate::chess::{Color, Move, Position};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// One line of search output (UCI `info`), reported after each completed
/// iteration (one per MultiPV line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchInfo {
    pub depth: u32,
    pub seldepth: u32,
    /// 1-based MultiPV line number.
    pub multipv: u32,
    pub score: Score,
    pub nodes: u64,
    pub nps: u64,
    pub time: Duration,
    /// Permille of the transposition table used by this search.
    pub hashfull: u32,
    /// Endgame table probes that answered, in this search.
    pub tbhits: u64,
    pub pv: Vec<Move>,
}

/// What a finished search returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchResult {
    /// The move to play; `None` only when there is no legal move.
    pub best: Option<Move>,
    /// The expected reply, if known.
    pub ponder: Option<Move>,
    /// Internal value of the best line (side to move's view).
    pub value: i32,
    pub depth: u32,
    pub nodes: u64,
}

/// Shared switches that steer a running search from outside.
pub struct SearchControl<'a> {
    /// Set to abort the search as soon as possible.
    pub stop: &'a AtomicBool,
    /// While set, the clock does not limit the search (pondering).
    pub pondering: &'a AtomicBool,
    /// When `ponderhit` arrived (set before `pondering` is cleared): the
    /// real clock runs from there.
    pub ponderhit_at: Option<&'a OnceLock<Instant>>,
    /// When the clock started for this search, if before the call (see
    /// `GoRequest::clock_start`); never later than now.
    pub clock_start: Option<Instant>,
    /// How clock searches budget their time.
    pub time_manager: TimeManager,
    /// Pondering is on for this game (plan a little more time per move).
    pub ponder_enabled: bool,
    /// Helper thread of a lazy SMP search: `n` > 0 starts at depth 1 +
    /// n % 2 so that threads work at different depths of the shared table.
    pub helper: usize,
}

impl<'a> SearchControl<'a> {
    /// Control of a plain search: only `stop` and `pondering`.
    pub fn new(stop: &'a AtomicBool, pondering: &'a AtomicBool) -> SearchControl<'a> {
        SearchControl {
            stop,
            pondering,
            ponderhit_at: None,
            clock_start: None,
            time_manager: TimeManager::default(),
            ponder_enabled: false,
            helper: 0,
        }
    }
}

#[derive(Clone, Debug)]
struct RootMove {
    mv: Move,
    value: i32,
    prev_value: i32,
    seldepth: usize,
    pv: Vec<Move>,
    /// Nodes searched below this move, all iterations together.
    nodes: u64,
}

impl RootMove {
    fn new(mv: Move) -> RootMove {
        RootMove {
            mv,
            value: -INFINITE,
            prev_value: -INFINITE,
            seldepth: 0,
            pv: vec![mv],
            nodes: 0,
        }
    }
}

#[derive(Copy, Clone)]
struct Frame {
    static_eval: i32,
    killers: [Move; 2],
    /// Move made from this node (`Move::NONE` for a null move).
    current: Move,
    /// Continuation key of `current`.
    cont: ContKey,
    /// Move excluded from this node (singular-extension search).
    excluded: Move,
    /// Plies since the last null move (repetitions cannot cross it).
    plies_from_null: usize,
}

const EMPTY_FRAME: Frame = Frame {
    static_eval: -INFINITE,
    killers: [Move::NONE; 2],
    current: Move::NONE,
    cont: ContKey::NONE,
    excluded: Move::NONE,
    plies_from_null: 0,
};

/// Moves tried at a node before the one that cut off (they get a history
/// malus). Only the first `TRIED_MAX` are kept.
const TRIED_MAX: usize = 64;

/// From this depth on the pacer weighs the share of the nodes the best
/// move took (shallower, every move is searched about alike).
const NODE_SHARE_DEPTH: i32 = 8;

struct Tried {
    moves: [Move; TRIED_MAX],
    len: usize,
}

impl Tried {
    #[inline(always)]
    fn new() -> Tried {
        Tried {
            moves: [Move::NONE; TRIED_MAX],
            len: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, m: Move) {
        if self.len < TRIED_MAX {
            self.moves[self.len] = m;
            self.len += 1;
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }
}

/// Frames below ply 0, so that `ply - 2` is always a valid index.
const STACK_OFFSET: usize = 2;

/// Late-move reduction table: reduce more the deeper the node and the
/// later the move, since late moves of a well-ordered list rarely matter.
fn build_lmr() -> Box<[[i32; 64]; 64]> {
    let mut t = Box::new([[0i32; 64]; 64]);
    let base = tune::lmr_base() as f64 / 100.0;
    let div = tune::lmr_div() as f64 / 100.0;
    for (d, row) in t.iter_mut().enumerate().skip(1) {
        for (m, r) in row.iter_mut().enumerate().skip(1) {
            *r = (base + (d as f64).ln() * (m as f64).ln() / div) as i32;
        }
    }
    t
}

pub struct Searcher {
    pub history: Box<History>,
    stack: [Frame; MAX_PLY + STACK_OFFSET + 2],
    pv: Box<[[Move; MAX_PLY + 1]; MAX_PLY + 1]>,
    pv_len: [usize; MAX_PLY + 1],
    keys: Vec<u64>,
    lmr: Box<[[i32; 64]; 64]>,
    root_moves: Vec<RootMove>,
    root_depth: i32,
    pv_idx: usize,
    nodes: u64,
    seldepth: usize,
    nmp_min_ply: usize,
    stopped: bool,
    // Limits of the current search.
    start: Instant,
    budget: TimeBudget,
    pacer: Option<Pacer>,
    /// Thinking time since `go` and our clock since `go` or `ponderhit`.
    clock: SearchClock,
    max_nodes: u64,
    check_clock: bool,
    /// The network (shared by the engine's threads); `None`: the
    /// hand-crafted evaluation.
    net: Option<Arc<Network>>,
    accumulators: AccumulatorStack,
    /// Syzygy tables (shared by the engine's threads), probed in the
    /// search and at the root; `None`: no tables.
    tablebases: Option<Arc<Tablebases>>,
    /// Successful table probes of the current search.
    tb_hits: u64,
}

impl Default for Searcher {
    fn default() -> Self {
        Searcher::new()
    }
}

impl Searcher {
    pub fn new() -> Searcher {
        Searcher {
            history: History::new(),
            stack: [EMPTY_FRAME; MAX_PLY + STACK_OFFSET + 2],
            pv: Box::new([[Move::NONE; MAX_PLY + 1]; MAX_PLY + 1]),
            pv_len: [0; MAX_PLY + 1],
            keys: Vec::new(),
            lmr: build_lmr(),
            root_moves: Vec::new(),
            root_depth: 0,
            pv_idx: 0,
            nodes: 0,
            seldepth: 0,
            nmp_min_ply: 0,
            stopped: false,
            start: Instant::now(),
            budget: TimeBudget::default(),
            pacer: None,
            clock: SearchClock::new(Instant::now(), false),
            max_nodes: u64::MAX,
            check_clock: false,
            net: nnue::default_net(),
            accumulators: AccumulatorStack::new(),
            tablebases: None,
            tb_hits: 0,
        }
    }

    /// Evaluates with `net`, or with the hand-crafted evaluation if `None`.
    pub fn set_net(&mut self, net: Option<Arc<Network>>) {
        self.net = net;
    }

    /// Probes `tablebases` in the search and at the root (`None`: no
    /// tables).
    pub fn set_tablebases(&mut self, tablebases: Option<Arc<Tablebases>>) {
        self.tablebases = tablebases;
    }

    /// The static evaluation of `pos`, the node at `ply` of the line.
    #[inline(always)]
    fn evaluate(&mut self, pos: &Position, ply: usize) -> i32 {
        match &self.net {
            Some(net) => self.accumulators.evaluate(net, pos, ply),
            None => evaluate(pos),
        }
    }

    /// Forgets what was learned (new game).
    pub fn clear(&mut self) {
        self.history.clear();
    }

    /// Table probes that answered in the current or last search.
    pub fn tb_hits(&self) -> u64 {
        self.tb_hits
    }

    /// Nodes searched by the current or last search.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    #[inline(always)]
    fn frame(&self, ply: usize) -> &Frame {
        &self.stack[ply + STACK_OFFSET]
    }

    #[inline(always)]
    fn frame_mut(&mut self, ply: usize) -> &mut Frame {
        &mut self.stack[ply + STACK_OFFSET]
    }

    /// Searches `pos` (reached through the game positions `history`,
    /// oldest first) under `limits`; `multipv` lines are reported through
    /// `report` after each iteration.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &mut self,
        pos: &Position,
        history: &[u64],
        limits: &Limits,
        multipv: usize,
        tt: &TranspositionTable,
        ctrl: &SearchControl,
        report: &mut dyn FnMut(SearchInfo),
    ) -> SearchResult {
        let now = Instant::now();
        // A ponder search hit before it started (the engine thread was
        // saving the table, say) is on our clock since the hit.
        let hit = ctrl
            .ponderhit_at
            .and_then(|o| o.get().copied())
            .filter(|_| !ctrl.pondering.load(Ordering::SeqCst));
        self.start = ctrl.clock_start.or(hit).map_or(now, |at| at.min(now));
        self.nodes = 0;
        self.tb_hits = 0;
        self.seldepth = 0;
        self.stopped = false;
        self.nmp_min_ply = 0;
        let game_ply =
            2 * pos.fullmove_number().saturating_sub(1) + (pos.turn() == Color::Black) as u32;
        let plan = timeman::plan(
            limits,
            pos.turn(),
            game_ply,
            ctrl.ponder_enabled,
            ctrl.time_manager,
        );
        self.budget = plan.budget;
        self.pacer = plan.pacer;
        self.clock = SearchClock::new(self.start, ctrl.pondering.load(Ordering::SeqCst));
        self.max_nodes = limits.nodes.unwrap_or(u64::MAX).max(1);
        if cfg!(feature = "tune") {
            self.lmr = build_lmr();
        }
        self.check_clock = self.budget.hard.is_some();
        self.keys.clear();
        self.keys.reserve(history.len() + MAX_PLY + 8);
        self.keys.extend_from_slice(history);
        self.stack = [EMPTY_FRAME; MAX_PLY + STACK_OFFSET + 2];
        self.frame_mut(0).plies_from_null = pos.halfmove_clock() as usize;
        if let Some(net) = &self.net {
            self.accumulators.reset(net, pos);
        }

        // Root moves: all legal moves (or the requested subset), in move
        // picker order so that the fallback move is a sensible one.
        let tt_move = tt
            .probe(pos.key(), 0, pos.halfmove_clock())
            .map_or(Move::NONE, |h| h.mv);
        let mut picker = MovePicker::new(pos, tt_move, OrderingContext::default());
        self.root_moves.clear();
        while let Some(m) = picker.next(pos, &self.history) {
            if limits.searchmoves.is_empty() || limits.searchmoves.contains(&m) {
                self.root_moves.push(RootMove::new(m));
            }
        }
        if self.root_moves.is_empty() && !limits.searchmoves.is_empty() {
            // None of the requested moves is legal: search them all.
            for &m in pos.legal_moves().iter() {
                self.root_moves.push(RootMove::new(m));
            }
        }
        // In the tables: only the moves that keep the best outcome (in a
        // won ending, only the one that zeroes soonest, so the win comes
        // within the 50-move rule).
        if let Some(keep) = self
            .tablebases
            .as_ref()
            .filter(|tb| tb.covers(pos))
            .and_then(|tb| tb.root_moves(pos))
        {
            self.tb_hits += 1;
            if self.root_moves.iter().any(|rm| keep.contains(&rm.mv)) {
                self.root_moves.retain(|rm| keep.contains(&rm.mv));
            }
        }
        if self.root_moves.is_empty() {
            return SearchResult {
                best: None,
                ponder: None,
                value: if pos.in_check() { mated_in(0) } else { DRAW },
                depth: 0,
                nodes: 0,
            };
        }

        let max_depth = limits.depth.map_or(MAX_PLY as i32 - 4, |d| {
            (d as i32).clamp(1, MAX_PLY as i32 - 4)
        });
        let multipv = multipv.clamp(1, self.root_moves.len());
        let time_managed = self.budget.soft.is_some() && limits.movetime.is_none();
        let mut completed = 0;

        let first_depth = (1 + (ctrl.helper % 2) as i32).min(max_depth);
        for depth in first_depth..=max_depth {
            self.root_depth = depth;
            for rm in &mut self.root_moves {
                rm.prev_value = rm.value;
            }
            for pv_idx in 0..multipv {
                self.pv_idx = pv_idx;
                self.seldepth = 0;
                let prev = self.root_moves[pv_idx].prev_value;
                // Aspiration window: expect the score of the last iteration
                // and widen on failure.
                let mut delta = tune::asp_delta();
                let (mut alpha, mut beta) = if depth >= 4 && !is_mate(prev) && prev > -INFINITE {
                    ((prev - delta).max(-INFINITE), (prev + delta).min(INFINITE))
                } else {
                    (-INFINITE, INFINITE)
                };
                loop {
                    let v = self.root_search(pos, alpha, beta, depth, tt, ctrl);
                    self.root_moves[pv_idx..].sort_by_key(|rm| std::cmp::Reverse(rm.value));
                    if self.stopped {
                        break;
                    }
                    if v <= alpha {
                        beta = (alpha + beta) / 2;
                        alpha = (v - delta).max(-INFINITE);
                    } else if v >= beta {
                        beta = (v + delta).min(INFINITE);
                    } else {
                        break;
                    }
                    delta += delta / 2;
                }
                self.root_moves[..=pv_idx].sort_by_key(|rm| std::cmp::Reverse(rm.value));
                if self.stopped {
                    break;
                }
            }
            if self.stopped {
                break;
            }
            completed = depth;
            let elapsed = self.start.elapsed();
            for i in 0..multipv {
                let rm = &self.root_moves[i];
                report(SearchInfo {
                    depth: depth as u32,
                    seldepth: rm.seldepth.max(1) as u32,
                    multipv: i as u32 + 1,
                    score: Score::from_value(rm.value),
                    nodes: self.nodes,
                    nps: nps(self.nodes, elapsed),
                    time: elapsed,
                    hashfull: tt.hashfull(),
                    tbhits: self.tb_hits,
                    pv: rm.pv.clone(),
                });
            }

            // Stop early when more depth cannot change the decision.
            let best = self.root_moves[0].value;
            if limits.soft_nodes.is_some_and(|n| self.nodes >= n) {
                break;
            }
            if let Some(n) = limits.mate
                && best >= MATE_BOUND
                && (super::score::MATE - best + 1) / 2 <= n as i32
            {
                break;
            }
            let pondering = ctrl.pondering.load(Ordering::Relaxed);
            // The pacer follows every iteration, pondering or not, so it
            // knows the best move's history when the clock starts.
            let best_share = self.root_moves[0].nodes as f64 / self.nodes.max(1) as f64;
            let go_on = match &mut self.pacer {
                Some(p) => p.next_iteration(
                    self.root_moves[0].mv.to_bits(),
                    best,
                    (depth >= NODE_SHARE_DEPTH).then_some(best_share),
                    elapsed,
                ),
                None => self.budget.soft.is_none_or(|soft| elapsed < soft),
            };
            if time_managed && !pondering && (self.root_moves.len() == 1 || !go_on) {
                break;
            }
        }

        let best = &self.root_moves[0];
        let mut ponder = best.pv.get(1).copied();
        if ponder.is_none() {
            // Try the table for the expected reply.
            let child = pos.play(best.mv);
            if let Some(h) = tt.probe(child.key(), 1, child.halfmove_clock())
                && !h.mv.is_none()
                && child.is_legal(h.mv)
            {
                ponder = Some(h.mv);
            }
        }
        SearchResult {
            best: Some(best.mv),
            ponder,
            value: best.value,
            depth: completed as u32,
            nodes: self.nodes,
        }
    }

    /// Polls the stop flag, the clock and the node limit.
    #[inline(always)]
    fn check_limits(&mut self, ctrl: &SearchControl) {
        if self.nodes >= self.max_nodes {
            self.stopped = true;
        }
        if self.nodes & 1023 == 0 {
            if ctrl.stop.load(Ordering::Relaxed) {
                self.stopped = true;
            }
            if self.check_clock && !ctrl.pondering.load(Ordering::Relaxed) {
                self.check_clock_limits(ctrl);
            }
        }
    }

    /// The clock is running: stop at the hard limit, counted from when our
    /// clock started. A ponder search that has just been hit also stops if
    /// the time already spent pondering has bought what this move was due.
    #[cold]
    fn check_clock_limits(&mut self, ctrl: &SearchControl) {
        let now = Instant::now();
        if self.clock.is_pondering() {
            // First check after a ponderhit.
            let at = ctrl.ponderhit_at.and_then(|o| o.get().copied());
            self.clock.ponderhit(at.unwrap_or(now));
            let spent = self.clock.thinking(now);
            let done = match &self.pacer {
                Some(p) => p.out_of_time(spent),
                None => self.budget.soft.is_some_and(|soft| spent >= soft),
            };
            if done && self.root_depth > 1 {
                self.stopped = true;
            }
        }
        if let Some(hard) = self.budget.hard
            && self.clock.on_clock(now) >= hard
        {
            self.stopped = true;
        }
    }

    /// Draw by the 50-move rule, insufficient material or repetition.
    /// Inside the tree one repetition is enough (the side that could
    /// deviate would have); against the game before the root, a real
    /// threefold is needed.
    fn is_draw(&self, pos: &Position, ply: usize) -> bool {
        if pos.halfmove_clock() >= 100 {
            // Checkmate on the 100th half-move still wins.
            return !pos.in_check() || pos.has_legal_move();
        }
        if pos.is_insufficient_material() {
            return true;
        }
        let n = self.keys.len();
        let window = (pos.halfmove_clock() as usize)
            .min(self.frame(ply).plies_from_null)
            .min(n);
        let key = pos.key();
        let mut count = 0;
        let mut i = 4;
        while i <= window {
            if self.keys[n - i] == key {
                if i <= ply {
                    return true;
                }
                count += 1;
                if count >= 2 {
                    return true;
                }
            }
            i += 2;
        }
        false
    }

    fn update_pv(&mut self, ply: usize, m: Move) {
        self.pv[ply][ply] = m;
        let child_len = self.pv_len[ply + 1].max(ply + 1);
        for i in ply + 1..child_len {
            self.pv[ply][i] = self.pv[ply + 1][i];
        }
        self.pv_len[ply] = child_len;
    }

    #[inline(always)]
    fn enter_child(&mut self, ply: usize, parent: &Position, m: Move, cont: ContKey) {
        self.keys.push(parent.key());
        if self.net.is_some() {
            self.accumulators.push(ply + 1, parent, m);
        }
        let f = self.frame_mut(ply);
        f.current = m;
        f.cont = cont;
        let pfn = if m.is_none() {
            0
        } else {
            f.plies_from_null + 1
        };
        let next = self.frame_mut(ply + 1);
        next.plies_from_null = pfn;
        next.excluded = Move::NONE;
    }

    #[inline(always)]
    fn leave_child(&mut self) {
        self.keys.pop();
    }

    fn root_search(
        &mut self,
        pos: &Position,
        mut alpha: i32,
        beta: i32,
        depth: i32,
        tt: &TranspositionTable,
        ctrl: &SearchControl,
    ) -> i32 {
        let mut best = -INFINITE;
        let mut best_move = Move::NONE;
        let alpha_orig = alpha;
        self.pv_len[0] = 0;
        for i in self.pv_idx..self.root_moves.len() {
            let m = self.root_moves[i].mv;
            let child = pos.play(m);
            let cont = pos
                .piece_at(m.from())
                .map_or(ContKey::NONE, |p| ContKey::new(p, m.to()));
            self.enter_child(0, pos, m, cont);
            let nodes_before = self.nodes;
            self.nodes += 1;
            self.pv_len[1] = 1;
            let new_depth = depth - 1 + child.in_check() as i32;
            let mut v;
            if i == self.pv_idx {
                v = -self.negamax::<true>(&child, -beta, -alpha, new_depth, 1, false, tt, ctrl);
            } else {
                // Late quiet root moves get a light reduction too.
                let quiet = !is_noisy(pos, m) && !child.in_check();
                let r = if depth >= 3 && quiet && i >= 3 + self.pv_idx {
                    (self.lmr[depth.min(63) as usize][i.min(63)] - 1).max(0)
                } else {
                    0
                };
                v = -self.negamax::<false>(
                    &child,
                    -alpha - 1,
                    -alpha,
                    (new_depth - r).max(1),
                    1,
                    true,
                    tt,
                    ctrl,
                );
                if v > alpha && r > 0 {
                    v = -self.negamax::<false>(
                        &child,
                        -alpha - 1,
                        -alpha,
                        new_depth,
                        1,
                        false,
                        tt,
                        ctrl,
                    );
                }
                if v > alpha && v < beta {
                    v = -self.negamax::<true>(&child, -beta, -alpha, new_depth, 1, false, tt, ctrl);
                }
            }
            self.leave_child();
            self.root_moves[i].nodes += self.nodes - nodes_before;
            if self.stopped {
                break;
            }
            let rm = &mut self.root_moves[i];
            if i == self.pv_idx || v > alpha {
                rm.value = v;
                rm.seldepth = self.seldepth;
                rm.pv.clear();
                rm.pv.push(m);
                let len = self.pv_len[1];
                rm.pv.extend_from_slice(&self.pv[1][1..len.max(1)]);
            } else {
                // Only an upper bound is known: keep it out of the way.
                rm.value = -INFINITE;
            }
            if v > best {
                best = v;
                if v > alpha {
                    best_move = m;
                    if v >= beta {
                        break;
                    }
                    alpha = v;
                }
            }
        }
        if !self.stopped && self.pv_idx == 0 {
            let bound = if best >= beta {
                Bound::Lower
            } else if best > alpha_orig {
                Bound::Exact
            } else {
                Bound::Upper
            };
            tt.store(pos.key(), 0, best_move, best, -INFINITE, depth, bound);
        }
        best
    }

    /// Alpha-beta below the root. `PV` nodes have an open window and
    /// collect the principal variation; the others are null-window
    /// "prove it fails high or low" searches.
    #[allow(clippy::too_many_arguments)]
    fn negamax<const PV: bool>(
        &mut self,
        pos: &Position,
        mut alpha: i32,
        mut beta: i32,
        mut depth: i32,
        ply: usize,
        cut_node: bool,
        tt: &TranspositionTable,
        ctrl: &SearchControl,
    ) -> i32 {
        if depth <= 0 {
            return self.qsearch::<PV>(pos, alpha, beta, ply, tt, ctrl);
        }
        if PV {
            self.pv_len[ply] = ply;
        }
        self.check_limits(ctrl);
        if self.stopped {
            return 0;
        }
        if ply > self.seldepth {
            self.seldepth = ply;
        }
        let in_check = pos.in_check();
        if self.is_draw(pos, ply) {
            return DRAW;
        }
        if ply >= MAX_PLY - 1 {
            return if in_check {
                DRAW
            } else {
                self.evaluate(pos, ply)
            };
        }

        // Mate-distance pruning: a mate found nearer the root cannot be
        // improved on here, so the window shrinks to what is still possible.
        alpha = alpha.max(mated_in(ply));
        beta = beta.min(mate_in(ply + 1));
        if alpha >= beta {
            return alpha;
        }

        let us = pos.turn();
        let key = pos.key();
        let excluded = self.frame(ply).excluded;
        let tt_hit = if excluded.is_none() {
            tt.probe(key, ply, pos.halfmove_clock())
        } else {
            None
        };
        let tt_move = tt_hit.map_or(Move::NONE, |h| h.mv);

        // Endgame tables, right after a capture or pawn move (where their
        // WDL value counts the 50-move rule exactly). A win or loss is a
        // bound (its distance is unknown), a draw is exact.
        if excluded.is_none() && pos.halfmove_clock() == 0 {
            let outcome = self
                .tablebases
                .as_ref()
                .filter(|tb| tb.covers(pos))
                .and_then(|tb| tb.probe_wdl(pos));
            if let Some(outcome) = outcome {
                self.tb_hits += 1;
                let (value, bound) = match outcome {
                    TbOutcome::Win => (TB_WIN - ply as i32, Bound::Lower),
                    TbOutcome::Loss => (-TB_WIN + ply as i32, Bound::Upper),
                    TbOutcome::CursedWin => (DRAW + CURSED, Bound::Exact),
                    TbOutcome::BlessedLoss => (DRAW - CURSED, Bound::Exact),
                    TbOutcome::Draw => (DRAW, Bound::Exact),
                };
                let cutoff = match bound {
                    Bound::Lower => value >= beta,
                    Bound::Upper => value <= alpha,
                    _ => true,
                };
                if cutoff {
                    let stored = (depth + 6).min(MAX_PLY as i32 - 1);
                    tt.store(key, ply, Move::NONE, value, -INFINITE, stored, bound);
                    return value;
                }
            }
        }

        // A deep enough stored result settles a null-window node. Not near
        // the 50-move limit, where the stored line may no longer hold.
        if !PV
            && pos.halfmove_clock() < 90
            && let Some(h) = tt_hit
            && h.depth >= depth
            && h.cuts(alpha, beta)
        {
            return h.score;
        }

        // Static evaluation, refined by the stored score when its bound
        // points the right way. The correction histories' keys serve the
        // evaluation here and the correction's update at the end.
        let corr_keys = (!in_check).then(|| CorrKeys::of(pos));
        let raw_eval;
        let static_eval;
        let mut eval;
        match (corr_keys, tt_hit) {
            (None, _) => {
                raw_eval = -INFINITE;
                static_eval = -INFINITE;
                eval = -INFINITE;
            }
            (Some(keys), Some(h)) => {
                raw_eval = if h.eval > -INFINITE {
                    h.eval
                } else {
                    self.evaluate(pos, ply)
                };
                static_eval = self.corrected(us, keys, raw_eval);
                eval = static_eval;
                if !is_mate(h.score) && h.refines(eval) {
                    eval = h.score;
                }
            }
            (Some(keys), None) => {
                raw_eval = self.evaluate(pos, ply);
                static_eval = self.corrected(us, keys, raw_eval);
                eval = static_eval;
                if excluded.is_none() {
                    tt.store(key, ply, Move::NONE, 0, raw_eval, -7, Bound::None);
                }
            }
        }
        self.frame_mut(ply).static_eval = static_eval;
        // Improving: our position got better since our previous move,
        // so pruning can be bolder when it did not.
        let improving = !in_check
            && ply >= 2
            && self.frame(ply - 2).static_eval > -INFINITE
            && static_eval > self.frame(ply - 2).static_eval;
        self.frame_mut(ply + 2).killers = [Move::NONE; 2];

        if !PV && !in_check && excluded.is_none() {
            // Reverse futility: so far above beta that even giving back a
            // margin per remaining ply would still fail high.
            if depth <= tune::rfp_depth()
                && eval - tune::rfp_margin() * (depth - improving as i32) >= beta
                && eval < MATE_BOUND
            {
                return eval;
            }

            // Razoring: hopelessly below alpha near the leaves; only a
            // tactic could save it, so ask the quiescence search.
            if depth <= 3
                && eval + tune::razor_base() + tune::razor_depth2() * depth * depth < alpha
            {
                let v = self.qsearch::<false>(pos, alpha - 1, alpha, ply, tt, ctrl);
                if v < alpha {
                    return v;
                }
            }

            // Null move: if passing still fails high, a real move surely
            // would (except in zugzwang, hence the material condition and
            // the verification at high depth). Never twice in a row.
            if depth >= 3
                && eval >= beta
                && static_eval >= beta - tune::nmp_eval_depth() * depth + tune::nmp_eval_base()
                && ply >= self.nmp_min_ply
                && ply >= 1
                && !self.frame(ply - 1).current.is_none()
                && pos.has_non_pawn_material(us)
                && beta > -MATE_BOUND
            {
                let r = 3 + depth / 4 + ((eval - beta) / tune::nmp_eval_div()).min(3);
                let child = pos.play_null();
                tt.prefetch(child.key());
                self.enter_child(ply, pos, Move::NONE, ContKey::NONE);
                self.nodes += 1;
                let v = -self.negamax::<false>(
                    &child,
                    -beta,
                    -beta + 1,
                    depth - 1 - r,
                    ply + 1,
                    !cut_node,
                    tt,
                    ctrl,
                );
                self.leave_child();
                if self.stopped {
                    return 0;
                }
                if v >= beta {
                    // A mate found after passing is not proven: we may not
                    // pass in the real game.
                    let v = if v >= MATE_BOUND { beta } else { v };
                    if depth < 12 || self.nmp_min_ply > 0 {
                        return v;
                    }
                    // Verify at high depth with null moves off for a while.
                    self.nmp_min_ply = ply + (3 * (depth - r) / 4) as usize;
                    let w =
                        self.negamax::<false>(pos, beta - 1, beta, depth - r, ply, false, tt, ctrl);
                    self.nmp_min_ply = 0;
                    if w >= beta {
                        return v;
                    }
                }
            }
        }

        // Internal iterative reduction: with no stored move this node was
        // not expected to matter; search it a little shallower.
        if depth >= 4 && tt_move.is_none() && (PV || cut_node) {
            depth -= 1;
        }

        let prev1 = self.prev_cont(ply, 1);
        let ctx = OrderingContext {
            killers: self.frame(ply).killers,
            counter: self.history.countermove(prev1),
            cont: [prev1, self.prev_cont(ply, 2)],
            threats: pos.attacks_by(!us),
        };
        let mut picker = MovePicker::new(pos, tt_move, ctx);
        let mut check_info = None;
        let mut best = -INFINITE;
        let mut best_move = Move::NONE;
        let mut move_count = 0usize;
        let mut quiets = Tried::new();
        let mut captures = Tried::new();
        let alpha_orig = alpha;
        let tt_capture = !tt_move.is_none() && is_capture(pos, tt_move);

        while let Some(m) = picker.next(pos, &self.history) {
            if m == excluded {
                continue;
            }
            move_count += 1;
            let noisy = is_noisy(pos, m);
            let Some(piece) = pos.piece_at(m.from()) else {
                continue;
            };
            let cont = ContKey::new(piece, m.to());
            let hist = if noisy {
                0
            } else {
                self.history.butterfly(us, ctx.threats, m)
                    + self.history.continuation(ctx.cont[0], cont)
                    + self.history.continuation(ctx.cont[1], cont)
            };
            let gives_check = check_info
                .get_or_insert_with(|| CheckInfo::new(pos))
                .gives_check(pos, m);
            let r_base = self.lmr[depth.min(63) as usize][move_count.min(63)];

            // Shallow-depth pruning, once a move that does not lose has
            // been found (so we never prune ourselves into a false mate).
            if best > -MATE_BOUND && pos.has_non_pawn_material(us) && !in_check {
                let lmr_depth = (depth - 1 - r_base).max(0);
                if !noisy && !gives_check {
                    // Late-move pruning: in a well-ordered list, late
                    // quiets at low depth almost never refute anything.
                    // The picker keeps handing out quiets, as a later
                    // one may give check (and mate).
                    let lmp_limit = (3 + depth * depth) / (2 - improving as i32);
                    if depth <= 8 && move_count as i32 >= lmp_limit {
                        continue;
                    }
                    // Futility: even a generous positional gain cannot
                    // bring a quiet move up to alpha.
                    if lmr_depth <= 6
                        && static_eval
                            + tune::futility_base()
                            + tune::futility_depth() * lmr_depth
                            + hist / tune::futility_hist_div()
                            <= alpha
                    {
                        continue;
                    }
                    // Quiets that hang material by exchange.
                    if lmr_depth <= 7 && !see_ge(pos, m, -tune::see_quiet() * lmr_depth * lmr_depth)
                    {
                        continue;
                    }
                } else if depth <= 6 && !see_ge(pos, m, -tune::see_capture() * depth) {
                    // Captures that lose too much material.
                    continue;
                }
            }

            // Check extension: a check may start a forcing sequence the
            // horizon would otherwise cut off.
            let mut extension = (gives_check && (ply as i32) < 2 * self.root_depth) as i32;

            // Singular extension: if the stored move is much better than
            // every alternative (a reduced search without it fails low
            // against a margin below its score), the position hinges on
            // it, so it deserves a deeper look.
            if let Some(h) = tt_hit
                && !cfg!(feature = "ab-no-singular")
                && m == tt_move
                && ply > 0
                && depth >= 8
                && excluded.is_none()
                && h.depth >= depth - 3
                && matches!(h.bound, Bound::Lower | Bound::Exact)
                && !is_mate(h.score)
                && (ply as i32) < 2 * self.root_depth
            {
                let s_beta = h.score - tune::singular_margin() * depth;
                self.frame_mut(ply).excluded = m;
                let v = self.negamax::<false>(
                    pos,
                    s_beta - 1,
                    s_beta,
                    (depth - 1) / 2,
                    ply,
                    cut_node,
                    tt,
                    ctrl,
                );
                self.frame_mut(ply).excluded = Move::NONE;
                if self.stopped {
                    return 0;
                }
                if v < s_beta {
                    // Far below: every alternative is clearly worse, so
                    // off the principal variation the move gets two plies.
                    extension = if !PV && v < s_beta - 20 { 2 } else { 1 };
                } else if s_beta >= beta {
                    // Multi-cut: even without the stored move some
                    // other move beats beta; this node fails high.
                    return s_beta;
                } else if h.score >= beta {
                    // Another move is about as good and the stored one
                    // fails high anyway: it is not special, search it
                    // two plies shallower.
                    extension = -2;
                } else if cut_node {
                    // Expected to fail high through some other move.
                    extension = -1;
                }
            }
            let new_depth = depth - 1 + extension;

            let child = pos.play(m);
            tt.prefetch(child.key());
            self.enter_child(ply, pos, m, cont);
            self.nodes += 1;
            if PV {
                // The child's line is rebuilt from scratch.
                self.pv_len[ply + 1] = ply + 1;
            }
            let mut v;
            if PV && move_count == 1 {
                v = -self.negamax::<true>(
                    &child,
                    -beta,
                    -alpha,
                    new_depth,
                    ply + 1,
                    false,
                    tt,
                    ctrl,
                );
            } else {
                // Late-move reductions: search late, unpromising moves
                // shallower with a null window, and re-search if they
                // surprise.
                // Captures are reduced too (the good ones a ply less),
                // by their capture history instead of the quiet one.
                let reduce = depth >= 3 && move_count > 1 + PV as usize;
                if reduce {
                    let good_noisy = noisy && !picker.in_bad_captures();
                    let mut r = r_base - good_noisy as i32;
                    r += !PV as i32;
                    r += cut_node as i32;
                    r -= improving as i32;
                    r -= gives_check as i32;
                    r += tt_capture as i32;
                    if m == ctx.killers[0] || m == ctx.killers[1] || m == ctx.counter {
                        r -= 1;
                    }
                    let stat = if noisy {
                        captured_role(pos, m).map_or(0, |c| self.history.capture(piece, m.to(), c))
                    } else {
                        hist
                    };
                    r -= stat / tune::lmr_hist_div();
                    let d = (new_depth - r).clamp(1, new_depth.max(1));
                    v = -self.negamax::<false>(
                        &child,
                        -alpha - 1,
                        -alpha,
                        d,
                        ply + 1,
                        true,
                        tt,
                        ctrl,
                    );
                    if v > alpha && d < new_depth {
                        // The reduced search surprised: re-search a ply
                        // deeper than planned if it beat the best by far,
                        // a ply shallower if only just.
                        let deeper = v > best.saturating_add(60 + 2 * new_depth);
                        let shallower = v < best.saturating_add(new_depth);
                        let full = new_depth + deeper as i32 - shallower as i32;
                        if full > d {
                            v = -self.negamax::<false>(
                                &child,
                                -alpha - 1,
                                -alpha,
                                full,
                                ply + 1,
                                !cut_node,
                                tt,
                                ctrl,
                            );
                        }
                        // What the full search found about this quiet
                        // teaches its continuation history.
                        if !noisy {
                            let bonus = stat_bonus(full);
                            let bonus = if v > alpha { bonus } else { -bonus };
                            self.history.update_continuations(ctx.cont, cont, bonus);
                        }
                    }
                } else {
                    v = -self.negamax::<false>(
                        &child,
                        -alpha - 1,
                        -alpha,
                        new_depth,
                        ply + 1,
                        !cut_node,
                        tt,
                        ctrl,
                    );
                }
                if PV && v > alpha && v < beta {
                    v = -self.negamax::<true>(
                        &child,
                        -beta,
                        -alpha,
                        new_depth,
                        ply + 1,
                        false,
                        tt,
                        ctrl,
                    );
                }
            }
            self.leave_child();
            if self.stopped {
                return 0;
            }

            if v > best {
                best = v;
                if v > alpha {
                    best_move = m;
                    if PV {
                        self.update_pv(ply, m);
                    }
                    if v >= beta {
                        break;
                    }
                    alpha = v;
                }
            }
            if m != best_move {
                if noisy {
                    captures.push(m);
                } else {
                    quiets.push(m);
                }
            }
        }

        if move_count == 0 {
            // No legal move (or only the excluded one).
            return if !excluded.is_none() {
                alpha
            } else if in_check {
                mated_in(ply)
            } else {
                DRAW
            };
        }

        if best >= beta && !best_move.is_none() {
            self.update_stats(pos, ply, best_move, depth, &quiets, &captures, &ctx);
        }

        if excluded.is_none() {
            let bound = if best >= beta {
                Bound::Lower
            } else if PV && best > alpha_orig {
                Bound::Exact
            } else {
                Bound::Upper
            };
            tt.store(key, ply, best_move, best, raw_eval, depth, bound);
            // Teach the correction history how wrong the eval was, when
            // the result is a real bound on the same side of it and not a
            // tactical (noisy) outcome.
            let noisy_best = !best_move.is_none() && is_noisy(pos, best_move);
            let wrong_side = match bound {
                Bound::Lower => best <= static_eval,
                Bound::Upper => best >= static_eval,
                _ => false,
            };
            if let Some(keys) = corr_keys
                && !noisy_best
                && !is_mate(best)
                && !wrong_side
                && !cfg!(feature = "ab-no-correction")
            {
                self.history
                    .update_correction(us, keys, best - static_eval, depth);
            }
        }
        best
    }

    /// The static evaluation adjusted by the correction history.
    #[inline(always)]
    fn corrected(&self, us: Color, keys: CorrKeys, raw: i32) -> i32 {
        let correction = if cfg!(feature = "ab-no-correction") {
            0
        } else {
            self.history.correction(us, keys)
        };
        (raw + correction).clamp(-MATE_BOUND + 1, MATE_BOUND - 1)
    }

    #[inline(always)]
    fn prev_cont(&self, ply: usize, back: usize) -> ContKey {
        // Frames below the root are empty, so this is NONE there.
        self.stack[ply + STACK_OFFSET - back].cont
    }

    /// Rewards the move that cut off and punishes those tried before it.
    #[allow(clippy::too_many_arguments)]
    fn update_stats(
        &mut self,
        pos: &Position,
        ply: usize,
        best: Move,
        depth: i32,
        quiets: &Tried,
        captures: &Tried,
        ctx: &OrderingContext,
    ) {
        let us = pos.turn();
        let bonus = stat_bonus(depth);
        if !is_noisy(pos, best) {
            let f = self.frame_mut(ply);
            if f.killers[0] != best {
                f.killers[1] = f.killers[0];
                f.killers[0] = best;
            }
            self.history.set_countermove(ctx.cont[0], best);
            self.update_quiet(pos, us, best, bonus, ctx);
            for &q in quiets.as_slice() {
                self.update_quiet(pos, us, q, -bonus, ctx);
            }
        } else if let (Some(p), Some(c)) = (pos.piece_at(best.from()), captured_role(pos, best)) {
            self.history.update_capture(p, best.to(), c, bonus);
        }
        for &c in captures.as_slice() {
            if let (Some(p), Some(r)) = (pos.piece_at(c.from()), captured_role(pos, c)) {
                self.history.update_capture(p, c.to(), r, -bonus);
            }
        }
    }

    fn update_quiet(
        &mut self,
        pos: &Position,
        us: Color,
        m: Move,
        bonus: i32,
        ctx: &OrderingContext,
    ) {
        self.history.update_butterfly(us, ctx.threats, m, bonus);
        if let Some(p) = pos.piece_at(m.from()) {
            let key = ContKey::new(p, m.to());
            self.history.update_continuations(ctx.cont, key, bonus);
        }
    }

    /// Quiescence: only captures (and queen promotions) until the position
    /// is quiet, so the static evaluation is never taken in the middle of
    /// an exchange. In check every evasion is searched.
    fn qsearch<const PV: bool>(
        &mut self,
        pos: &Position,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        tt: &TranspositionTable,
        ctrl: &SearchControl,
    ) -> i32 {
        if PV {
            self.pv_len[ply] = ply;
        }
        self.check_limits(ctrl);
        if self.stopped {
            return 0;
        }
        if ply > self.seldepth {
            self.seldepth = ply;
        }
        let in_check = pos.in_check();
        if self.is_draw(pos, ply) {
            return DRAW;
        }
        if ply >= MAX_PLY - 1 {
            return if in_check {
                DRAW
            } else {
                self.evaluate(pos, ply)
            };
        }

        let key = pos.key();
        let tt_hit = tt.probe(key, ply, pos.halfmove_clock());
        if !PV
            && let Some(h) = tt_hit
            && h.cuts(alpha, beta)
        {
            return h.score;
        }
        let tt_move = tt_hit.map_or(Move::NONE, |h| h.mv);

        let raw_eval;
        let static_eval;
        let mut best;
        if in_check {
            raw_eval = -INFINITE;
            static_eval = -INFINITE;
            best = -INFINITE;
        } else {
            raw_eval = match tt_hit {
                Some(h) if h.eval > -INFINITE => h.eval,
                _ => self.evaluate(pos, ply),
            };
            static_eval = self.corrected(pos.turn(), CorrKeys::of(pos), raw_eval);
            best = static_eval;
            if let Some(h) = tt_hit
                && !is_mate(h.score)
                && h.refines(best)
            {
                best = h.score;
            }
            // Stand pat: the side to move need not capture.
            if best >= beta {
                if tt_hit.is_none() {
                    tt.store(key, ply, Move::NONE, best, raw_eval, 0, Bound::Lower);
                }
                return best;
            }
            alpha = alpha.max(best);
        }

        let mut picker = if in_check {
            let ctx = OrderingContext {
                cont: [self.prev_cont(ply, 1), self.prev_cont(ply, 2)],
                ..OrderingContext::default()
            };
            MovePicker::new(pos, tt_move, ctx)
        } else {
            MovePicker::new_qsearch(pos, tt_move)
        };
        let mut best_move = Move::NONE;
        let mut move_count = 0;
        while let Some(m) = picker.next(pos, &self.history) {
            move_count += 1;
            if !in_check && best > -MATE_BOUND {
                // Delta pruning: winning the captured piece plus a margin
                // still leaves us below alpha.
                if !m.is_promotion() {
                    let gain = captured_role(pos, m).map_or(0, |r| SEE_VALUE[r.index()]);
                    let futility = static_eval + tune::qs_delta() + gain;
                    if futility <= alpha {
                        best = best.max(futility);
                        continue;
                    }
                }
                // Captures that lose material by exchange.
                if !see_ge(pos, m, 0) {
                    continue;
                }
            }
            let child = pos.play(m);
            tt.prefetch(child.key());
            let cont = pos
                .piece_at(m.from())
                .map_or(ContKey::NONE, |p| ContKey::new(p, m.to()));
            self.enter_child(ply, pos, m, cont);
            self.nodes += 1;
            if PV {
                self.pv_len[ply + 1] = ply + 1;
            }
            let v = -self.qsearch::<PV>(&child, -beta, -alpha, ply + 1, tt, ctrl);
            self.leave_child();
            if self.stopped {
                return 0;
            }
            if v > best {
                best = v;
                if v > alpha {
                    best_move = m;
                    if PV {
                        self.update_pv(ply, m);
                    }
                    if v >= beta {
                        break;
                    }
                    alpha = v;
                }
            }
        }
        if in_check && move_count == 0 {
            return mated_in(ply);
        }
        let bound = if best >= beta {
            Bound::Lower
        } else {
            Bound::Upper
        };
        tt.store(key, ply, best_move, best, raw_eval, 0, bound);
        best
    }
}

fn nps(nodes: u64, elapsed: Duration) -> u64 {
    let us = elapsed.as_micros().max(1) as u64;
    nodes.saturating_mul(1_000_000) / us
}

/// Runs a complete search on the calling thread (tests, bench, datagen):
/// no stop flag, no pondering, no output.
pub fn search_blocking(
    searcher: &mut Searcher,
    tt: &TranspositionTable,
    pos: &Position,
    history: &[u64],
    limits: &Limits,
) -> SearchResult {
    let stop = AtomicBool::new(false);
    let pondering = AtomicBool::new(false);
    let ctrl = SearchControl::new(&stop, &pondering);
    searcher.search(pos, history, limits, 1, tt, &ctrl, &mut |_| {})
}
