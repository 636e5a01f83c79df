//! `synodic [options] [script [args]]`: the `lua` command's interface, so
//! that `synodic` can stand in for `lua` (SPEC §8). Options are read as
//! `lua.c` reads them (`-e`, `-l`, `-i`, `-v`, `-E`, `-W`, `--`, `-`);
//! the main process (`lualib/cli.lua`) does the rest. The prompt's lines
//! are read here (with line editing and history on a terminal) and sent
//! to the main process, which asks for each one on a port; Ctrl-C while a
//! line runs interrupts it ("interrupted!"), not the run.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Read, Write};

use synodic_core::wire::Writer;
use synodic_core::{Message, Runtime};
use synodic_lua::vm::command_line::{interpreter, Action, CommandLine, Script};

/// The commands `synodic` has besides the `lua` interface.
const SUBCOMMANDS: &[&str] = &["run", "node", "launch", "console", "help", "--help", "-h", "--version", "-V"];

/// The arguments, if they are a `lua`-style command line (not a subcommand).
pub fn lua_command(args: impl Iterator<Item = OsString>) -> Option<Vec<String>> {
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    match args.first() {
        Some(first) if SUBCOMMANDS.contains(&first.as_str()) => None,
        _ => Some(args),
    }
}

fn usage(problem: &str) -> i32 {
    let me = interpreter();
    eprintln!("synodic: {problem}");
    eprintln!(
        "usage: {me} [options] [script [args]]\n\
         Available options are:\n  \
         -e stat   execute string 'stat'\n  \
         -i        enter interactive mode after executing 'script'\n  \
         -l mod    require library 'mod' into global 'mod'\n  \
         -l g=mod  require library 'mod' into global 'g'\n  \
         -v        show version information\n  \
         -E        ignore environment variables\n  \
         -W        turn warnings on\n  \
         --        stop handling options\n  \
         -         stop handling options and execute stdin\n\
         Commands: {me} run|node|launch|console ... (see '{me} --help')"
    );
    1
}

/// Reads the command line; `Err` with the exit status after a usage error
/// (said on stderr).
pub fn parse(args: Vec<String>) -> Result<CommandLine, i32> {
    let banner = format!("Synodic {} (Lua 5.4.8  Copyright (C) 1994-2025 Lua.org, PUC-Rio)", env!("CARGO_PKG_VERSION"));
    let mut cl = CommandLine { before: vec![interpreter()], init: true, banner, ..Default::default() };
    let mut i = 0;
    let mut script_at = None;
    // After `--`, a script called `-` is a file of that name, as in `lua`.
    let mut after_dashes = false;
    let (mut has_e, mut ignore_env) = (false, false);
    while i < args.len() {
        let a = &args[i];
        if !a.starts_with('-') {
            script_at = Some(i);
            break;
        }
        match a.as_str() {
            "--" => {
                cl.before.push(a.clone());
                if i + 1 < args.len() {
                    script_at = Some(i + 1);
                    after_dashes = true;
                }
                break;
            }
            "-" => {
                script_at = Some(i);
                break;
            }
            "-E" => ignore_env = true,
            "-W" => cl.warnings = true,
            "-i" => {
                cl.interactive = true;
                cl.version = true;
            }
            "-v" => cl.version = true,
            _ if a.starts_with("-e") || a.starts_with("-l") => {
                let value = match a.len() > 2 {
                    true => a[2..].to_string(),
                    false => {
                        cl.before.push(a.clone());
                        i += 1;
                        args.get(i).cloned().ok_or_else(|| usage(&format!("'{a}' needs argument")))?
                    }
                };
                cl.before.push(if a.len() > 2 { a.clone() } else { value.clone() });
                if a.starts_with("-e") {
                    has_e = true;
                    cl.actions.push(Action::Execute(value));
                } else {
                    let (global, module) = value.split_once('=').map_or_else(|| (value.clone(), value.clone()), |(g, m)| (g.to_string(), m.to_string()));
                    cl.actions.push(Action::Require(global, module));
                }
                i += 1;
                continue;
            }
            _ => return Err(usage(&format!("unrecognized option '{a}'"))),
        }
        cl.before.push(a.clone());
        i += 1;
    }
    if ignore_env {
        cl.init = false;
        for var in ["LUA_PATH", "LUA_PATH_5_4", "LUA_CPATH", "LUA_CPATH_5_4", "LUA_INIT", "LUA_INIT_5_4"] {
            // Before any thread starts: the states (and the nodes this run
            // starts) read these as `lua -E` ignores them.
            std::env::remove_var(var);
        }
    }
    match script_at {
        Some(at) => {
            let name = args[at].clone();
            cl.args = args[at + 1..].to_vec();
            cl.script = match name.as_str() {
                "-" if !after_dashes => Script::Source(stdin_source().map_err(|e| {
                    eprintln!("synodic: cannot read standard input: {e}");
                    1
                })?),
                path => Script::File(path.to_string()),
            };
            cl.script_name = Some(name);
        }
        // No script: a prompt on a terminal, else standard input is the
        // script (unless -e or -v had work to do), as with `lua`.
        None if !has_e && !cl.version => match std::io::stdin().is_terminal() {
            true => cl.interactive = true,
            false => {
                cl.script = Script::Source(stdin_source().map_err(|e| {
                    eprintln!("synodic: cannot read standard input: {e}");
                    1
                })?);
                cl.script_name = Some("-".into());
            }
        },
        None => {}
    }
    Ok(cl)
}

/// All of standard input (a script given as `-`).
pub fn stdin_source() -> std::io::Result<Vec<u8>> {
    let mut source = Vec::new();
    std::io::stdin().lock().read_to_end(&mut source)?;
    Ok(source)
}

/// `synodic run - ARGS`: the script read from standard input.
pub fn stdin_script(source: Vec<u8>, args: Vec<String>) -> CommandLine {
    CommandLine { before: vec![interpreter(), "run".into()], script_name: Some("-".into()), script: Script::Source(source), args, init: true, ..Default::default() }
}

/// Opens the port the main process asks for prompt lines on, and the
/// thread that reads them; Ctrl-C while a line runs interrupts it.
pub fn open_prompt(rt: &Runtime) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let port = rt.ports().open(Box::new(move |bytes| {
        let text = String::from_utf8_lossy(bytes);
        tx.send(text.strip_prefix("prompt ").unwrap_or(&text).to_string()).is_ok()
    }));
    let reader_rt = rt.clone();
    let _ = std::thread::Builder::new().name("synodic-prompt".into()).spawn(move || read_lines(&reader_rt, rx));
    let interrupt_rt = rt.clone();
    crate::signals::on_interrupt(move || {
        if let Some(main) = interrupt_rt.main_pid() {
            interrupt_rt.interrupt(main);
        }
    });
    port
}

fn read_lines(rt: &Runtime, prompts: std::sync::mpsc::Receiver<String>) {
    let tell = |what: &[u8], line: Option<&str>| {
        let mut w = Writer::message(if line.is_some() { 2 } else { 1 });
        w.str(what);
        if let Some(line) = line {
            w.str(line.as_bytes());
        }
        if let (Some(main), Ok(bytes)) = (rt.main_pid(), w.finish()) {
            rt.send(main, Message::from_vec(bytes));
        }
    };
    let mut editor = std::io::stdin().is_terminal().then(|| rustyline::DefaultEditor::new().ok()).flatten();
    let history = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".synodic_history"));
    if let (Some(e), Some(h)) = (editor.as_mut(), history.as_ref()) {
        let _ = e.load_history(h);
    }
    while let Ok(prompt) = prompts.recv() {
        let line = match editor.as_mut() {
            Some(e) => match e.readline(&prompt) {
                Ok(line) => {
                    let _ = e.add_history_entry(line.as_str());
                    Some(line)
                }
                // Ctrl-C drops what was typed of the statement.
                Err(rustyline::error::ReadlineError::Interrupted) => Some("\x18".into()),
                Err(_) => None,
            },
            None => {
                print!("{prompt}");
                let _ = std::io::stdout().flush();
                let mut line = String::new();
                match std::io::stdin().lock().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
                }
            }
        };
        match line {
            Some(line) => tell(b"$cli.line", Some(&line)),
            None => {
                if let (Some(e), Some(h)) = (editor.as_mut(), history.as_ref()) {
                    let _ = e.save_history(h);
                }
                println!();
                tell(b"$cli.eof", None);
                return;
            }
        }
    }
}
