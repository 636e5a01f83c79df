//! The node's task pool (the futures' and skeletons' tasks) and its
//! load, as other nodes are told it.

use std::sync::atomic::Ordering::*;
use std::sync::Arc;


use crate::Message;


use super::*;

impl Runtime {
    /// A task for the node's pool (see [`crate::pool`]): an idle worker
    /// takes it, or it waits, and a worker is started if the pool may grow.
    pub fn pool_push(&self, task: Message) {
        let pushed = self.shared.pool.lock().push(task, self.workers());
        match pushed {
            crate::pool::Pushed::Handed(delivery) => self.complete(delivery),
            crate::pool::Pushed::Queued { start: false } => {}
            crate::pool::Pushed::Queued { start: true } => self.start_pool_worker(),
        }
    }

    /// A pool worker waits for a result (or runs again, `false`): another
    /// worker starts if tasks would wait for it.
    pub fn pool_worker_waits(&self, waits: bool) {
        let start = {
            let mut pool = self.shared.pool.lock();
            if !waits {
                pool.worker_unblocked();
                return;
            }
            pool.worker_blocked(self.workers())
        };
        if start {
            self.start_pool_worker();
        }
    }

    pub(super) fn start_pool_worker(&self) {
        let started = self.shared.pool_worker.map(|body| self.spawn_with(body(), Spawn { first: None, max_memory: None }));
        if !matches!(started, Some(Ok(_))) {
            self.shared.pool.lock().worker_ended();
        }
    }

    /// Runs `op` on the node's pool.
    pub fn with_pool<R>(&self, op: impl FnOnce(&mut crate::pool::Pool) -> R) -> R {
        op(&mut self.shared.pool.lock())
    }

    /// A fresh tag for a request to another node (see `dist::requests`).
    pub fn next_tag(&self) -> u64 {
        self.shared.tags.fetch_add(1, Relaxed) + 1
    }

    /// How many worker threads run processes.
    pub fn workers(&self) -> usize {
        self.scheduler().target()
    }

    /// How loaded this node is: live processes per worker thread, ×1000.
    pub fn load(&self) -> u32 {
        // Tasks waiting in the pool count as the processes they will keep
        // busy, and idle pool workers not at all, so that a burst of
        // `async` tasks counts as it is placed.
        let (queued, idle) = self.shared.pool.lock().queued_and_idle();
        let busy = (self.shared.table.occupied() + queued).saturating_sub(idle);
        let per_worker = busy * 1000 / self.scheduler().target().max(1);
        per_worker.min(u32::MAX as usize) as u32
    }

    /// The least loaded live node (this one when it is alone).
    pub fn least_loaded_node(&self) -> Arc<str> {
        self.service::<crate::dist::pool::Pools>().least_loaded(self)
    }

    /// The names of the live nodes, this one included, sorted.
    pub fn live_nodes(&self) -> Vec<Arc<str>> {
        match self.transport() {
            Some(t) => t.nodes(),
            None => vec![self.node_name()],
        }
    }
}
