//! How `synodic run` meets signals, as the `lua` command does where it can.
//!
//! - SIGPIPE keeps its default action (Rust's runtime ignores it): a program
//!   printing to a closed pipe ends, killed by the signal, as `lua` is.
//!   Sockets are written with MSG_NOSIGNAL, so a peer that goes away never
//!   kills the node.
//! - SIGINT and SIGTERM end the run at once (SIGINT at a prompt stops the
//!   line running instead), but first flush what processes
//!   printed to a pipe or a file (a buffered stdout), and say so on stderr.
//!   They are taken by a thread of their own with `sigwait`, so nothing runs
//!   in a signal handler. Exit status 128 + the signal, as a shell reports it.
//!   That thread starts only when the run lasts (`Config::on_lasting`: other
//!   threads start, a process blocks, or the main process has computed for
//!   10 ms): making it and then ending it at the exit, on another processor,
//!   took ~300 µs of `synodic -e ''`. Until then the two signals are
//!   blocked: one that comes that early is taken when the thread starts.
//!
//! - Before it exits, on SIGTERM or SIGINT or at the end of a run, a node
//!   leaves its cluster (`on_exit`), so the others hear of it at once.
//!
//! `install` must run before any other thread starts: threads inherit the
//! signal mask that routes the two signals to the waiting thread.

/// The waiting thread's stack: it runs little (a farewell, a flush), and
/// a small one is quicker to make (Rust's threads take 2 MiB).
const WAITER_STACK: usize = 256 << 10;

/// Sets the signal dispositions and blocks SIGINT and SIGTERM on this
/// thread (and so on every thread it starts); [`start_waiting`] takes them.
pub fn install() {
    // SAFETY: plain libc calls on this thread's mask and the process's
    // dispositions, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Starts the thread that takes SIGINT and SIGTERM, once (after
/// [`install`]).
pub fn start_waiting() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    // SAFETY: the thread is started detached, with attributes initialized
    // here and destroyed after.
    STARTED.call_once(|| unsafe {
        // A bare thread rather than Rust's: those set up a stack guard,
        // a signal stack and their thread record first, and the start of
        // a run waited ~100 µs for it (`bench/startup`).
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        let mut thread: libc::pthread_t = 0;
        if libc::pthread_attr_init(&mut attr) == 0 {
            libc::pthread_attr_setstacksize(&mut attr, WAITER_STACK);
            libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            libc::pthread_create(&mut thread, &attr, wait_for_signals, std::ptr::null_mut());
            libc::pthread_attr_destroy(&mut attr);
        }
    });
}

/// The waiting thread: SIGINT and SIGTERM, blocked everywhere else, are
/// taken here with `sigwait`, so nothing runs in a signal handler.
extern "C" fn wait_for_signals(_: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: libc calls on a set made here; `_exit` ends the process
    // without running destructors other threads may be using.
    unsafe {
        // Named here: naming another thread writes a file in /proc.
        libc::prctl(libc::PR_SET_NAME, c"synodic-signals".as_ptr());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let mut sig = 0;
        while libc::sigwait(&set, &mut sig) == 0 {
            if sig == libc::SIGINT {
                if let Some(interrupt) = INTERRUPT.get() {
                    interrupt();
                    continue;
                }
            }
            libc::fflush(std::ptr::null_mut());
            farewell();
            crate::output::drain();
            libc::fflush(std::ptr::null_mut());
            let name = if sig == libc::SIGINT { "interrupted" } else { "terminated" };
            if !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("synodic: {name}");
            }
            libc::_exit(128 + sig);
        }
    }
    std::ptr::null_mut()
}

/// What SIGINT does instead of ending the run, if set (at a prompt: stop
/// the line running).
static INTERRUPT: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>> = std::sync::OnceLock::new();

/// Has SIGINT call `interrupt` rather than end the run (and starts the
/// thread that takes it).
pub fn on_interrupt(interrupt: impl Fn() + Send + Sync + 'static) {
    let _ = INTERRUPT.set(Box::new(interrupt));
    start_waiting();
}

/// A node a run started (`node --quiet`): ended by the run, it says nothing.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says nothing when a signal ends the process.
pub fn quiet() {
    QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
}

type Farewell = Box<dyn Fn() + Send>;

/// What runs before the process exits on a signal, in the order given.
static FAREWELLS: std::sync::Mutex<Vec<Farewell>> = std::sync::Mutex::new(Vec::new());

/// Has `farewell` run before the process exits, on SIGTERM or SIGINT or
/// at the end of a run; it must be quick (the exit waits for it).
pub fn on_exit(farewell: impl Fn() + Send + 'static) {
    FAREWELLS.lock().unwrap_or_else(|e| e.into_inner()).push(Box::new(farewell));
}

/// Runs what `on_exit` registered (the process is about to exit).
pub fn farewell() {
    for farewell in FAREWELLS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        farewell();
    }
}
