//! What the poll token's holder delivers (`netpoll`, steps 3 and 5): a
//! network of the test's own, whose blocking poll hands over the processes
//! the test gives it, as a link's read hands over the receivers of what
//! arrived and the processes other nodes asked for.

use std::sync::atomic::AtomicBool;

use parking_lot::Condvar;

use super::*;
use crate::netpoll::Netpoll;

/// A network whose poll "delivers" (queues here) the processes given to
/// `arrive`.
#[derive(Default)]
struct Network {
    host: Mutex<Weak<TestHost>>,
    arrived: Mutex<Vec<&'static Process>>,
    came: Condvar,
    interrupted: AtomicBool,
}

impl Network {
    fn arrive(&self, p: &'static Process) {
        self.arrived.lock().push(p);
        self.came.notify_all();
    }
}

impl Netpoll for Network {
    fn poll(&self, wait: bool) -> bool {
        let mut arrived = self.arrived.lock();
        while wait && arrived.is_empty() && !self.interrupted.swap(false, SeqCst) {
            self.came.wait(&mut arrived);
        }
        let delivered: Vec<_> = arrived.drain(..).collect();
        drop(arrived);
        let host = self.host.lock().upgrade();
        for p in &delivered {
            // As a spawn another node asked for is queued.
            host.as_ref().expect("the host lives while its workers poll").sched.schedule_back(p);
        }
        !delivered.is_empty()
    }

    fn interrupt(&self) {
        let _arrived = self.arrived.lock();
        self.interrupted.store(true, SeqCst);
        self.came.notify_all();
    }

    fn flush(&self) {}
}

#[test]
fn a_process_the_blocking_poll_delivers_runs_on_its_worker_and_wakes_no_other() {
    let host = host(2, |_, _| false);
    let net = Arc::new(Network::default());
    *net.host.lock() = host.me.clone();
    assert!(host.sched.set_netpoll(net.clone()));
    with_workers(host, 2, |h| {
        let sched = &h.sched;
        for (round, p) in processes(3).into_iter().enumerate() {
            // One worker parked in the poll, the other on the condition variable.
            await_until("one worker parked in the poll and one beside it", || sched.poll_blocked.load(SeqCst) && sched.idle.load(SeqCst) == 1);
            let unparked = sched.unparked.load(SeqCst);
            net.arrive(p);
            await_done(h, round + 1, "the delivered process");
            // (A spawn every 10 us woke the other worker for each, which
            // found nothing, spun and parked again: two context switches.)
            assert_eq!(sched.unparked.load(SeqCst), unparked, "round {round}: the poll's own process woke the parked worker");
        }
    });
}
