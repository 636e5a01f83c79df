//! The per-process context that native functions reach through the Lua
//! state's extra space: the runtime and process handles of the current
//! resume, and what the process is yielding for. Coroutines inherit the
//! extra-space pointer, so every thread of a process sees the same context.

use std::time::Instant;

use mlua_sys as ffi;
use synodic_core::{ExitReason, Message, Process, Runtime};

/// Why the process is yielding to the scheduler (not to a Lua coroutine).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pending {
    None,
    Preempt,
    Block,
    Exit,
}

pub(crate) enum Boot {
    /// A spawn message: the function and its arguments.
    Message(Message),
    /// The main script and its command-line arguments.
    Script { path: String, args: Vec<String> },
    /// `require(module).main(arg)`, for processes the runtime starts itself.
    Module { module: &'static str, arg: i64 },
}

pub(crate) struct Ctx {
    rt: *const Runtime,
    proc: Option<&'static Process>,
    pub pending: Pending,
    pub deadline: Option<Instant>,
    /// The store wait in progress, if any (see `wait`).
    pub blocked: Option<crate::wait::Blocked>,
    /// The current wait was withdrawn (see `wait::withdraw`).
    pub withdrawn: bool,
    /// Store waits numbered so far (the last one's ticket).
    pub tickets: u64,
    /// A `receive_match` filter is running (it must not take messages).
    pub in_filter: bool,
    /// Set by `exit` (boxed: every idle process pays for this field, few use it).
    pub exit: Option<Box<ExitReason>>,
    pub boot: Option<Boot>,
    /// Set when the error that ends the process was a load error (reported without traceback).
    pub load_error: bool,
    pub pid_meta: bool,
    /// Bytecode of the functions this process has sent (boxed, as `linda`).
    pub dumps: Option<Box<crate::dumps::Dumps>>,
}

impl Ctx {
    pub fn new(boot: Boot) -> Ctx {
        Ctx {
            rt: std::ptr::null(),
            proc: None,
            pending: Pending::None,
            deadline: None,
            blocked: None,
            withdrawn: false,
            tickets: 0,
            in_filter: false,
            exit: None,
            boot: Some(boot),
            load_error: false,
            pid_meta: false,
            dumps: None,
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
/// `L` must be a state created by [`crate::state::new_state`].
pub(crate) unsafe fn ctx<'a>(L: *mut ffi::lua_State) -> &'a mut Ctx {
    &mut **(ffi::lua_getextraspace(L) as *mut *mut Ctx)
}
