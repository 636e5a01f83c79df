//! `synodic console ADDR`: attaches to a running program's console endpoint
//! (see `synodic_net::console` for the protocol: the handshake proves the
//! cookie without sending it, and every line is encrypted). On a terminal it gives a
//! prompt with line editing and history (Ctrl-C drops the line being typed,
//! Ctrl-D leaves); otherwise it reads lines from standard input, so it can be
//! scripted. Output of the console's events, and replies that arrive later,
//! are printed as they come. When the program ends, the console says so and
//! ends too.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use synodic_net::console::{unescape, Lines};
use synodic_net::handshake::{self, Handshake, Purpose, Session};
use synodic_net::record::Sealer;

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
    /// The line began a statement that goes on: the agent waits for more.
    More,
    /// The program closed the connection.
    Gone,
}

pub fn run(args: ConsoleArgs) -> Result<i32> {
    if let Some(file) = args.cookie_file.as_ref().filter(|f| !f.exists()) {
        bail!("no cookie file {} (--cookie-file takes an existing file)", file.display());
    }
    let cookie_file = args.cookie_file.or_else(synodic_net::cookie::default_file).context("no cookie file: set HOME or pass --cookie-file")?;
    let (cookie, warnings) = synodic_net::cookie::load_or_create(&cookie_file)?;
    for w in warnings {
        eprintln!("synodic: warning: {w}");
    }
    let mut stream = TcpStream::connect(&args.address).with_context(|| format!("cannot connect to {}", args.address))?;
    let config = handshake::Config { cookie: cookie.into_bytes(), purpose: Purpose::Console, node: synodic_core::NodeId::fresh("console"), listen: String::new(), plain: false };
    let (_, Session { sealer, opener }) = handshake::blocking(&mut stream, Handshake::dialer(config)?, None).with_context(|| format!("console {}", args.address))?;
    let mut lines = Lines::new(opener, usize::MAX);
    let mut reader = stream.try_clone()?;
    let greeting = String::from_utf8_lossy(&next_line(&mut reader, &mut lines).unwrap_or_default()).into_owned();
    let Some(agent) = greeting.strip_prefix("ok ") else {
        bail!("console {}: {}", args.address, if greeting.is_empty() { "connection closed" } else { &greeting });
    };
    let agent = agent.to_string();
    let writer = Writer { stream, sealer };

    // SAFETY: isatty only reads the descriptor's state.
    let interactive = unsafe { libc::isatty(0) == 1 };
    // The terminal as it is before line editing changes it, to put back if
    // the program ends while a line is being typed.
    // SAFETY: `t` is a plain C struct that tcgetattr fills (all zeroes is a valid value of it).
    let terminal = interactive.then(|| unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(0, &mut t) == 0).then_some(t)
    }).flatten();

    // Lines from the program: printed at once; a "d" marks the end of an event.
    let (events, done) = mpsc::channel();
    let address = args.address.clone();
    std::thread::spawn(move || {
        while let Some(line) = next_line(&mut reader, &mut lines) {
            let line = String::from_utf8_lossy(&line);
            let (kind, text) = line.split_once(' ').unwrap_or((&line, ""));
            match kind {
                "o" => println!("{}", unescape(text)),
                "e" => println!("error: {}", unescape(text)),
                "d" => {
                    let _ = events.send(Event::Done);
                }
                "m" => {
                    let _ = events.send(Event::More);
                }
                _ => {}
            }
            let _ = std::io::stdout().flush();
        }
        eprintln!("synodic: the program at {address} has ended (connection closed)");
        if let Some(t) = terminal {
            // The prompt is waiting for a key that will never matter: leave now.
            // SAFETY: `t` came from tcgetattr on the same descriptor; _exit
            // ends the process without running Rust code that could be mid-way.
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
        let writer = std::sync::Arc::new(std::sync::Mutex::new(writer));
        interrupt_on_ctrl_c(writer.clone());
        let mut more = false;
        loop {
            let prompt = if more { format!("{agent}>> ") } else { format!("{agent}> ") };
            match editor.readline(&prompt) {
                Ok(line) if line.trim().is_empty() && !more => continue,
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    match send_line(&writer, &line, &done)? {
                        Some(goes_on) => more = goes_on,
                        None => return Ok(1),
                    }
                }
                // Ctrl-C drops the line being typed, as in a shell (and
                // what was typed of a statement before it).
                Err(rustyline::error::ReadlineError::Interrupted) if more => {
                    more = false;
                    match send_line(&writer, "\x18", &done)? {
                        Some(_) => {}
                        None => return Ok(1),
                    }
                }
                Err(rustyline::error::ReadlineError::Interrupted) => continue,
                Err(_) => break,
            }
        }
    } else {
        let writer = std::sync::Arc::new(std::sync::Mutex::new(writer));
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            if !line.trim().is_empty() && send_line(&writer, &line, &done)?.is_none() {
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// The next line from the program; `None` once the connection has closed
/// (or carried a record that fails its check).
fn next_line(stream: &mut TcpStream, lines: &mut Lines) -> Option<Vec<u8>> {
    loop {
        match lines.next_line() {
            Ok(Some(line)) => return Some(line),
            Ok(None) => {}
            Err(e) => {
                eprintln!("synodic: console connection: {e}");
                return None;
            }
        }
        let space = lines.space();
        let start = space.len();
        space.resize(start + (64 << 10), 0);
        let n = stream.read(&mut space[start..]).unwrap_or(0);
        space.truncate(start + n);
        if n == 0 {
            return None;
        }
    }
}

/// The console's side of the connection that it writes: lines, sealed.
struct Writer {
    stream: TcpStream,
    sealer: Sealer,
}

impl Writer {
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        let mut sealed = Vec::new();
        self.sealer.seal(format!("{line}\n").as_bytes(), &mut sealed).map_err(std::io::Error::other)?;
        self.stream.write_all(&sealed)
    }
}

/// Sends one line and waits until the program has run it: whether the
/// statement goes on (the agent waits for more), or `None` when the
/// program went away.
fn send_line(writer: &std::sync::Mutex<Writer>, line: &str, done: &mpsc::Receiver<Event>) -> Result<Option<bool>> {
    if writer.lock().unwrap_or_else(|e| e.into_inner()).line(line).is_err() {
        // The reader sees the same closed connection: let it say so before
        // the console exits, so the user always learns why.
        while let Ok(Event::Done | Event::More) = done.recv() {}
        return Ok(None);
    }
    Ok(match done.recv() {
        Ok(Event::Done) => Some(false),
        Ok(Event::More) => Some(true),
        _ => None,
    })
}

/// Ctrl-C while a line runs (the terminal is not in line editing then, so
/// it is a signal) stops that line at the program, not this console.
fn interrupt_on_ctrl_c(writer: std::sync::Arc<std::sync::Mutex<Writer>>) {
    // SAFETY: plain libc calls on this thread's signal mask, before the
    // thread below starts (it inherits the mask); sigwait takes the signal
    // there, so no handler runs.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let _ = std::thread::Builder::new().name("console-ctrl-c".into()).spawn(move || loop {
            let mut sig = 0;
            if libc::sigwait(&set, &mut sig) == 0 {
                let _ = writer.lock().unwrap_or_else(|e| e.into_inner()).line("\x03");
            }
        });
    }
}
