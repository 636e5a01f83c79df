//! `--log-level` and `--log-format` (SPEC §8, §11): the node's log, set
//! before anything runs, and passed on to the nodes a run starts.

use synodic_core::log::{self, Level};

#[derive(clap::Args, Clone, Default)]
pub struct Logging {
    /// Records below this level are dropped: debug, info, warn, error or
    /// none (crash reports of processes are errors).
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    log_level: Option<Level>,
    /// How records are written to standard error: text, or json (one
    /// object a line, with the fields time, level, node, pid, msg and, for
    /// a crash, traceback).
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    log_format: Option<String>,
}

fn parse_level(name: &str) -> Result<Level, String> {
    Level::parse(name).ok_or_else(|| format!("'{name}' is not a log level (debug, info, warn, error or none)"))
}

impl Logging {
    /// Sets this node's log.
    pub fn apply(&self) {
        if let Some(level) = self.log_level {
            log::set_level(level);
        }
        log::set_json(self.log_format.as_deref() == Some("json"));
    }

    /// The same options, for the command line of a node this one starts.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(level) = self.log_level {
            args.extend(["--log-level".into(), level.name().into()]);
        }
        if let Some(format) = &self.log_format {
            args.extend(["--log-format".into(), format.clone()]);
        }
        args
    }
}
