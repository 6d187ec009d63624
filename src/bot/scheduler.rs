//! The search threads (`engine.threads`), shared by every game by urgency.
//!
//! A game asks for a thread with its budget for the move (what its clock
//! lets it think: [`Ask::budget`]). Who waits is served earliest deadline
//! first: a waiter's deadline is when it asked plus the wait it can afford
//! (a sixteenth of its budget, see [`affordable_wait`]), so a bullet game
//! asking after a slow one is served first, and a slow game that has
//! waited long enough is served before a new bullet one.
//!
//! A waiter whose affordable wait runs out while every thread is busy has
//! a search cut short for it: the longest-running search of a game with
//! more time to spare than the waiter (a longer budget), or that has had
//! more than its fair share of a thread (its budget shared by all the
//! games searching and waiting). Ponder searches are cut once anyone has
//! waited 20 ms. A cut search ends at its next safe point (the engine's
//! `stop`: it answers with its best move so far); the game then either
//! posts that move or, with enough of its budget left, asks again and
//! searches on from its transposition table.
//!
//! External engines (`[engines.NAME]`) take their threads here too.

use crate::engine::ThreadShare;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// A waiter can afford to wait this share of its budget (1/16).
const WAIT_SHARE: u32 = 16;
/// ... but at least this long: a cut search costs its game a move's
/// thought, so it is not done for a few milliseconds.
const MIN_WAIT: Duration = Duration::from_millis(20);
/// ... and at most this long (a correspondence game's budget is minutes).
const MAX_WAIT: Duration = Duration::from_secs(5);
/// Ponder searches make way for a waiter once it has waited this long
/// (or its whole affordable wait, if shorter): a ponder hit saves a whole
/// search, worth a few milliseconds of another game's clock.
const PONDER_GRACE: Duration = Duration::from_millis(20);
/// A waiter past its deadline looks for a search to cut this often.
const RECHECK: Duration = Duration::from_millis(10);

/// The wait that a search with this budget can afford before it has a
/// thread taken for it.
pub fn affordable_wait(budget: Duration) -> Duration {
    (budget / WAIT_SHARE).clamp(MIN_WAIT, MAX_WAIT)
}

/// What a game asks a thread for.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The game, for the log.
    pub game: String,
    /// How long its clock lets it think on this move.
    pub budget: Duration,
    /// A ponder search: it never waits, and makes way for any waiter.
    pub ponder: bool,
}

struct Running {
    id: u64,
    game: String,
    budget: Duration,
    ponder: bool,
    started: Instant,
    cut: Arc<Notify>,
    cut_sent: bool,
}

struct Waiting {
    id: u64,
    ask: Ask,
    /// When it must be served.
    deadline: Instant,
    /// A search was cut for it: the thread that frees is its.
    cut: bool,
    grant: oneshot::Sender<()>,
}

#[derive(Default)]
struct State {
    threads: usize,
    next_id: u64,
    running: Vec<Running>,
    waiting: Vec<Waiting>,
    /// Searches cut short for a waiter, since the start.
    cuts: u64,
}

impl State {
    fn start(&mut self, id: u64, ask: &Ask) -> Arc<Notify> {
        let cut = Arc::new(Notify::new());
        self.running.push(Running {
            id,
            game: ask.game.clone(),
            budget: ask.budget,
            ponder: ask.ponder,
            started: Instant::now(),
            cut: Arc::clone(&cut),
            cut_sent: false,
        });
        cut
    }

    /// Gives free threads to the waiters: first those a search was cut
    /// for, then by earliest deadline.
    fn grant(&mut self) {
        while self.running.len() < self.threads && !self.waiting.is_empty() {
            let next = (0..self.waiting.len())
                .min_by_key(|&i| (!self.waiting[i].cut, self.waiting[i].deadline))
                .expect("a waiter");
            let w = self.waiting.swap_remove(next);
            // The waiter's future makes it running when it wakes; a
            // dropped one is skipped.
            if w.grant.send(()).is_ok() {
                self.start(w.id, &w.ask);
            }
        }
    }

    fn release(&mut self, id: u64) {
        self.running.retain(|r| r.id != id);
        self.waiting.retain(|w| w.id != id);
        self.grant();
    }

    /// Ponder searches make way for anyone waiting.
    fn cut_ponderers(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        for r in self.running.iter_mut().filter(|r| r.ponder && !r.cut_sent) {
            r.cut_sent = true;
            r.cut.notify_one();
        }
    }

    /// The share of a thread that search `id`, with `budget`, can count
    /// on while the others want theirs: the most it can plan to think so
    /// that its thinking and theirs, shared round by round, fit in its
    /// budget on the threads. Each other search or waiter as urgent (no
    /// larger budget) takes its turns from the start, up to what its
    /// budget has left; a less urgent waiter waits behind us until its
    /// deadline, and only the part of our search past that counts as its
    /// turns. A less urgent running search counts for nothing (it is the
    /// one to be cut). None: the whole budget.
    fn share(&self, id: u64, budget: Duration) -> Option<ThreadShare> {
        let now = Instant::now();
        // (what it wants, how long it lets us run first), in seconds.
        let running = self
            .running
            .iter()
            .filter(|r| r.id != id && !r.ponder && r.budget <= budget)
            .map(|r| {
                let left = r
                    .budget
                    .saturating_sub(now.saturating_duration_since(r.started));
                (left, Duration::ZERO)
            });
        let waiting = self.waiting.iter().filter(|w| w.id != id).map(|w| {
            let patience = if w.ask.budget <= budget {
                Duration::ZERO
            } else {
                w.deadline.saturating_duration_since(now)
            };
            (w.ask.budget, patience)
        });
        let others: Vec<(f64, f64)> = running
            .chain(waiting)
            .map(|(o, p)| (o.as_secs_f64(), p.as_secs_f64()))
            .collect();
        let budget = budget.as_secs_f64();
        let room = budget * self.threads.max(1) as f64;
        let work = |x: f64| {
            x + others
                .iter()
                .map(|&(o, p)| o.min((x - p).max(0.0)))
                .sum::<f64>()
        };
        if budget <= 0.0 || work(budget) <= room {
            return None;
        }
        // `work` grows with x: the largest x that fits, by bisection.
        let (mut lo, mut hi) = (0.0, budget);
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if work(mid) <= room {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(ThreadShare::new(lo / budget))
    }

    /// Waiter `id` with `budget` can wait no more: cuts the longest-running
    /// search that has more time to spare or more than its share; the
    /// thread it frees goes to that waiter.
    fn cut_for(&mut self, id: u64, budget: Duration) -> Option<String> {
        let demand = (self.running.len() + self.waiting.len()).max(1) as u32;
        let threads = self.threads.max(1) as u32;
        let now = Instant::now();
        let victim = self
            .running
            .iter_mut()
            .filter(|r| !r.cut_sent)
            .filter(|r| {
                let ran = now.saturating_duration_since(r.started);
                r.ponder || r.budget > budget || ran > r.budget * threads / demand
            })
            .max_by_key(|r| (r.ponder, now.saturating_duration_since(r.started)))?;
        victim.cut_sent = true;
        victim.cut.notify_one();
        let game = victim.game.clone();
        self.cuts += 1;
        if let Some(w) = self.waiting.iter_mut().find(|w| w.id == id) {
            w.cut = true;
        }
        Some(game)
    }
}

/// The threads and who holds or waits for them. Cloning shares them.
#[derive(Clone)]
pub struct Scheduler {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("Scheduler")
            .field("threads", &s.threads)
            .field("running", &s.running.len())
            .field("waiting", &s.waiting.len())
            .finish()
    }
}

/// A thread held by a search; dropping it gives the thread back.
pub struct Permit {
    scheduler: Scheduler,
    id: u64,
    cut: Arc<Notify>,
    /// How long the game waited for it.
    pub queued: Duration,
    /// The share of a thread its search can count on, when the others
    /// searching and waiting leave it less than its budget.
    pub share: Option<ThreadShare>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("id", &self.id)
            .field("queued", &self.queued)
            .field("share", &self.share)
            .finish()
    }
}

impl Permit {
    /// Resolves when the scheduler asks this search to end: a game that
    /// cannot wait needs the thread.
    pub async fn cut(&self) {
        self.cut.notified().await
    }

    /// The signal [`Permit::cut`] waits on, for a task that holds the
    /// permit in a struct it also borrows elsewhere.
    pub fn cut_signal(&self) -> Arc<Notify> {
        Arc::clone(&self.cut)
    }

    /// The ponder search holding it became the search for our move, with
    /// `budget`, at `at` (the reply's arrival): it is no longer cut
    /// whenever anyone waits, and its share is counted from then (the
    /// pondering was on the opponent's time).
    pub fn ponder_hit(&self, budget: Duration, at: Instant) {
        let mut s = self.scheduler.lock();
        if let Some(r) = s.running.iter_mut().find(|r| r.id == self.id) {
            r.ponder = false;
            r.budget = budget;
            r.started = at;
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.scheduler.lock().release(self.id);
    }
}

/// Takes a waiter out of the line if its future is dropped before it is
/// served (or gives back the thread it was granted meanwhile).
struct WaitGuard<'a> {
    scheduler: &'a Scheduler,
    id: u64,
    armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.scheduler.lock().release(self.id);
        }
    }
}

/// How the threads are used now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    pub threads: usize,
    pub running: usize,
    pub waiting: usize,
    /// Searches cut short for a waiter so far.
    pub cuts: u64,
}

impl Scheduler {
    pub fn new(threads: usize) -> Scheduler {
        Scheduler {
            state: Arc::new(Mutex::new(State {
                threads: threads.max(1),
                ..State::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the lists consistent (every
        // change is one push or retain): keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn load(&self) -> Load {
        let s = self.lock();
        Load {
            threads: s.threads,
            running: s.running.len(),
            waiting: s.waiting.len(),
            cuts: s.cuts,
        }
    }

    /// A thread at once, if one is free and nobody waits: for ponder
    /// searches, which never wait.
    pub fn try_acquire(&self, ask: &Ask) -> Option<Permit> {
        let mut s = self.lock();
        if s.running.len() >= s.threads || !s.waiting.is_empty() {
            return None;
        }
        s.next_id += 1;
        let id = s.next_id;
        let cut = s.start(id, ask);
        let share = s.share(id, ask.budget);
        drop(s);
        Some(Permit {
            scheduler: self.clone(),
            id,
            cut,
            queued: Duration::ZERO,
            share,
        })
    }

    /// A thread for the search `ask`: at once if one is free, otherwise in
    /// its turn by deadline, a search being cut for it when it can wait no
    /// longer.
    pub async fn acquire(&self, ask: &Ask) -> Permit {
        let asked = Instant::now();
        let wait = affordable_wait(ask.budget);
        let (id, mut granted) = {
            let mut s = self.lock();
            s.next_id += 1;
            let id = s.next_id;
            if s.running.len() < s.threads && s.waiting.is_empty() {
                let cut = s.start(id, ask);
                let share = s.share(id, ask.budget);
                drop(s);
                return Permit {
                    scheduler: self.clone(),
                    id,
                    cut,
                    queued: Duration::ZERO,
                    share,
                };
            }
            let (tx, rx) = oneshot::channel();
            s.waiting.push(Waiting {
                id,
                ask: ask.clone(),
                deadline: asked + wait,
                cut: false,
                grant: tx,
            });
            s.grant();
            (id, rx)
        };
        let mut guard = WaitGuard {
            scheduler: self,
            id,
            armed: true,
        };
        // From its deadline on, until a search is cut for it, the waiter
        // looks for one to cut every `RECHECK` (a search as urgent as it
        // may pass its share of the thread later).
        let mut check_at = Some(asked + wait);
        let mut ponder_at = Some(asked + PONDER_GRACE.min(wait));
        loop {
            tokio::select! {
                _ = &mut granted => break,
                _ = tokio::time::sleep_until(ponder_at.unwrap_or(asked)), if ponder_at.is_some() => {
                    ponder_at = None;
                    self.lock().cut_ponderers();
                }
                _ = tokio::time::sleep_until(check_at.unwrap_or(asked)), if check_at.is_some() => {
                    check_at = Some(Instant::now() + RECHECK);
                    if let Some(victim) = self.lock().cut_for(id, ask.budget) {
                        check_at = None;
                        tracing::debug!(
                            game = %ask.game,
                            cut = %victim,
                            waited_ms = asked.elapsed().as_millis() as u64,
                            "search cut short for a game that cannot wait"
                        );
                    }
                }
            }
        }
        guard.armed = false;
        let (cut, share) = {
            let mut s = self.lock();
            let cut = match s.running.iter().find(|r| r.id == id) {
                Some(r) => Arc::clone(&r.cut),
                None => s.start(id, ask),
            };
            (cut, s.share(id, ask.budget))
        };
        Permit {
            scheduler: self.clone(),
            id,
            cut,
            queued: asked.elapsed(),
            share,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(game: &str, budget_ms: u64) -> Ask {
        Ask {
            game: game.into(),
            budget: Duration::from_millis(budget_ms),
            ponder: false,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn threads_are_never_exceeded_and_come_back_on_drop() {
        let s = Scheduler::new(2);
        let a = s.acquire(&ask("a", 10_000)).await;
        let b = s.acquire(&ask("b", 10_000)).await;
        assert_eq!(s.load().running, 2);
        assert!(s.try_acquire(&ask("p", 1)).is_none());
        drop(a);
        let c = s.acquire(&ask("c", 10_000)).await;
        assert_eq!(c.queued, Duration::ZERO);
        drop((b, c));
        assert_eq!(
            s.load(),
            Load {
                threads: 2,
                ..Load::default()
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_search_plans_for_the_share_of_a_thread_the_others_leave_it() {
        let s = Scheduler::new(1);
        // Alone: the whole budget.
        let a = s.acquire(&ask("a", 6_000)).await;
        assert_eq!(a.share, None);
        // Two more games as slow wait: the next to search can count on
        // half the thread (its thinking and the last one's fit its budget).
        let wait = |game: &'static str, budget_ms| {
            let s = s.clone();
            tokio::spawn(async move { s.acquire(&ask(game, budget_ms)).await })
        };
        let (b, c) = (wait("b", 6_000), wait("c", 6_000));
        tokio::time::sleep(Duration::from_millis(1)).await;
        drop(a);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let (first, last) = if b.is_finished() { (b, c) } else { (c, b) };
        let first = first.await.unwrap();
        assert_eq!(first.share.map(ThreadShare::fraction), Some(0.5));
        drop(first);
        assert_eq!(last.await.unwrap().share, None);

        // As the search `id` with this budget would plan now.
        let share = |id, budget_ms| {
            let state = s.lock();
            state
                .share(id, Duration::from_millis(budget_ms))
                .map(ThreadShare::fraction)
        };
        // A slow game searching while a bullet game waits: the bullet
        // game takes its budget from ours (5.7 s of 6), the slow one takes
        // nothing from the bullet game (it is the one to wait).
        let slow = s.acquire(&ask("slow", 6_000)).await;
        let bullet = wait("bullet", 300);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(share(slow.id, 6_000), Some(0.95));
        let bullet_id = s.lock().waiting[0].id;

        assert_eq!(share(bullet_id, 300), None);
        // Two more as slow waiting: a third, less the bullet game's 0.3 s.
        let (c, d) = (wait("c", 6_000), wait("d", 6_000));
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(share(slow.id, 6_000), Some(0.317));
        drop(slow);
        // Each gives its thread back as it gets it.
        let mut served: futures::stream::FuturesUnordered<_> = [bullet, c, d].into_iter().collect();
        while let Some(permit) = futures::StreamExt::next(&mut served).await {
            drop(permit.unwrap());
        }
        // A less urgent game waiting 200 ms more before it may cut: the
        // bullet search plans to leave it its turns past then. x + (x -
        // 0.2) = 1 s: 0.6 s.
        let bullet = s.acquire(&ask("bullet", 1_000)).await;
        let slower = wait("slower", 3_216);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(share(bullet.id, 1_000), Some(0.6));
        drop(bullet);
        drop(slower.await.unwrap());
        // Two threads for two games: each its own.
        let s = Scheduler::new(2);
        let a = s.acquire(&ask("a", 6_000)).await;
        let b = s.acquire(&ask("b", 6_000)).await;
        assert_eq!((a.share, b.share), (None, None));
    }

    #[tokio::test(start_paused = true)]
    async fn the_most_urgent_waiter_is_served_first() {
        let s = Scheduler::new(1);
        let held = s.acquire(&ask("slow", 100_000)).await;
        // A slow game asks first, a bullet one after: the bullet one's
        // deadline is earlier.
        let slow = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("slow2", 100_000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let fast = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("bullet", 1_000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(s.load().waiting, 2);
        drop(held);
        let fast = fast.await.unwrap();
        assert!(!slow.is_finished());
        drop(fast);
        slow.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_that_cannot_wait_cuts_a_search_with_time_to_spare() {
        let s = Scheduler::new(1);
        let slow = s.acquire(&ask("slow", 60_000)).await;
        let bullet = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("bullet", 800)).await }
        });
        // The slow search is told to end once the bullet game has waited
        // what it can afford; it ends (drops its permit) at once.
        let affordable = affordable_wait(Duration::from_millis(800));
        assert_eq!(affordable, Duration::from_millis(50));
        let t0 = Instant::now();
        slow.cut().await;
        assert_eq!(t0.elapsed(), affordable);
        drop(slow);
        let b = bullet.await.unwrap();
        assert_eq!(b.queued, affordable);
        assert_eq!(s.load().cuts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_thread_cut_for_a_waiter_is_its_own() {
        let s = Scheduler::new(1);
        let slow = s.acquire(&ask("slow", 60_000)).await;
        // A game as slow waits first (it cannot cut the search before
        // that has had half its budget, 30 s), and its deadline (3.75 s)
        // passes before the bullet game's (3.85 s), which has the running
        // search cut for it.
        let waiting = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("slow2", 60_000)).await }
        });
        tokio::time::sleep(Duration::from_millis(3800)).await;
        let bullet = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("bullet", 800)).await }
        });
        slow.cut().await;
        drop(slow);
        let b = tokio::time::timeout(Duration::from_secs(1), bullet)
            .await
            .expect("the bullet game gets the thread cut for it")
            .unwrap();
        assert!(!waiting.is_finished());
        drop(b);
        waiting.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_search_as_urgent_as_the_waiter_is_not_cut_before_its_share() {
        let s = Scheduler::new(1);
        let first = s.acquire(&ask("a", 800)).await;
        let second = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("b", 800)).await }
        });
        // Two games of one budget: the first keeps the thread for half
        // its budget (its share), not only the 50 ms the second can wait.
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(s.load().cuts, 0);
        first.cut().await;
        let at = t0.elapsed();
        assert!(
            (Duration::from_millis(400)..Duration::from_millis(420)).contains(&at),
            "{at:?}"
        );
        drop(first);
        second.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_ponder_hit_has_its_share_from_the_hit() {
        let s = Scheduler::new(1);
        let search = s
            .try_acquire(&Ask {
                ponder: true,
                ..ask("a", 10_000)
            })
            .unwrap();
        // Five seconds of pondering, then the hit with 800 ms to think.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let t0 = Instant::now();
        search.ponder_hit(Duration::from_millis(800), t0);
        let waiter = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("b", 800)).await }
        });
        // As urgent a waiter: the hit search keeps the thread for its
        // share (half its budget), not only the waiter's 50 ms as if it
        // had searched for five seconds.
        search.cut().await;
        let at = t0.elapsed();
        assert!(
            (Duration::from_millis(400)..Duration::from_millis(420)).contains(&at),
            "{at:?}"
        );
        drop(search);
        waiter.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_ponder_search_makes_way_soon_and_a_dropped_waiter_leaves_the_line() {
        let s = Scheduler::new(1);
        let ponder = s
            .try_acquire(&Ask {
                ponder: true,
                ..ask("p", 10_000)
            })
            .unwrap();
        let waiter = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("w", 60_000)).await }
        });
        let t0 = Instant::now();
        ponder.cut().await;
        assert_eq!(t0.elapsed(), PONDER_GRACE);
        // A waiter that gives up (its game ended) leaves the line.
        let gone = tokio::spawn({
            let s = s.clone();
            async move { s.acquire(&ask("gone", 1_000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        gone.abort();
        let _ = gone.await;
        assert_eq!(s.load().waiting, 1);
        drop(ponder);
        let w = waiter.await.unwrap();
        assert_eq!((s.load().running, s.load().waiting), (1, 0));
        drop(w);
    }
}
