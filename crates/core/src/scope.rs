//! The tuple scope's hold on a node's tuple operations (Network Linda's
//! stop, step and break; SPEC §12). The dashboard drives it; the Lua layer
//! asks it before every tuple operation of a process of this node:
//!
//! 1. While nothing is asked of it the gate is open, and asking costs one
//!    relaxed load ([`Gate::engaged`]).
//! 2. Stopped, every operation that comes is held ([`Gate::hold`]); the
//!    process waits and asks again ([`Gate::still_held`]) until it is let
//!    through: one at a time by [`Gate::step`] (the oldest held, or the
//!    one named), or all by [`Gate::resume`].
//! 3. With a break condition set, each operation is tested against it by
//!    the process itself (the condition is Lua code, the Lua layer's to
//!    run); one that meets it stops the gate and is held ([`Gate::hit`]).
//!
//! A pass is given per process: the operation it lets through is the one
//! that process was held in; its next one is held again while stopped.
//! Each node has its own gate; the dashboard stops and resumes every node.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::Pid;

/// A tuple operation held (or the one that met the break condition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub pid: Pid,
    /// The method: "out", "take", "rd"...
    pub op: String,
    /// The space's name, or "private space N".
    pub space: String,
    /// The operation's arguments as Lua would write them: `("job", ?int)`.
    pub args: String,
}

/// What a process about to do a tuple operation is told.
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    Go,
    /// Stopped: hold the operation.
    Hold,
    /// Test the operation against this break condition first.
    Test(Arc<str>),
}

/// What the dashboard shows of the gate.
#[derive(Clone, Debug, Default)]
pub struct View {
    pub stopped: bool,
    pub condition: Option<Arc<str>>,
    /// Held operations, oldest first.
    pub held: Vec<Held>,
    /// The operation that met the break condition, until resumed.
    pub hit: Option<Held>,
    /// Operations let through one at a time so far.
    pub steps: u64,
}

#[derive(Default)]
pub struct Gate {
    engaged: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    stopped: bool,
    condition: Option<Arc<str>>,
    held: Vec<Held>,
    /// Processes let through for the operation they were held in.
    passes: Vec<Pid>,
    hit: Option<Held>,
    steps: u64,
}

impl Gate {
    /// Step 1: whether an operation must ask [`Gate::enter`] at all.
    #[inline]
    pub fn engaged(&self) -> bool {
        self.engaged.load(Relaxed)
    }

    /// What `pid`'s operation does now.
    pub fn enter(&self, pid: Pid) -> Entry {
        let mut st = self.state.lock();
        if let Some(i) = st.passes.iter().position(|&p| p == pid) {
            st.passes.swap_remove(i);
            self.update(&st);
            return Entry::Go;
        }
        if st.stopped {
            return Entry::Hold;
        }
        match &st.condition {
            Some(c) => Entry::Test(c.clone()),
            None => Entry::Go,
        }
    }

    /// Step 2: `held` waits until let through.
    pub fn hold(&self, held: Held) {
        let mut st = self.state.lock();
        if !st.held.iter().any(|h| h.pid == held.pid) {
            st.held.push(held);
        }
    }

    /// Step 3: `held` met the break condition: the gate stops, holding it.
    pub fn hit(&self, held: Held) {
        let mut st = self.state.lock();
        st.stopped = true;
        st.hit.get_or_insert_with(|| held.clone());
        if !st.held.iter().any(|h| h.pid == held.pid) {
            st.held.push(held);
        }
        self.update(&st);
    }

    /// Whether `pid`, held, must go on waiting (false: its operation goes ahead).
    pub fn still_held(&self, pid: Pid) -> bool {
        let mut st = self.state.lock();
        let pass = st.passes.iter().position(|&p| p == pid);
        if let Some(i) = pass {
            st.passes.swap_remove(i);
        }
        if pass.is_some() || !st.stopped {
            st.held.retain(|h| h.pid != pid);
            self.update(&st);
            return false;
        }
        true
    }

    /// Stops every tuple operation of this node.
    pub fn stop(&self) {
        let mut st = self.state.lock();
        st.stopped = true;
        self.update(&st);
    }

    /// Lets every held operation go, and the ones to come (the break
    /// condition, if any, stays set).
    pub fn resume(&self) {
        let mut st = self.state.lock();
        st.stopped = false;
        st.hit = None;
        st.held.clear();
        st.passes.clear();
        self.update(&st);
    }

    /// Lets one held operation through: `pid`'s, or the oldest; the one let
    /// through, if any was held.
    pub fn step(&self, pid: Option<Pid>) -> Option<Held> {
        let mut st = self.state.lock();
        let i = match pid {
            Some(p) => st.held.iter().position(|h| h.pid == p)?,
            None if st.held.is_empty() => return None,
            None => 0,
        };
        let held = st.held.remove(i);
        st.passes.push(held.pid);
        st.steps += 1;
        self.update(&st);
        Some(held)
    }

    /// Sets (or, with `None`, clears) the break condition.
    pub fn set_condition(&self, condition: Option<&str>) {
        let mut st = self.state.lock();
        st.condition = condition.filter(|c| !c.trim().is_empty()).map(Arc::from);
        self.update(&st);
    }

    /// Forgets a process that ended while held.
    pub fn forget(&self, pid: Pid) {
        let mut st = self.state.lock();
        st.held.retain(|h| h.pid != pid);
        st.passes.retain(|&p| p != pid);
        self.update(&st);
    }

    pub fn view(&self) -> View {
        let st = self.state.lock();
        View { stopped: st.stopped, condition: st.condition.clone(), held: st.held.clone(), hit: st.hit.clone(), steps: st.steps }
    }

    fn update(&self, st: &State) {
        self.engaged.store(st.stopped || st.condition.is_some() || !st.passes.is_empty(), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(n: u32, what: &str) -> Held {
        Held { pid: Pid::new(0, n, 0), op: what.into(), space: "jobs".into(), args: "(\"job\", ?int)".into() }
    }

    #[test]
    fn stopped_holds_step_lets_one_through_resume_all() {
        let gate = Gate::default();
        let (a, b) = (Pid::new(0, 1, 0), Pid::new(0, 2, 0));
        assert!(!gate.engaged());
        assert_eq!(gate.enter(a), Entry::Go);
        gate.stop();
        assert!(gate.engaged());
        assert_eq!(gate.enter(a), Entry::Hold);
        gate.hold(op(1, "take"));
        gate.hold(op(2, "out"));
        assert!(gate.still_held(a) && gate.still_held(b));
        assert_eq!(gate.step(None).map(|h| h.pid), Some(a));
        assert!(!gate.still_held(a), "a's operation goes ahead");
        assert!(gate.still_held(b));
        assert_eq!(gate.enter(a), Entry::Hold, "a's next operation is held again");
        assert_eq!(gate.view().steps, 1);
        gate.resume();
        assert!(!gate.still_held(b));
        assert!(!gate.engaged());
        assert!(gate.view().held.is_empty());
    }

    #[test]
    fn a_break_condition_is_tested_and_a_hit_stops_the_gate() {
        let gate = Gate::default();
        let a = Pid::new(0, 1, 0);
        gate.set_condition(Some("op == 'out'"));
        assert!(gate.engaged());
        assert_eq!(gate.enter(a), Entry::Test("op == 'out'".into()));
        gate.hit(op(1, "out"));
        let v = gate.view();
        assert!(v.stopped);
        assert_eq!(v.hit.map(|h| h.op), Some("out".to_string()));
        assert!(gate.still_held(a));
        gate.step(Some(a));
        assert!(!gate.still_held(a));
        gate.set_condition(None);
        gate.resume();
        assert!(!gate.engaged());
    }
}
