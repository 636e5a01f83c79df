//! The ALua paper's applications (examples/nbody; bench/alua-apps measures
//! them against MPI): the Barnes-Hut kernel is right (with an opening angle
//! of 0 its forces are a direct sum's to 1e-12 relative; with 0.5 close to
//! it), and the Synodic program's bodies after 20 iterations on 2 nodes
//! are the MPI program's (same kernel, 2 ranks) to 1e-9 relative; the
//! volume visualization gives the same picture, byte for byte, from both
//! programs, for every partition and distribution.
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

/// Builds an application's module and its MPI program into `dir`:
/// examples/APP/APP.c and APP_mpi.c, each with the kernel `kernel`.
fn build_app(dir: &Path, app: &str, kernel: &str) {
    let src = root().join("examples").join(app);
    build_app_module(app, kernel, &dir.join(format!("{app}.so")));
    let status = Command::new(need("mpicc", "libopenmpi-dev"))
        .arg("-O2")
        .arg(src.join(format!("{app}_mpi.c")))
        .arg(src.join(kernel))
        .arg("-o")
        .arg(dir.join(format!("{app}_mpi")))
        .arg("-lm")
        .status()
        .expect("run mpicc");
    assert!(status.success(), "mpicc examples/{app}/{app}_mpi.c");
}

fn build(dir: &Path) {
    build_app(dir, "nbody", "bh.c");
}

fn mpirun(np: &str) -> Command {
    let mut cmd = Command::new(need("mpirun", "openmpi-bin"));
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").args(["--oversubscribe", "-np", np]);
    cmd
}

#[test]
fn synodic_and_mpi_render_the_same_picture() {
    let dir = scratch_dir("volume-vs-mpi");
    build_app(&dir, "volume", "vr.c");
    let cookie = cookie_in(&dir, "cookie", "a cookie for the volume test");
    let program = root().join("examples/volume/volume.lua");
    for partition in ["pixel", "scanline", "block"] {
        for distribution in ["static", "dynamic"] {
            let (ours, theirs) = (dir.join(format!("{partition}-{distribution}.png")), dir.join(format!("{partition}-{distribution}-mpi.png")));
            let args: Vec<&std::ffi::OsStr> = vec![
                "run".as_ref(), "--nodes".as_ref(), "3".as_ref(), "--cookie-file".as_ref(), cookie.as_os_str(), program.as_os_str(),
                partition.as_ref(), distribution.as_ref(), "40".as_ref(), "24".as_ref(), ours.as_os_str(),
            ];
            let out = synodic_in(&dir, &args);
            let printed = text(&out.stdout);
            assert!(out.status.success(), "{partition} {distribution}: {}", text(&out.stderr));
            assert!(printed.starts_with(&format!("volume: {partition} {distribution}, 40x40, 2 workers: ")), "{printed}");
            let mut mpi = mpirun("3");
            mpi.arg(dir.join("volume_mpi")).args([partition, distribution, "40", "24"]).arg(&theirs);
            let out = output_within(mpi, LIMIT, "mpirun -np 3 volume_mpi");
            assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
            let (a, b) = (std::fs::read(&ours).unwrap(), std::fs::read(&theirs).unwrap());
            assert!(a.starts_with(b"\x89PNG\r\n\x1a\n") && a.len() > 40 * 40 * 3, "{partition} {distribution}: a PNG");
            assert!(a == b, "{partition} {distribution}: the pictures differ");
            let checksum = |t: &str| t.rsplit("checksum ").next().unwrap_or_default().trim().to_string();
            assert_eq!(checksum(&printed), checksum(&text(&out.stdout)), "{partition} {distribution}");
        }
    }
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

    let mut mpi = mpirun("2");
    mpi.arg(dir.join("nbody_mpi")).args(["256", "20", "0.5"]).arg(&theirs);
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
    let mut mpi = mpirun("1");
    mpi.arg(dir.join("nbody_mpi")).args(["256", "0", "0.5"]).arg(&path);
    let out = output_within(mpi, LIMIT, "mpirun -np 1 nbody_mpi (initial)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::read_to_string(&path).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect()
}
