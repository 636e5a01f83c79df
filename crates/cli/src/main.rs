//! The `synodic` command: a thin front over the runtime crates. It parses the
//! command line, starts a node's runtime, runs the main process, and turns
//! its end into an exit status.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use synodic_core::{Config, ExitReason, Runtime};
use synodic_lua::LuaProcess;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Concurrent, parallel and distributed programming in Lua.
#[derive(Parser)]
#[command(name = "synodic", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a Lua program as the main process; the run ends when it ends.
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Worker threads that run processes (default: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    workers: usize,
    /// The Lua script to run.
    script: PathBuf,
    /// Arguments for the script (the global `arg`, and `...`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Run(args) => run(args),
    };
    exit(code)
}

fn run(args: RunArgs) -> i32 {
    let config = Config { workers: args.workers, preempt_signal: Some(synodic_lua::preempt::install()), ..Config::default() };
    let rt = Runtime::start(config);
    let script = args.script.to_string_lossy().into_owned();
    match rt.run_main(LuaProcess::main_script(script, args.args)) {
        ExitReason::Normal => 0,
        ExitReason::Error(_) | ExitReason::Value(_) => 1,
    }
}

/// Ends the OS process at once: other processes may still be running, so no
/// destructors run; buffered output is flushed first.
fn exit(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}
