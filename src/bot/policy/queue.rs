//! The challenge queue: acceptable challenges that arrived while every
//! slot was taken, waiting for one to free. Plain data, no I/O: the daemon
//! pushes a challenge, removes it when it is withdrawn
//! (`challengeCanceled`), and takes the next one that may play when a slot
//! frees ([`ChallengeQueue::take_next`]), in the configured
//! [`QueueOrder`].
//!
//! The queue lives in the daemon, not on the event stream: Lichess resends
//! the open challenges on every reconnect, and a challenge already waiting
//! is not queued twice ([`ChallengeQueue::push`] answers
//! [`Pushed::Already`]).

use crate::config::QueueOrder;
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
    /// An empty queue holding at most `cap` challenges.
    pub fn new(order: QueueOrder, cap: usize) -> ChallengeQueue {
        ChallengeQueue {
            waiting: Vec::new(),
            order,
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

    /// Indices of `waiting` in queue order.
    fn ordered(&self) -> Vec<usize> {
        let mut indices: Vec<usize> = (0..self.waiting.len()).collect();
        match self.order {
            QueueOrder::Arrival => indices.sort_by_key(|&i| self.waiting[i].seq),
            QueueOrder::Rating => indices.sort_by_key(|&i| {
                let w = &self.waiting[i];
                (
                    std::cmp::Reverse(w.challenge.challenger.rating.unwrap_or(0)),
                    w.seq,
                )
            }),
        }
        indices
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
        let mut q = ChallengeQueue::new(QueueOrder::Arrival, 3);
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
        let mut q = ChallengeQueue::new(QueueOrder::Rating, 5);
        q.push(challenge("a", "x", 1500));
        q.push(challenge("b", "y", 2500));
        assert_eq!(q.push(challenge("c", "z", 2500)), Pushed::Queued(2));
        assert_eq!(q.push(challenge("d", "w", 1000)), Pushed::Queued(4));
        assert_eq!(ids(&q), ["b", "c", "a", "d"]);
    }

    #[test]
    fn cap_remove_and_filter() {
        let mut q = ChallengeQueue::new(QueueOrder::Arrival, 2);
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
        let mut none = ChallengeQueue::new(QueueOrder::Arrival, 0);
        assert_eq!(none.push(challenge("a", "x", 1)), Pushed::Full);
    }
}
