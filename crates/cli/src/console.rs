//! `synodic console ADDR`: attaches to a running program's control endpoint
//! (see `synodic_lua::control` for the protocol). On a terminal it gives a
//! prompt with line editing and history; otherwise it reads lines from
//! standard input, so it can be scripted. Output of the console's events, and
//! replies that arrive later, are printed as they come.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use synodic_lua::control::{load_or_create_cookie, unescape, HELLO};

#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// The address the program's control endpoint listens on (host:port).
    pub address: String,
    /// The file holding the shared secret (default: ~/.synodic/cookie).
    #[arg(long, value_name = "FILE")]
    pub cookie_file: Option<PathBuf>,
}

pub fn run(args: ConsoleArgs) -> Result<i32> {
    let cookie_file = args.cookie_file.or_else(synodic_lua::control::default_cookie_file).context("no cookie file: set HOME or pass --cookie-file")?;
    let cookie = load_or_create_cookie(&cookie_file).with_context(|| format!("cookie file {}", cookie_file.display()))?;
    let mut stream = TcpStream::connect(&args.address).with_context(|| format!("cannot connect to {}", args.address))?;
    writeln!(stream, "{HELLO} {cookie}")?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut greeting = String::new();
    reader.read_line(&mut greeting)?;
    let greeting = greeting.trim_end();
    let Some(agent) = greeting.strip_prefix("ok ") else {
        bail!("console {}: {}", args.address, if greeting.is_empty() { "connection closed" } else { greeting });
    };

    // Lines from the program: printed at once; a "d" marks the end of an event.
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { break };
            let (kind, text) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            match kind {
                "o" => println!("{}", unescape(text)),
                "e" => println!("error: {}", unescape(text)),
                "d" => {
                    let _ = done_tx.send(());
                }
                _ => {}
            }
            let _ = std::io::stdout().flush();
        }
        drop(done_tx);
    });

    let interactive = unsafe { libc::isatty(0) == 1 };
    if interactive {
        println!("connected to {} as agent {agent}; Ctrl-D leaves", args.address);
        let mut editor = rustyline::DefaultEditor::new()?;
        while let Ok(line) = editor.readline(&format!("{agent}> ")) {
            if line.trim().is_empty() {
                continue;
            }
            let _ = editor.add_history_entry(line.as_str());
            if !send_line(&mut stream, &line, &done_rx)? {
                break;
            }
        }
    } else {
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            if !line.trim().is_empty() && !send_line(&mut stream, &line, &done_rx)? {
                break;
            }
        }
    }
    Ok(0)
}

/// Sends one line and waits until the program has run it; false when the
/// program went away.
fn send_line(stream: &mut TcpStream, line: &str, done: &mpsc::Receiver<()>) -> Result<bool> {
    if writeln!(stream, "{line}").is_err() {
        return Ok(false);
    }
    Ok(done.recv().is_ok())
}
