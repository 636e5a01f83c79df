//! The node's pool: the queue of tasks (`s.async` and the skeletons' work)
//! and the worker processes that take them, at most as many as the node has
//! worker threads (a pool per node, not a process per task); a worker that
//! waits for another task's result (a `get` inside a task) does not count,
//! so tasks that wait for tasks behind them in the queue cannot hold the
//! whole pool. [`Pool`] is a
//! state machine like the other stores: a task is handed to an idle worker
//! waiting in `take`, or queued; the pool says when a worker process should
//! be started, and the runtime starts one (`Runtime::pool_push`) with the
//! body the Lua layer gave it (`Config::pool_worker`).

use std::collections::VecDeque;

use crate::waiting::{Completion, Delivery, Waiter};
use crate::Message;

#[derive(Default)]
pub struct Pool {
    tasks: VecDeque<Message>,
    idle: VecDeque<Waiter>,
    /// Worker processes started.
    workers: usize,
    /// Of those, how many wait for a result (not counted against the limit).
    blocked: usize,
}

/// What [`Pool::push`] decided.
#[derive(Debug, PartialEq)]
pub enum Pushed {
    /// An idle worker takes the task.
    Handed(Delivery),
    /// The task waits; `start`: start one more worker process.
    Queued { start: bool },
}

impl Pool {
    /// A task for the pool, on a node of `max` worker threads.
    pub fn push(&mut self, task: Message, max: usize) -> Pushed {
        if let Some(w) = self.idle.pop_front() {
            return Pushed::Handed((w, Completion::Value(task)));
        }
        self.tasks.push_back(task);
        Pushed::Queued { start: self.may_start(max) }
    }

    /// Whether to start one more worker (counted as started if so).
    fn may_start(&mut self, max: usize) -> bool {
        let start = self.workers - self.blocked < max.max(1);
        if start {
            self.workers += 1;
        }
        start
    }

    /// A worker waits for a result: true when another should start to take
    /// the tasks waiting meanwhile.
    pub fn worker_blocked(&mut self, max: usize) -> bool {
        self.blocked += 1;
        self.idle.is_empty() && !self.tasks.is_empty() && self.may_start(max)
    }

    /// A worker that waited for a result runs again.
    pub fn worker_unblocked(&mut self) {
        self.blocked = self.blocked.saturating_sub(1);
    }

    /// The oldest task, or `waiter` queued until one comes.
    pub fn take_or_wait(&mut self, waiter: Waiter) -> Option<Message> {
        let task = self.tasks.pop_front();
        if task.is_none() {
            self.idle.push_back(waiter);
        }
        task
    }

    /// `waiter` no longer waits.
    pub fn cancel(&mut self, waiter: Waiter) {
        self.idle.retain(|w| *w != waiter);
    }

    /// A worker process ended (it should not): another may be started.
    pub fn worker_ended(&mut self) {
        self.workers = self.workers.saturating_sub(1);
    }

    /// Tasks waiting and tasks running: the node's work in hand.
    pub fn load(&self) -> usize {
        self.tasks.len() + self.workers - self.idle.len()
    }

    /// Tasks waiting for a worker, and workers waiting for a task.
    pub fn queued_and_idle(&self) -> (usize, usize) {
        (self.tasks.len(), self.idle.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pid;

    fn waiter(n: u32) -> Waiter {
        Waiter { pid: Pid::new(0, n, 1), ticket: 1 }
    }

    #[test]
    fn tasks_go_to_idle_workers_or_wait_and_workers_are_started_up_to_the_limit() {
        let mut pool = Pool::default();
        let t = |b: &[u8]| Message::from_slice(b);
        assert_eq!(pool.push(t(b"1"), 2), Pushed::Queued { start: true });
        assert_eq!(pool.push(t(b"2"), 2), Pushed::Queued { start: true });
        assert_eq!(pool.push(t(b"3"), 2), Pushed::Queued { start: false });
        assert_eq!(pool.load(), 3 + 2);
        assert_eq!(pool.take_or_wait(waiter(1)), Some(t(b"1")));
        assert_eq!(pool.take_or_wait(waiter(1)), Some(t(b"2")));
        assert_eq!(pool.take_or_wait(waiter(2)), Some(t(b"3")));
        assert_eq!(pool.take_or_wait(waiter(1)), None);
        assert_eq!(pool.load(), 1);
        assert_eq!(pool.push(t(b"4"), 2), Pushed::Handed((waiter(1), Completion::Value(t(b"4")))));
        assert_eq!(pool.take_or_wait(waiter(2)), None);
        pool.cancel(waiter(2));
        assert_eq!(pool.push(t(b"5"), 2), Pushed::Queued { start: false });
    }

    #[test]
    fn a_worker_waiting_for_a_result_lets_another_start() {
        let mut pool = Pool::default();
        let t = |b: &[u8]| Message::from_slice(b);
        assert_eq!(pool.push(t(b"outer"), 1), Pushed::Queued { start: true });
        assert_eq!(pool.take_or_wait(waiter(1)), Some(t(b"outer")));
        assert_eq!(pool.push(t(b"inner"), 1), Pushed::Queued { start: false });
        assert!(pool.worker_blocked(1), "the inner task must not wait for the outer one");
        assert_eq!(pool.take_or_wait(waiter(2)), Some(t(b"inner")));
        pool.worker_unblocked();
        assert!(!pool.worker_blocked(1), "nothing waits");
    }
}
