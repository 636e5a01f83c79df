//! The ALua paper's applications (examples/nbody; bench/alua-apps measures
//! them against MPI): the Barnes-Hut kernel is right (with an opening angle
//! of 0 its forces are a direct sum's to 1e-12 relative; with 0.5 close to
//! it), and the Synodic program's bodies after 20 iterations on 2 nodes
//! are the MPI program's (same kernel, 2 ranks) to 1e-9 relative.
//!
//! Needs a C compiler and OpenMPI's mpicc and mpirun (Debian's
//! libopenmpi-dev and openmpi-bin; scripts/test installs them).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn need(program: &str, package: &str) -> PathBuf {
    let found = ["/usr/bin", "/usr/local/bin"].iter().map(|d| Path::new(d).join(program)).find(|p| p.exists());
    found.unwrap_or_else(|| panic!("{program} is missing: install the Debian package {package} (scripts/test does)"))
}

/// Builds the N-body module and the MPI program into `dir`.
fn build(dir: &Path) {
    let nbody = root().join("examples/nbody");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(root().join("vendor/lua-5.4.8"))
        .arg("-I")
        .arg(root().join("include"))
        .arg(nbody.join("nbody.c"))
        .arg(nbody.join("bh.c"))
        .arg("-o")
        .arg(dir.join("nbody.so"))
        .arg("-lm")
        .status()
        .expect("run cc");
    assert!(status.success(), "cc examples/nbody/nbody.c");
    let status = Command::new(need("mpicc", "libopenmpi-dev"))
        .arg("-O2")
        .arg(nbody.join("nbody_mpi.c"))
        .arg(nbody.join("bh.c"))
        .arg("-o")
        .arg(dir.join("nbody_mpi"))
        .arg("-lm")
        .status()
        .expect("run mpicc");
    assert!(status.success(), "mpicc examples/nbody/nbody_mpi.c");
}

fn synodic_in(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut cmd = synodic_command();
    cmd.args(args).env("LUA_CPATH_5_4", format!("{}/?.so;;", dir.display()));
    output_within(cmd, LIMIT, "synodic run (nbody)")
}

#[test]
fn barnes_hut_forces_are_a_direct_sums() {
    let dir = scratch_dir("nbody-forces");
    build(&dir);
    let script = dir.join("forces.lua");
    std::fs::write(
        &script,
        r#"local nbody = require "nbody"
local n = 300
local all = nbody.init(n, 7)
local direct = nbody.direct(all, 0, n)
local function worst(acc)
  local worst = 0
  for i = 0, n - 1 do
    local ax, ay, az = nbody.get(acc, i, 3)
    local dx, dy, dz = nbody.get(direct, i, 3)
    local norm = math.sqrt(dx * dx + dy * dy + dz * dz)
    local err = math.sqrt((ax - dx) ^ 2 + (ay - dy) ^ 2 + (az - dz) ^ 2) / norm
    if err > worst then worst = err end
  end
  return worst
end
print(string.format("%.3e %.3e", worst(nbody.accelerations(all, 0, n, 0)), worst(nbody.accelerations(all, 0, n, 0.5))))
"#,
    )
    .unwrap();
    let out = synodic_in(&dir, &["run".as_ref(), script.as_os_str()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let errs: Vec<f64> = printed.split_whitespace().map(|t| t.parse().unwrap()).collect();
    assert!(errs[0] <= 1e-12, "opening angle 0: relative error {} against the direct sum", errs[0]);
    assert!(errs[1] <= 2e-2 && errs[1] > errs[0], "opening angle 0.5: relative error {}", errs[1]);
}

#[test]
fn synodic_and_mpi_move_the_bodies_alike() {
    let dir = scratch_dir("nbody-vs-mpi");
    build(&dir);
    let cookie = cookie_in(&dir, "cookie", "a cookie for the nbody test");
    let (ours, theirs) = (dir.join("synodic.txt"), dir.join("mpi.txt"));
    let program = root().join("examples/nbody/nbody.lua");
    let args: Vec<&std::ffi::OsStr> =
        vec!["run".as_ref(), "--nodes".as_ref(), "2".as_ref(), "--cookie-file".as_ref(), cookie.as_os_str(), program.as_os_str(), "256".as_ref(), "20".as_ref(), "0.5".as_ref(), ours.as_os_str()];
    let out = synodic_in(&dir, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("nbody: 256 bodies, 20 iterations, 2 nodes: "), "{}", text(&out.stdout));

    let mut mpi = Command::new(need("mpirun", "openmpi-bin"));
    mpi.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").args(["--oversubscribe", "-np", "2"]).arg(dir.join("nbody_mpi")).args(["256", "20", "0.5"]).arg(&theirs);
    let out = output_within(mpi, LIMIT, "mpirun -np 2 nbody_mpi");
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));

    let read = |p: &Path| -> Vec<f64> { std::fs::read_to_string(p).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect() };
    let (a, b) = (read(&ours), read(&theirs));
    assert_eq!(a.len(), 256 * 3);
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f64, |m, x| m.max(x.abs()));
    let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs() / scale).fold(0f64, f64::max);
    assert!(worst <= 1e-9, "positions differ from MPI's by {worst:e} (relative)");
    let moved = a.iter().zip(read_initial(&dir).iter()).any(|(x, y)| (x - y).abs() > 1e-6);
    assert!(moved, "the bodies moved in 20 iterations");
}

/// The bodies before any iteration (0 iterations of the MPI program).
fn read_initial(dir: &Path) -> Vec<f64> {
    let path = dir.join("initial.txt");
    let mut mpi = Command::new(need("mpirun", "openmpi-bin"));
    mpi.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").args(["--oversubscribe", "-np", "1"]).arg(dir.join("nbody_mpi")).args(["256", "0", "0.5"]).arg(&path);
    let out = output_within(mpi, LIMIT, "mpirun -np 1 nbody_mpi (initial)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::read_to_string(&path).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect()
}
