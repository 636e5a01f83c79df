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
    dashboard: "dashboard.md",
}

/// The editor annotations (`types/`, LuaLS `---@meta` files, one per
/// module) describe every function and field each `synodic` module
/// exports: a module that grows one they lack fails here.
#[test]
fn the_editor_annotations_describe_every_export() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut stubs = Vec::new();
    for entry in std::fs::read_dir(root.join("types")).unwrap() {
        let path = entry.unwrap().path();
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(&format!("---@meta {module}\n")), "{}: starts with ---@meta {module}", path.display());
        stubs.push((module, text));
    }
    let list: Vec<String> = stubs.iter().map(|(m, _)| format!("{m:?}")).collect();
    let dir = scratch_dir("stubs");
    let script = dir.join("exports.lua");
    std::fs::write(
        &script,
        format!(
            "for _, m in ipairs{{{}}} do\n\
               for k, v in pairs(require(m)) do\n\
                 if type(k) == 'string' and k:sub(1, 1) ~= '_' then print(m, k, type(v)) end\n\
               end\n\
             end\n",
            list.join(", ")
        ),
    )
    .unwrap();
    let out = synodic(&["run", script.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut missing = Vec::new();
    let exports = text(&out.stdout);
    for line in exports.lines() {
        let mut f = line.split('\t');
        let (module, name, kind) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let stub = &stubs.iter().find(|(m, _)| m == module).unwrap().1;
        let described = match kind {
            "function" => stub.lines().any(|l| l.starts_with("function ") && l.contains(&format!(".{name}("))),
            _ => stub.contains(&format!("---@field {name} ")),
        };
        if !described {
            missing.push(format!("{module}.{name} ({kind})"));
        }
    }
    assert!(exports.lines().count() > 100, "the modules' exports are listed: {exports}");
    assert!(missing.is_empty(), "not described in types/: {missing:?}");
}
