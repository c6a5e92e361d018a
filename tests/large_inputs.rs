//! Inputs bigger than memory or the device through the command: refused from the header
//! alone, or streamed in bounded memory, and a failure mid-way leaves DIR as it was.
//!
//! Each command's peak resident memory is its own, read from `wait4` when it ends (not
//! `getrusage(RUSAGE_CHILDREN)`, the largest of every child the test binary has waited for).

#[macro_use]
mod common;

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use wgpu_split::bench::run_reference_stream;
use wgpu_split::{npy, ops, DType, IntTensor, OutputSink, SplitPlan};

const MIB: u64 = 1 << 20;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    /// The command's peak resident memory, in bytes.
    peak_rss: u64,
}

/// Runs the command; `limit_file_bytes` caps the size of any file it writes (RLIMIT_FSIZE,
/// with SIGXFSZ ignored so a write past it fails as on a full disk).
fn wgpu_split(args: &[&str], limit_file_bytes: Option<u64>) -> Out {
    let mut command = common::bare_shell(env!("CARGO_BIN_EXE_wgpu-split"));
    command.args(args);
    if let Some(limit) = limit_file_bytes {
        // SAFETY: between fork and exec, only async-signal-safe calls.
        unsafe {
            command.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let rlimit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Reaped by `wait4` below, which std's `Child::wait` cannot stand in for: it drops the
    // child's resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = command.spawn().expect("the binary runs");
    // Both pipes drain while the command runs, so a full pipe never stalls it.
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let (code, peak_rss) = wait_with_peak_rss(child.id());
    let out = Out {
        code,
        stdout: stdout.join().expect("stdout read"),
        stderr: stderr.join().expect("stderr read"),
        peak_rss,
    };
    common::assert_stderr_is_the_commands(args, out.code, &out.stderr);
    out
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).expect("the pipe reads");
        String::from_utf8_lossy(&bytes).into()
    })
}

/// Waits for the child `pid` and returns its exit code (-1 when a signal ended it) and its own
/// peak resident memory in bytes: `wait4` reports the child it reaps, and no other.
fn wait_with_peak_rss(pid: u32) -> (i32, u64) {
    let pid = pid as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills in the status and rusage it is given, for
    // `pid`, a child of this process that nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        match unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } {
            waited if waited == pid => break,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => panic!("wait4 {pid}: {}", std::io::Error::last_os_error()),
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage.ru_maxrss as u64 * 1024)
}

/// `wgpu-split run --input INPUT --out OUT ARGS...`, as [`wgpu_split`] runs it.
fn split_file(input: &Path, out: &Path, args: &[&str], limit_file_bytes: Option<u64>) -> Out {
    let (input, out) = (s(input), s(out));
    let mut full = vec!["run", "--input", &input, "--out", &out];
    full.extend(args);
    wgpu_split(&full, limit_file_bytes)
}

/// The stderr lines of the command, every one of them.
fn error_lines(out: &Out) -> Vec<&str> {
    out.stderr.lines().collect()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Writes a `.npy` header for `shape` of `dtype`, then `data_bytes` of a byte pattern that
/// differs at every offset modulo 251, or a hole (`sparse`: no disk is used).
fn write_npy(path: &Path, dtype: DType, shape: &[usize], sparse: bool) {
    let header = npy::header_bytes(dtype, shape).unwrap();
    let data = shape.iter().product::<usize>() as u64 * dtype.size() as u64;
    let mut file = File::create(path).unwrap();
    file.write_all(&header).unwrap();
    if sparse {
        file.set_len(header.len() as u64 + data).unwrap();
        return;
    }
    let block: Vec<u8> = (0..MIB as usize)
        .map(|i| ((i * 7 + 13) % 251) as u8)
        .collect();
    let mut left = data;
    while left > 0 {
        let n = left.min(MIB);
        file.write_all(&block[..n as usize]).unwrap();
        left -= n;
    }
}

/// Compares what the CPU reference streams out with the output files, window by window.
struct CompareWithFiles {
    files: Vec<BufReader<File>>,
    buffer: Vec<u8>,
}

impl OutputSink for CompareWithFiles {
    fn write(&mut self, output: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.buffer.resize(bytes.len(), 0);
        self.files[output].read_exact(&mut self.buffer)?;
        if self.buffer != bytes {
            return Err(std::io::Error::other(format!("output {output} differs")));
        }
        Ok(())
    }
}

/// Checks the output files in DIR against the CPU reference split of `input`, streamed: the
/// test holds a window at a time, never a whole file.
fn check_outputs_streamed(input: &Path, plan: &SplitPlan, dir: &Path) {
    let (header, data) = npy::open(input).unwrap();
    let mut files = Vec::new();
    for i in 0..plan.num_parts() {
        let path = dir.join(format!("output_{i}.npy"));
        let mut file = BufReader::new(File::open(&path).unwrap());
        let out = npy::Header::read(&mut file, &s(&path)).unwrap();
        assert_eq!(out.shape, plan.part_shape(i));
        assert_eq!(out.dtype, header.dtype);
        files.push(file);
    }
    let mut sink = CompareWithFiles {
        files,
        buffer: Vec::new(),
    };
    run_reference_stream(plan, header.dtype, data, &mut sink, 4 * MIB).unwrap();
    for (i, f) in sink.files.iter_mut().enumerate() {
        assert_eq!(
            f.read(&mut [0u8; 1]).unwrap(),
            0,
            "output {i} has trailing bytes"
        );
    }
}

/// A 300 MiB f32 input, split on an inner axis and on axis 0 into 3: the outputs are
/// bit-exact, the split ran in several windows, and the command's peak resident memory stays
/// within 64 MiB, a fifth of the input (reading the whole file took twice the input), of what
/// the same command takes for a 192-byte input: the driver's own memory, which differs from
/// device to device (about 100 MiB on lavapipe, 210 MiB on an NVIDIA H200).
fn a_300_mib_input_streams_in_bounded_memory(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let backend_arg = format!("--backend={backend}");
    let tiny = dir.path().join("tiny.npy");
    write_npy(&tiny, DType::F32, &[3, 2, 8], false);
    let args = [
        backend_arg.as_str(),
        "--op",
        "split",
        "--axis=0",
        "--num-splits=3",
    ];
    let base = split_file(&tiny, &dir.path().join("tiny_out"), &args, None);
    assert_eq!(base.code, 0, "{backend} tiny input: {}", base.stderr);
    // Above 10 MiB, so the figure is the command's own and not a zero from a failed read.
    assert!(base.peak_rss > 10 * MIB, "{}", base.peak_rss);
    let input = dir.path().join("in.npy");
    let shape = [3, 200, 131072];
    write_npy(&input, DType::F32, &shape, false);
    let out = dir.path().join("out");
    let cases = [
        (
            vec!["--op", "onnx-split", "--axis=2", "--num-outputs=3"],
            2,
            [43691, 43691, 43690],
        ),
        (
            vec!["--op", "split", "--axis=0", "--num-splits=3"],
            0,
            [1, 1, 1],
        ),
    ];
    for (args, axis, lengths) in cases {
        let mut full = vec![backend_arg.as_str(), "--json"];
        full.extend(args.iter());
        let run = split_file(&input, &out, &full, None);
        assert_eq!(run.code, 0, "{backend} {args:?}: {}", run.stderr);
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(report["verified"], true);
        assert!(report["windows"].as_u64().unwrap() > 10, "{}", run.stdout);
        for key in ["read", "plan", "split", "verify", "write", "total"] {
            assert!(
                report["timings_ms"][key].as_f64().is_some(),
                "{key}: {}",
                run.stdout
            );
        }
        let plan = SplitPlan::from_lengths(&shape, axis, &lengths, true).unwrap();
        check_outputs_streamed(&input, &plan, &out);
        assert!(
            run.peak_rss < base.peak_rss + 64 * MIB,
            "{backend} {args:?}: peak resident memory {} bytes, {} with a 192-byte input",
            run.peak_rss,
            base.peak_rss
        );
    }
}

/// Splits a sparse u8 input of `elements` (a valid header over a hole: no disk used) with
/// `args`, which must be refused: exit 2, one error line, and nothing left beside the input.
/// Returns that line and the directory that held the input.
fn refused_sparse(elements: usize, args: &[&str]) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("huge.npy");
    write_npy(&input, DType::U8, &[elements], true);
    let run = split_file(&input, &dir.path().join("out"), args, None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let lines = error_lines(&run);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert_eq!(entries(dir.path()), vec![input]);
    (lines[0].to_string(), dir)
}

/// A valid header for 1 TiB + 1 of u8, split by a rule that fails: the command exits 2 with
/// that rule's error. Reading the data would exhaust memory first.
#[test]
fn a_refused_input_is_refused_without_reading_its_data() {
    let args = ["--op", "split", "--axis=0", "--num-splits=3"];
    let (line, _dir) = refused_sparse((1 << 40) + 1, &args);
    assert_eq!(
        line,
        "error: num_splits 3 does not divide axis 0 of length 1099511627777"
    );
}

/// Outputs that cannot fit on DIR's filesystem (4 TiB here) are refused before any work, with
/// the sizes named; DIR and its parent are left as they were.
#[test]
fn outputs_that_cannot_fit_are_refused_before_any_work() {
    let args = ["--op", "split", "--axis=0", "--num-splits=2"];
    let (line, dir) = refused_sparse(1 << 42, &args);
    let need = (1u64 << 42) + 2 * npy::header_bytes(DType::U8, &[1 << 41]).unwrap().len() as u64;
    let start = format!(
        "error: the outputs need {need} bytes, but the filesystem of {} has ",
        s(dir.path())
    );
    assert!(line.starts_with(&start), "{line}");
    assert!(line.ends_with(" bytes free"), "{line}");
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
}

/// A write that fails mid-stream (each file capped at 1 MiB, as a full disk would stop it):
/// exit 2 naming the cause, the temporary directory removed, DIR as it was.
fn a_failed_write_mid_stream_leaves_dir_untouched(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input, DType::U8, &[8, MIB as usize], false);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("output_0.npy"), b"the previous run").unwrap();
    let run = split_file(
        &input,
        &out,
        &[
            "--op",
            "split",
            "--axis=1",
            "--num-splits=2",
            "--window=1M",
            &format!("--backend={backend}"),
        ],
        Some(MIB),
    );
    assert_eq!(run.code, 2, "{backend}: {}", run.stderr);
    assert_eq!(
        error_lines(&run),
        vec!["error: writing output 0: File too large (os error 27)"],
        "{backend}"
    );
    assert_eq!(
        entries(dir.path()),
        vec![input, out.clone()],
        "{backend}: a temporary directory is left"
    );
    assert_eq!(entries(&out), vec![out.join("output_0.npy")]);
    assert_eq!(
        std::fs::read(out.join("output_0.npy")).unwrap(),
        b"the previous run"
    );
}

/// `--quiet` and `--json` runs over many windows leave stderr empty and write whole outputs.
/// (The bar itself, which appears only on a terminal, is tested in `cli::progress`.)
#[test]
fn quiet_and_json_print_nothing_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input, DType::U16, &[64, 1024], false);
    for flag in ["--quiet", "--json"] {
        let out = dir.path().join(flag.trim_start_matches('-'));
        let run = split_file(
            &input,
            &out,
            &[
                "--op",
                "split",
                "--axis=1",
                "--num-splits=4",
                "--window=4K",
                flag,
            ],
            None,
        );
        assert_eq!(run.code, 0, "{flag}: {}", run.stderr);
        assert_eq!(error_lines(&run), Vec::<&str>::new(), "{flag}");
        let plan = ops::split(&[64, 1024], &IntTensor::scalar(1), 4).unwrap();
        check_outputs_streamed(&input, &plan, &out);
    }
}

/// More outputs than the command keeps open (300 here) go through files opened for each
/// window's write; every one comes out whole.
#[test]
fn many_outputs_over_many_windows() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input, DType::F32, &[40, 300], false);
    let out = dir.path().join("out");
    let run = split_file(
        &input,
        &out,
        &[
            "--op",
            "split-to-sequence",
            "--axis=1",
            "--keepdims=0",
            "--window=4K",
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["windows"], 14, "{}", run.stdout);
    let plan = SplitPlan::from_lengths(&[40, 300], 1, &[1; 300], false).unwrap();
    check_outputs_streamed(&input, &plan, &out);
}

per_backend_command!(
    a_300_mib_input_streams_in_bounded_memory,
    a_failed_write_mid_stream_leaves_dir_untouched,
);
