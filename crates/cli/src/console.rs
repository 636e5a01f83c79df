//! `synodic console ADDR`: attaches to a running program's console endpoint
//! (see `synodic_net::console` for the protocol). On a terminal it gives a
//! prompt with line editing and history (Ctrl-C drops the line being typed,
//! Ctrl-D leaves); otherwise it reads lines from standard input, so it can be
//! scripted. Output of the console's events, and replies that arrive later,
//! are printed as they come. When the program ends, the console says so and
//! ends too.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use synodic_net::console::{unescape, HELLO};

#[derive(clap::Args)]
pub struct ConsoleArgs {
    /// The address the program's console endpoint listens on (host:port).
    pub address: String,
    /// The file holding the shared secret (default: ~/.synodic/cookie).
    #[arg(long, value_name = "FILE")]
    pub cookie_file: Option<PathBuf>,
}

/// What the reader thread tells the prompt.
enum Event {
    /// An event finished.
    Done,
    /// The program closed the connection.
    Gone,
}

pub fn run(args: ConsoleArgs) -> Result<i32> {
    let cookie_file = args.cookie_file.or_else(synodic_net::cookie::default_file).context("no cookie file: set HOME or pass --cookie-file")?;
    let (cookie, warnings) = synodic_net::cookie::load_or_create(&cookie_file)?;
    for w in warnings {
        eprintln!("synodic: warning: {w}");
    }
    let mut stream = TcpStream::connect(&args.address).with_context(|| format!("cannot connect to {}", args.address))?;
    writeln!(stream, "{HELLO} {cookie}")?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut greeting = String::new();
    reader.read_line(&mut greeting)?;
    let greeting = greeting.trim_end();
    let Some(agent) = greeting.strip_prefix("ok ") else {
        bail!("console {}: {}", args.address, if greeting.is_empty() { "connection closed" } else { greeting });
    };

    let interactive = unsafe { libc::isatty(0) == 1 };
    // The terminal as it is before line editing changes it, to put back if
    // the program ends while a line is being typed.
    let terminal = interactive.then(|| unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(0, &mut t) == 0).then_some(t)
    }).flatten();

    // Lines from the program: printed at once; a "d" marks the end of an event.
    let (events, done) = mpsc::channel();
    let address = args.address.clone();
    std::thread::spawn(move || {
        for line in reader.lines() {
            let Ok(line) = line else { break };
            let (kind, text) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            match kind {
                "o" => println!("{}", unescape(text)),
                "e" => println!("error: {}", unescape(text)),
                "d" => {
                    let _ = events.send(Event::Done);
                }
                _ => {}
            }
            let _ = std::io::stdout().flush();
        }
        eprintln!("synodic: the program at {address} has ended (connection closed)");
        if let Some(t) = terminal {
            // The prompt is waiting for a key that will never matter: leave now.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &t);
                libc::_exit(0);
            }
        }
        let _ = events.send(Event::Gone);
    });

    if interactive {
        println!("connected to {} as agent {agent}; processes() lists the processes, inspect(who) shows one; Ctrl-D leaves", args.address);
        let mut editor = rustyline::DefaultEditor::new()?;
        loop {
            match editor.readline(&format!("{agent}> ")) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    if !send_line(&mut stream, &line, &done)? {
                        return Ok(1);
                    }
                }
                // Ctrl-C drops the line being typed, as in a shell.
                Err(rustyline::error::ReadlineError::Interrupted) => continue,
                Err(_) => break,
            }
        }
    } else {
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            if !line.trim().is_empty() && !send_line(&mut stream, &line, &done)? {
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// Sends one line and waits until the program has run it; false when the
/// program went away.
fn send_line(stream: &mut TcpStream, line: &str, done: &mpsc::Receiver<Event>) -> Result<bool> {
    if writeln!(stream, "{line}").is_err() {
        // The reader sees the same closed connection: let it say so before
        // the console exits, so the user always learns why.
        while let Ok(Event::Done) = done.recv() {}
        return Ok(false);
    }
    Ok(matches!(done.recv(), Ok(Event::Done)))
}
