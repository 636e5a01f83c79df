//! The OS process's entry point. `synodic` starts without Rust's runtime
//! start-up (`#![no_main]` in main.rs), which sets up what a command that
//! may live a millisecond does not use: a guard and an alternate signal
//! stack for reporting an overflow of the main thread's stack (the C
//! library reads `/proc/self/maps` to find that stack), and SIGPIPE
//! ignored, which the command puts back at once (`signals`). Sixteen system
//! calls, ~50 µs of `synodic -e ''` (bench/startup). What of it matters is
//! done here: closed standard streams are opened on `/dev/null`, so that no
//! file the program opens becomes one of them. An overflow of the main
//! thread's stack is a plain SIGSEGV instead of a message; Lua bounds its
//! own C recursion and the codec its depth, so one would be a bug either way.

/// The C entry point: `crate::command` does the rest. (Test builds have
/// the test harness's instead.)
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    standard_streams_open();
    crate::command();
    0
}

/// Opens `/dev/null` in place of each closed standard stream (0, 1, 2), as
/// Rust's start-up does.
#[cfg_attr(test, allow(dead_code))]
fn standard_streams_open() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is an array of three pollfd; a zero timeout returns at
    // once. `open` returns the lowest free descriptor: the closed stream's,
    // as they are opened in order.
    unsafe {
        if libc::poll(fds.as_mut_ptr(), 3, 0) == -1 {
            return;
        }
        for fd in fds {
            if fd.revents & libc::POLLNVAL != 0 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
}
