//! Every Lua program of every guide under `docs/` runs to its end, as the
//! guide shows it, from the repository's root: a guide that drifts from
//! the code fails here. A program whose first line is `-- synodic-args:
//! ...` runs with those flags (`--nodes 3`); a block that is only a piece
//! of a program is fenced as `lua fragment` and not run.

mod common;

use std::path::Path;

use common::*;

fn run_guide(name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let guide = std::fs::read_to_string(root.join("docs").join(name)).unwrap();
    let programs: Vec<&str> = guide.split("\n```lua\n").skip(1).map(|b| b.split("\n```").next().unwrap()).collect();
    let dir = scratch_dir(&format!("guide-{name}"));
    let cookie = cookie_in(&dir, "cookie", "a cookie for the guides' programs");
    for (i, program) in programs.iter().enumerate() {
        let path = dir.join(format!("program{i}.lua"));
        std::fs::write(&path, program).unwrap();
        let flags: Vec<&str> = program.lines().next().and_then(|l| l.strip_prefix("-- synodic-args:")).map(|f| f.split_whitespace().collect()).unwrap_or_default();
        let mut cmd = synodic_command();
        cmd.arg("run").args(&flags).arg("--cookie-file").arg(&cookie).arg(&path).current_dir(&root);
        let out = output_with_input(cmd, None, LIMIT, &format!("docs/{name} program {i}"));
        assert!(out.status.success(), "docs/{name}, program {i} (block {} of the guide) failed:\n{program}\n--- stderr:\n{}", i + 1, text(&out.stderr));
    }
}

macro_rules! guides {
    ($($test:ident: $file:literal),* $(,)?) => {
        $(#[test] fn $test() { run_guide($file) })*
    };
}

guides! {
    agents: "agents.md",
    channels: "channels.md",
    cluster: "cluster.md",
    entities: "entities.md",
    linda: "linda.md",
    net: "net.md",
    processes: "processes.md",
    skeletons: "skeletons.md",
    supervision: "supervision.md",
}
