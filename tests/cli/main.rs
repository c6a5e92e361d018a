//! The built `wgpu-split` binary: the demo and adapter choice here; `bench`, round trips
//! through `run`, and every error path in the modules below.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod bench;
mod concat;
mod errors;
mod gather;
mod pipelines;
mod run;

use std::path::Path;
use wgpu_split::{npy, HostTensor};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn wgpu_split(args: &[&str]) -> Out {
    wgpu_split_with(args, &[])
}

/// [`wgpu_split`] with these environment variables set, in a bare shell otherwise
/// ([`common::bare_shell`]).
fn wgpu_split_with(args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = common::bare_shell(env!("CARGO_BIN_EXE_wgpu-split"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    };
    common::assert_stderr_is_the_commands(args, out.code, &out.stderr);
    out
}

/// `wgpu-split run --op OP --input INPUT --out OUT ARGS...`.
fn run_op(op: &str, input: &str, out: &str, args: &[&str]) -> Out {
    let mut full = vec!["run", "--op", op, "--input", input, "--out", out];
    full.extend(args);
    wgpu_split(&full)
}

fn save(dir: &Path, name: &str, t: &HostTensor) -> String {
    let p = dir.join(name);
    npy::write(&p, t).unwrap();
    p.display().to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn demo_runs_every_spec_example_and_matches(backend: &str) {
    let out = wgpu_split(&[&format!("--backend={backend}")]);
    assert_eq!(out.code, 0, "{backend}: {}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("all outputs equal the CPU reference"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("[6, 4, 10, 24]") && out.stdout.contains("keepdims 0"));
    assert!(!out.stdout.contains(" NO"));
}

/// Each adapter `info` lists on `backend`, whatever the machine has, is picked by its number
/// within the backend, by part of its name in any case, and through wgpu's own variables; a
/// name or number that matches none exits 3.
fn adapters_are_picked_by_index_name_and_wgpu_variables(backend: &str) {
    let out = wgpu_split(&["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let adapters = v["adapters"].as_array().unwrap();
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"], i);
    }
    let names: Vec<&str> = adapters
        .iter()
        .filter(|a| a["backend"] == backend)
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(!names.is_empty(), "no {backend} adapter in {v}");
    // The demo's first line names the adapter it runs on: "NAME (Backend, type)".
    let shown = |name: &str| {
        let mut b = backend.chars();
        let b: String = b
            .next()
            .into_iter()
            .flat_map(char::to_uppercase)
            .chain(b)
            .collect();
        format!("{name} ({b}, ")
    };
    let flag = format!("--backend={backend}");
    for (k, name) in names.iter().enumerate() {
        let out = wgpu_split(&[&flag, &format!("--adapter={k}")]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(&shown(name)), "{k}: {}", out.stdout);
        // Part of the name (all but its last character), in capitals.
        let part: String = name.chars().take(name.chars().count().max(2) - 1).collect();
        let out = wgpu_split(&[&flag, &format!("--adapter={}", part.to_uppercase())]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(&shown(name)), "{part}: {}", out.stdout);
        let out = wgpu_split_with(
            &[],
            &[
                ("WGPU_BACKEND", backend),
                ("WGPU_ADAPTER_NAME", &name.to_lowercase()),
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(&shown(name)), "{name}: {}", out.stdout);
    }
    let out = wgpu_split_with(&[], &[("WGPU_BACKEND", backend)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(&shown("")[1..]), "{}", out.stdout);
    // No such adapter: exit 3, one line naming what was asked for and what there is.
    let past = format!("--adapter={}", names.len());
    for args in [&[&flag, "--adapter=no-such-gpu"][..], &[&flag, &past]] {
        let out = wgpu_split(args);
        assert_eq!(out.code, 3, "{}", out.stderr);
        assert!(out.stderr.contains("the adapters are"), "{}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    let out = wgpu_split_with(
        &[],
        &[
            ("WGPU_BACKEND", backend),
            ("WGPU_ADAPTER_NAME", "no-such-gpu"),
        ],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("no-such-gpu"), "{}", out.stderr);
}

/// A newcomer's bare shell (no display, no session, nothing exported): `info` prints its table
/// and nothing on stderr, and an adapter that is not there gives one line, the command's own.
/// The helper checks that rule for every command; this test names it.
#[test]
fn a_bare_shell_sees_nothing_on_stderr_but_the_commands_error() {
    let out = wgpu_split(&["info"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(out.stdout.starts_with("[0] "), "{}", out.stdout);
    let out = wgpu_split(&["--adapter=no-such-gpu"]);
    assert_eq!(out.code, 3);
    assert!(
        out.stderr
            .starts_with("error: no GPU adapter: no adapter named like \"no-such-gpu\""),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn info_lists_adapters_and_limits() {
    let out = wgpu_split(&["info", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let adapters = v["adapters"].as_array().unwrap();
    assert!(!adapters.is_empty());
    assert!(
        adapters[0]["limits"]["max_storage_buffer_binding_size"]
            .as_u64()
            .unwrap()
            > 0
    );
}

per_backend_command!(
    demo_runs_every_spec_example_and_matches,
    adapters_are_picked_by_index_name_and_wgpu_variables,
);
