//! The adapters the GPU tests run on, and what the tests share.
//!
//! [`per_backend!`] stamps out one test per CI adapter (`NAME::vulkan`, `NAME::gl`), so a
//! failure names its backend. Each must find its adapter: a missing one fails the test, it is
//! never skipped. On a machine without one of them, leave its tests out by name, for example
//! `cargo test --release -- --skip ::gl`; cargo then counts them as filtered out.
#![allow(dead_code, unused_macros)]

pub mod concat;
pub mod views;

use std::sync::OnceLock;
use wgpu_split::{BackendChoice, BufferRegion, GpuSplitter, HostTensor, Outputs};

/// A small deterministic generator (xorshift64*) for the random sweeps.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 where `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The splitter of `choice`'s adapter, opened once per test binary.
pub fn gpu(choice: BackendChoice) -> &'static GpuSplitter {
    static VULKAN: OnceLock<GpuSplitter> = OnceLock::new();
    static GL: OnceLock<GpuSplitter> = OnceLock::new();
    let cell = match choice {
        BackendChoice::Vulkan => &VULKAN,
        BackendChoice::Gl => &GL,
        other => panic!("the tests run on Vulkan and GL, not {other:?}"),
    };
    cell.get_or_init(|| {
        let gpu = GpuSplitter::open(choice)
            .unwrap_or_else(|e| panic!("the {choice:?} adapter must open for this test: {e}"));
        // A test named after a backend runs on that backend, never on another.
        let backend = gpu.device().adapter_info().backend;
        assert_eq!(BackendChoice::from_backend(backend), choice, "{backend:?}");
        gpu
    })
}

/// A splitter on a second device of `gpu`'s adapter, opened with the limits `limits` makes
/// of the adapter's.
pub fn with_limits(
    gpu: &GpuSplitter,
    limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits,
) -> GpuSplitter {
    let backends = wgpu::Backends::from(gpu.device().adapter_info().backend);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: limits(adapter.limits()),
        ..Default::default()
    }))
    .unwrap();
    GpuSplitter::new(device, queue).unwrap()
}

/// `gpu` with the gather alone in each lane mapping: a run per lane (of 128 units, and of 3,
/// so runs start inside entries), and consecutive lanes (the lanes GPUs take) at 4 and 1
/// steps per lane; each named after the adapter and the mapping.
pub fn lane_mappings(gpu: &GpuSplitter) -> Vec<(String, GpuSplitter)> {
    use wgpu_split::GatherMode;
    gather_mappings(
        gpu,
        &[
            (GatherMode::Cpu, 128),
            (GatherMode::Cpu, 3),
            (GatherMode::Gpu, 4),
            (GatherMode::Gpu, 1),
        ],
    )
}

/// `gpu` with the gather alone in each of `mappings` (a lane mapping and the most steps per
/// lane), each named after the adapter, the mapping and the steps (`vulkan Cpu x3`).
pub fn gather_mappings(
    gpu: &GpuSplitter,
    mappings: &[(wgpu_split::GatherMode, u32)],
) -> Vec<(String, GpuSplitter)> {
    use wgpu_split::{RouteChoice, SplitOptions};
    mappings
        .iter()
        .map(|&(mode, units)| {
            let variant = gpu.clone().with_options(SplitOptions {
                route: RouteChoice::Gather,
                gather_mode: Some(mode),
                max_steps_per_lane: Some(units),
                ..gpu.options()
            });
            (format!("{} {mode:?} x{units}", name(gpu)), variant)
        })
        .collect()
}

/// The cases a random GPU sweep runs where `WGPU_SPLIT_GPU_CASES` asks for a long run; None
/// where it is not set (each sweep then runs its own default).
pub fn long_run_cases() -> Option<u32> {
    let value = std::env::var("WGPU_SPLIT_GPU_CASES").ok()?;
    let cases = value
        .parse()
        .unwrap_or_else(|_| panic!("WGPU_SPLIT_GPU_CASES={value:?} is not a number of cases"));
    Some(cases)
}

/// The adapter's name and backend, for messages.
pub fn name(gpu: &GpuSplitter) -> String {
    let info = gpu.device().adapter_info();
    format!("{} ({:?})", info.name, info.backend)
}

/// Stamps out, for each named `fn(&'static GpuSplitter)`, a module of the same name with the
/// tests `vulkan` and `gl`.
macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn vulkan() {
                super::$name(crate::common::gpu(wgpu_split::BackendChoice::Vulkan))
            }
            #[test]
            fn gl() {
                let _turn = crate::common::gl_turn();
                super::$name(crate::common::gpu(wgpu_split::BackendChoice::Gl))
            }
        }
    )*};
}

/// The GL tests of one test binary take turns. wgpu's GL backend shares one context per
/// device, and a thread that waits for it longer than 6 seconds panics (gfx-rs/wgpu#5299): a
/// long dispatch of one test on a loaded machine made another's buffer drop do so.
pub fn gl_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// `program` as a newcomer's bare shell runs it: an environment of `PATH` and `HOME` alone
/// (as `env -i`, a container's shell or a CI step has it), so a test of the command meets what
/// such a shell meets, whatever the environment the tests run in. `WGPU_BACKEND` and the like
/// are the test's to add.
pub fn bare_shell(program: &str) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command.env_clear();
    for var in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(var) {
            command.env(var, value);
        }
    }
    command
}

/// The command's rule for stderr, which every test of it checks: nothing on success, and on a
/// failure exactly one line, `error: ` and the cause. Nothing of a driver's or a library's.
pub fn assert_stderr_is_the_commands(args: &[&str], code: i32, stderr: &str) {
    if code == 0 {
        assert_eq!(stderr, "", "{args:?} exited 0 and printed on stderr");
    } else {
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(
            lines.len() == 1 && lines[0].starts_with("error: "),
            "{args:?} exited {code}: stderr is not one error line: {stderr:?}"
        );
    }
}

/// [`per_backend!`] for tests of the command: each named `fn(&str)` gets the `--backend`
/// value (`vulkan`, `gl`).
macro_rules! per_backend_command {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn vulkan() {
                super::$name("vulkan")
            }
            #[test]
            fn gl() {
                super::$name("gl")
            }
        }
    )*};
}

/// [`GpuSplitter::run`], then the check against the CPU reference, byte for byte.
pub fn run_verified<P: wgpu_split::Plan>(
    gpu: &GpuSplitter,
    plan: &P,
    input: &P::HostInput,
) -> wgpu_split::Result<P::HostOutput> {
    let output = gpu.run(plan, input)?;
    plan.verify(input, &output)?;
    Ok(output)
}

/// Asserts that `got` equals `want` output by output: same shapes, same bytes.
pub fn assert_same_outputs(name: &str, got: &[HostTensor], want: &[HostTensor]) {
    assert_eq!(got.len(), want.len(), "{name}: output count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{name}: output {i}'s shape");
        assert_eq!(g.dtype(), w.dtype(), "{name}: output {i}'s dtype");
        if let Some(b) = g.bytes().iter().zip(w.bytes()).position(|(a, b)| a != b) {
            panic!(
                "{name}: output {i} differs at byte {b}: {:#04x}, expected {:#04x}",
                g.bytes()[b],
                w.bytes()[b]
            );
        }
    }
}

/// Splits `input` through [`GpuSplitter::encode`] on buffers of the given extra usages (STORAGE
/// is always set), then reads the outputs back: the path an inference backend takes.
pub fn encode_and_read(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
) -> (Vec<HostTensor>, wgpu_split::Encoded) {
    encode_and_read_at(gpu, plan, input, extra_usage, (0, 0))
}

/// [`encode_and_read`], through `encode_async` when `asynchronous`.
pub fn encode_and_read_with(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
    asynchronous: bool,
) -> (Vec<HostTensor>, wgpu_split::Encoded) {
    encode_and_read_inner(gpu, plan, input, extra_usage, (0, 0), asynchronous)
}

/// [`encode_and_read`] with the input and output regions at these byte offsets of their
/// buffers (multiples of the storage offset alignment); the bytes before them hold 0xA5.
pub fn encode_and_read_at(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
    offsets: (u64, u64),
) -> (Vec<HostTensor>, wgpu_split::Encoded) {
    encode_and_read_inner(gpu, plan, input, extra_usage, offsets, false)
}

fn encode_and_read_inner(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
    (in_offset, out_offset): (u64, u64),
    asynchronous: bool,
) -> (Vec<HostTensor>, wgpu_split::Encoded) {
    use wgpu::util::DeviceExt;
    let device = gpu.device();
    let mut bytes = vec![0xA5; in_offset as usize];
    bytes.extend_from_slice(input.bytes());
    bytes.resize(bytes.len().next_multiple_of(16).max(16), 0);
    let in_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &bytes,
        usage: wgpu::BufferUsages::STORAGE | extra_usage,
    });
    let layout = gpu.layout(plan, input.dtype()).unwrap();
    let out_size = out_offset + layout.total_bytes;
    let out_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &vec![0xA5; out_size as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | extra_usage,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let in_region = wgpu_split::BufferRegion {
        buffer: &in_buf,
        offset: in_offset,
    };
    let out_region = wgpu_split::BufferRegion {
        buffer: &out_buf,
        offset: out_offset,
    };
    let encoded = if asynchronous {
        pollster::block_on(gpu.encode_async(
            &mut encoder,
            plan,
            input.dtype(),
            in_region,
            Outputs::Region(out_region),
        ))
    } else {
        gpu.encode(
            &mut encoder,
            plan,
            input.dtype(),
            in_region,
            Outputs::Region(out_region),
        )
    }
    .unwrap();
    let data = submit_and_read(gpu, encoder, &out_buf);
    assert!(
        data[..out_offset as usize].iter().all(|&b| b == 0xA5),
        "bytes before the output region changed"
    );
    let outputs = encoded
        .parts
        .parts_from(&data[out_offset as usize..], plan, input.dtype())
        .unwrap();
    (outputs, encoded)
}

/// Submits `encoder` with a copy of all of `buffer` (usage COPY_SRC) into a readback buffer
/// after its commands, waits, and returns the bytes.
pub fn submit_and_read(
    gpu: &GpuSplitter,
    mut encoder: wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
) -> Vec<u8> {
    let device = gpu.device();
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, buffer.size());
    gpu.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    readback.get_mapped_range(..).unwrap().to_vec()
}

/// The region at each place (index into `buffers`, offset) of a test's parts.
pub fn regions_at<'a>(
    buffers: &'a [wgpu::Buffer],
    places: &[(usize, u64)],
) -> Vec<BufferRegion<'a>> {
    places
        .iter()
        .map(|&(b, offset)| BufferRegion {
            buffer: &buffers[b],
            offset,
        })
        .collect()
}
