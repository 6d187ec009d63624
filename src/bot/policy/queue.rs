//! The challenge queue: acceptable challenges that arrived while every
//! slot was taken, waiting for one to free. Plain data, no I/O: the daemon
//! pushes a challenge, removes it when it is withdrawn
//! (`challengeCanceled`), and takes the next one that may play when a slot
//! frees ([`ChallengeQueue::take_next`]): the kinds of challenger of
//! `queue_first` first (titled players, humans, bots, in the order
//! given), then in the configured [`QueueOrder`].
//!
//! The queue lives in the daemon, not on the event stream: Lichess resends
//! the open challenges on every reconnect, and a challenge already waiting
//! is not queued twice ([`ChallengeQueue::push`] answers
//! [`Pushed::Already`]).

use crate::config::{QueueGroup, QueueOrder};
use crate::lichess::model::Challenge;

/// What [`ChallengeQueue::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Waiting, at this position (1: next).
    Queued(usize),
    /// It was waiting already.
    Already,
    /// The queue is full: decline it.
    Full,
}

/// Challenges waiting for a slot.
#[derive(Debug)]
pub struct ChallengeQueue {
    waiting: Vec<Waiting>,
    order: QueueOrder,
    /// Served first, in this order.
    first: Vec<QueueGroup>,
    cap: usize,
    /// Arrival counter.
    next_seq: u64,
}

#[derive(Debug)]
struct Waiting {
    challenge: Challenge,
    seq: u64,
}

impl ChallengeQueue {
    /// An empty queue holding at most `cap` challenges, serving the
    /// groups of `first` first.
    pub fn new(order: QueueOrder, first: Vec<QueueGroup>, cap: usize) -> ChallengeQueue {
        ChallengeQueue {
            waiting: Vec::new(),
            order,
            first,
            cap,
            next_seq: 0,
        }
    }

    /// Challenges waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.waiting.iter().any(|w| w.challenge.id == id)
    }

    /// Queues a challenge, unless it waits already or the queue is full.
    pub fn push(&mut self, challenge: Challenge) -> Pushed {
        if self.contains(&challenge.id) {
            return Pushed::Already;
        }
        if self.waiting.len() >= self.cap {
            return Pushed::Full;
        }
        self.next_seq += 1;
        self.waiting.push(Waiting {
            challenge,
            seq: self.next_seq,
        });
        let position = self.ordered().iter().position(|&i| i + 1 == self.len());
        Pushed::Queued(position.map_or(self.len(), |p| p + 1))
    }

    /// Removes a challenge (withdrawn, or gone); whether it was waiting.
    pub fn remove(&mut self, id: &str) -> Option<Challenge> {
        let index = self.waiting.iter().position(|w| w.challenge.id == id)?;
        Some(self.waiting.remove(index).challenge)
    }

    /// Takes the first challenge, in queue order, that `may_play` lets
    /// through (others keep their place).
    pub fn take_next(&mut self, mut may_play: impl FnMut(&Challenge) -> bool) -> Option<Challenge> {
        let index = self
            .ordered()
            .into_iter()
            .find(|&i| may_play(&self.waiting[i].challenge))?;
        Some(self.waiting.remove(index).challenge)
    }

    /// Removes and returns every challenge for which `drop` holds.
    pub fn drain_where(&mut self, mut drop: impl FnMut(&Challenge) -> bool) -> Vec<Challenge> {
        let (gone, kept): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| drop(&w.challenge));
        self.waiting = kept;
        gone.into_iter().map(|w| w.challenge).collect()
    }

    /// The waiting challenges, in queue order.
    pub fn iter(&self) -> impl Iterator<Item = &Challenge> {
        self.ordered()
            .into_iter()
            .map(|i| &self.waiting[i].challenge)
    }

    /// Indices of `waiting` in queue order: by group, then by the order.
    fn ordered(&self) -> Vec<usize> {
        let mut indices: Vec<usize> = (0..self.waiting.len()).collect();
        indices.sort_by_key(|&i| {
            let w = &self.waiting[i];
            let rating = match self.order {
                QueueOrder::Arrival => 0,
                QueueOrder::Rating => w.challenge.challenger_rating().unwrap_or(0),
            };
            (self.group(&w.challenge), std::cmp::Reverse(rating), w.seq)
        });
        indices
    }

    /// The rank of the first group of `first` the challenger is in
    /// (`first.len()`: none).
    fn group(&self, challenge: &Challenge) -> usize {
        let titled = challenge
            .challenger
            .as_ref()
            .is_some_and(|user| user.title.is_some());
        let bot = challenge.from_bot();
        let is = |group: QueueGroup| match group {
            QueueGroup::Titled => titled && !bot,
            QueueGroup::Humans => !bot,
            QueueGroup::Bots => bot,
        };
        self.first
            .iter()
            .position(|&g| is(g))
            .unwrap_or(self.first.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(id: &str, who: &str, rating: u32) -> Challenge {
        serde_json::from_value(serde_json::json!({
            "id": id,
            "challenger": {"id": who, "name": who, "rating": rating},
            "variant": {"key": "standard"},
            "speed": "blitz",
            "timeControl": {"type": "clock", "limit": 180, "increment": 2},
        }))
        .unwrap()
    }

    fn ids(queue: &ChallengeQueue) -> Vec<String> {
        queue.iter().map(|c| c.id.clone()).collect()
    }

    #[test]
    fn first_come_first_served() {
        let mut q = ChallengeQueue::new(QueueOrder::Arrival, Vec::new(), 3);
        assert_eq!(q.push(challenge("a", "x", 1500)), Pushed::Queued(1));
        assert_eq!(q.push(challenge("b", "y", 2500)), Pushed::Queued(2));
        assert_eq!(q.push(challenge("a", "x", 1500)), Pushed::Already);
        assert_eq!(ids(&q), ["a", "b"]);
        assert_eq!(q.take_next(|_| true).unwrap().id, "a");
        assert_eq!(q.take_next(|_| true).unwrap().id, "b");
        assert!(q.take_next(|_| true).is_none());
    }

    #[test]
    fn by_rating_then_arrival() {
        let mut q = ChallengeQueue::new(QueueOrder::Rating, Vec::new(), 5);
        q.push(challenge("a", "x", 1500));
        q.push(challenge("b", "y", 2500));
        assert_eq!(q.push(challenge("c", "z", 2500)), Pushed::Queued(2));
        assert_eq!(q.push(challenge("d", "w", 1000)), Pushed::Queued(4));
        assert_eq!(ids(&q), ["b", "c", "a", "d"]);
    }

    #[test]
    fn titled_then_humans_first() {
        let user = |id: &str, title: Option<&str>, rating: u32| {
            let mut c = challenge(id, id, rating);
            c.challenger = serde_json::from_value(serde_json::json!({
                "id": id, "name": id, "rating": rating, "title": title,
            }))
            .unwrap();
            c
        };
        let first = vec![QueueGroup::Titled, QueueGroup::Humans];
        let mut q = ChallengeQueue::new(QueueOrder::Rating, first, 10);
        q.push(user("bot1", Some("BOT"), 2900));
        q.push(user("human1", None, 1200));
        q.push(user("gm", Some("GM"), 2500));
        q.push(user("human2", None, 1800));
        assert_eq!(q.push(user("im", Some("IM"), 2400)), Pushed::Queued(2));
        assert_eq!(ids(&q), ["gm", "im", "human2", "human1", "bot1"]);
        let mut q = ChallengeQueue::new(QueueOrder::Arrival, vec![QueueGroup::Bots], 10);
        q.push(user("human1", None, 1200));
        q.push(user("bot1", Some("BOT"), 2900));
        assert_eq!(ids(&q), ["bot1", "human1"]);
    }

    #[test]
    fn cap_remove_and_filter() {
        let mut q = ChallengeQueue::new(QueueOrder::Arrival, Vec::new(), 2);
        q.push(challenge("a", "x", 1500));
        q.push(challenge("b", "y", 1500));
        assert_eq!(q.push(challenge("c", "z", 1500)), Pushed::Full);
        assert_eq!(q.remove("a").unwrap().id, "a");
        assert!(q.remove("a").is_none());
        assert_eq!(q.push(challenge("c", "z", 1500)), Pushed::Queued(2));
        // "b" may not play now: "c" goes first, "b" keeps its place.
        assert_eq!(q.take_next(|c| c.id != "b").unwrap().id, "c");
        assert_eq!(ids(&q), ["b"]);
        let gone = q.drain_where(|c| c.id == "b");
        assert_eq!(gone.len(), 1);
        assert!(q.is_empty());
        let mut none = ChallengeQueue::new(QueueOrder::Arrival, Vec::new(), 0);
        assert_eq!(none.push(challenge("a", "x", 1)), Pushed::Full);
    }
}
