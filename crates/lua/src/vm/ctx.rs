//! The per-process context that native functions reach through the Lua
//! state's extra space: the runtime and process handles of the current
//! resume, and what the process is yielding for. Coroutines inherit the
//! extra-space pointer, so every thread of a process sees the same context.
//!
//! As Lua's `global_State` does for its subsystems, it holds each module's
//! per-process part, in one place (its size is paid by every process, so
//! rarely used parts are boxed). Who owns what:
//!
//! | fields | module |
//! |---|---|
//! | `rt`, `proc`, `pending`, `exit`, `boot`, `load_error` | `process`, `kernel` (resumes, exits) |
//! | `deadline`, `blocked`, `withdrawn`, `tickets` | `wait` (blocking and withdrawing) |
//! | `in_filter` | `kernel` (`receive_match`) |
//! | `hook_yielded` | `preempt` |
//! | `pid_meta` | `util` (pids' metatable) |
//! | `lazy`, `modules_changed` | `lazy` (and the codec, which reads them) |
//! | `dumps` | `dumps` (the codec's bytecode cache) |

use mlua_sys as ffi;
use synodic_core::{ExitReason, Process, Runtime};

/// Why the process is yielding to the scheduler (not to a Lua coroutine).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pending {
    None,
    Preempt,
    Block,
    Exit,
}

/// The argument of a module's `main` (see [`Boot::Module`]).
pub(crate) enum ModuleArg {
    Int(i64),
    Text(String),
}

pub(crate) enum Boot {
    /// A spawned process: its function and arguments are the first message
    /// in its mailbox (the spawn message); its state is a copy of the
    /// template, if it has one (see `template`).
    Spawned(Option<&'static crate::vm::template::Template>),
    /// The main script and its command-line arguments (boxed, as the next:
    /// one process of a run has them, and this enum's size is paid by every
    /// process).
    Script(Box<crate::vm::command_line::CommandLine>),
    /// `require(driver).main(description)` with `arg` set from the command
    /// line (`synodic [options] [script [args]]`, see `command_line`).
    Driven(Box<(&'static str, crate::vm::command_line::CommandLine)>),
    /// `require(module).main(arg)`, for processes the runtime starts itself.
    Module(Box<(&'static str, ModuleArg)>),
    /// A spawned process that started as a copy of this template, until it
    /// first blocks (its hot lines may be the template's: see `hot`).
    Started(&'static crate::vm::template::Template),
}

pub(crate) struct Ctx {
    rt: *const Runtime,
    proc: Option<&'static Process>,
    pub pending: Pending,
    /// When the blocking call in progress gives up: nanoseconds of the
    /// node's uptime (one word where an `Instant` takes two: this struct's
    /// size decides an idle process's allocation class).
    pub deadline: Option<std::num::NonZeroU64>,
    /// The store wait in progress, if any (see `wait`).
    pub blocked: Option<crate::vm::wait::Blocked>,
    /// The current wait was withdrawn (see `wait::withdraw`).
    pub withdrawn: bool,
    /// Store waits numbered so far (the last one's ticket).
    pub tickets: u32,
    /// KiB of buffers made or received since the process last blocked (see
    /// `vm::util::collect_dropped`).
    pub payload_kib: u32,
    /// This process is one of the node's pool workers (see `future`)...
    pub pool_worker: bool,
    /// ...and is waiting in `get`, uncounted by the pool.
    pub pool_waiting: bool,
    /// Its processor time is counted across its runs (see `vm::cputime`).
    pub timed: bool,
    /// A `receive_match` filter is running (it must not take messages).
    pub in_filter: bool,
    /// The preempting hook made a thread yield (see `preempt::enter`).
    pub hook_yielded: bool,
    /// Set by `exit` (boxed: every idle process pays for this field, few use it).
    pub exit: Option<Box<ExitReason>>,
    pub boot: Option<Boot>,
    /// Set when the error that ends the process was a load error (reported without traceback).
    pub load_error: bool,
    pub pid_meta: bool,
    /// The state's lazy tables (see `lazy`).
    pub lazy: crate::vm::lazy::LazyList,
    /// A module was stored in `package.loaded` since the codec last looked.
    pub modules_changed: bool,
    /// What the codec keeps between this process's sends (boxed: most
    /// processes send no function and no table).
    pub sent: Option<Box<crate::vm::codec::Sent>>,
}

impl Ctx {
    /// The template the process started as a copy of, the first time it is
    /// asked after the start (see `Boot::Started`).
    pub fn take_started(&mut self) -> Option<&'static crate::vm::template::Template> {
        match self.boot {
            Some(Boot::Started(t)) => {
                self.boot = None;
                Some(t)
            }
            _ => None,
        }
    }

    pub fn new(boot: Boot) -> Ctx {
        Ctx {
            rt: std::ptr::null(),
            proc: None,
            pending: Pending::None,
            deadline: None,
            blocked: None,
            withdrawn: false,
            tickets: 0,
            payload_kib: 0,
            pool_worker: false,
            timed: false,
            pool_waiting: false,
            in_filter: false,
            hook_yielded: false,
            exit: None,
            boot: Some(boot),
            load_error: false,
            pid_meta: false,
            lazy: crate::vm::lazy::LazyList::new(),
            modules_changed: true,
            sent: None,
        }
    }

    /// Points the context at the handles of the resume that is starting.
    pub fn enter(&mut self, rt: &Runtime, proc: &'static Process) {
        self.rt = rt;
        self.proc = Some(proc);
        self.pending = Pending::None;
    }

    pub fn rt(&self) -> &Runtime {
        // SAFETY: set by `enter` to a reference that outlives the resume; native functions only run inside it.
        unsafe { &*self.rt }
    }

    pub fn proc(&self) -> &'static Process {
        self.proc.expect("native functions run inside a resume")
    }
}

/// The context of the process that owns `L`.
///
/// # Safety
/// `L` must be a state created by [`crate::vm::state::new_state`].
pub(crate) unsafe fn ctx<'a>(L: *mut ffi::lua_State) -> &'a mut Ctx {
    // SAFETY: `new_state` (or a template's copy) wrote a pointer to the
    // process's `Ctx` into `L`'s extra space, which its coroutines inherit,
    // and the context outlives the state. (That no other `&mut Ctx` is in
    // use meanwhile is left to the callers, not enforced: see `wait::withdraw`.)
    unsafe { &mut **(ffi::lua_getextraspace(L) as *mut *mut Ctx) }
}
