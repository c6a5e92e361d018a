//! The golden test: what reaches the GPU, frozen for every bench case (the suite's and the
//! rows') on three sets of limits (lavapipe's, the H200's of `../shared/gpu/`, and WebGPU's
//! defaults). For each case prepared as the bench prepares it, on wgpu's no-op device
//! reporting those limits and that device type: each command in order; a dispatch's program
//! (its module's WGSL, by hash, its entry point and override constants), its grid, its
//! dynamic offsets, its table (header, length and hash; small tables byte for byte) and each
//! binding's window; a copy command's buffers and ranges. The files are `tests/golden/`.
//!
//! A change to any of it is a deliberate update, with its A/B (`scripts/ab.sh`) and the GPU
//! evidence for it: `GOLDEN_UPDATE=1 cargo test --release golden` writes the files anew. A
//! mismatch writes what the tree gives beside the build (`target/golden/`) to diff.

use super::rows_buffers::RowsCaseBuffers;
use super::{rows_suite, standard_suite, CaseBuffers};
use crate::gpu::gather::pipeline::golden::{Binding, Bound};
use crate::gpu::prepared::Commands;
use crate::gpu::splitter::gather_defaults;
use crate::GpuSplitter;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A device the cases are planned for: its type (which picks the lane mapping and whether
/// copy commands may replace the gather) and its limits.
struct Persona {
    name: &'static str,
    device_type: wgpu::DeviceType,
    limits: wgpu::Limits,
}

/// The three sets of limits: those the library reads, as each adapter reports them
/// (`wgpu-split info`, and the dynamic storage buffers a pipeline layout takes); the rest
/// WebGPU's defaults.
fn personas() -> [Persona; 3] {
    let reported = |buffer, storage, buffers, dynamic, align| wgpu::Limits {
        max_buffer_size: buffer,
        max_compute_invocations_per_workgroup: 1024,
        max_compute_workgroups_per_dimension: 65535,
        max_storage_buffer_binding_size: storage,
        max_storage_buffers_per_shader_stage: buffers,
        max_dynamic_storage_buffers_per_pipeline_layout: dynamic,
        min_storage_buffer_offset_alignment: align,
        ..wgpu::Limits::default()
    };
    [
        // llvmpipe (LLVM 15.0.6) through lavapipe, Mesa 22.3.6.
        Persona {
            name: "lavapipe",
            device_type: wgpu::DeviceType::Cpu,
            limits: reported(2147483647, 134217728, 32, 32, 32),
        },
        // ../shared/gpu/h200-2026-11-27/info.log, the Vulkan adapter; its 16 dynamic storage
        // buffers (NVIDIA's Vulkan driver) bound the three outputs of `qkv_heads` in the one
        // dispatch that run counted.
        Persona {
            name: "h200",
            device_type: wgpu::DeviceType::DiscreteGpu,
            limits: reported(4292870144, 2147483644, 524288, 16, 32),
        },
        // What a browser's WebGPU device gives without asking for more.
        Persona {
            name: "webgpu",
            device_type: wgpu::DeviceType::Other,
            limits: wgpu::Limits::default(),
        },
    ]
}

/// A splitter on wgpu's no-op device reporting `persona`'s type and limits.
fn splitter(persona: &Persona) -> GpuSplitter {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::NOOP,
        backend_options: wgpu::BackendOptions {
            noop: wgpu::NoopBackendOptions {
                limits: Some(persona.limits.clone()),
                device_type: Some(persona.device_type),
                ..wgpu::NoopBackendOptions::enabled()
            },
            ..Default::default()
        },
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("the no-op adapter");
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: persona.limits.clone(),
        ..Default::default()
    }))
    .expect("the no-op device");
    let mut gpu = GpuSplitter::new(device, queue).expect("a splitter on the no-op device");
    // The no-op adapter reports a CPU whatever its options say (wgpu-hal 30): the type is
    // set here, as `GpuSplitter::new` sets what it picks.
    gpu.info.device_type = persona.device_type;
    gpu.gather_tuning = gather_defaults(persona.device_type);
    gpu
}

/// FNV-1a, 64 bits: a stable hash of bytes.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Tables up to this many bytes are written out whole.
const WHOLE_TABLE: usize = 256;

/// Writes what each command hands the device.
struct Writer {
    out: String,
    /// Each module's WGSL, by its hash.
    modules: BTreeMap<u64, String>,
    /// The case's buffers, named.
    names: Vec<(String, wgpu::Buffer)>,
}

impl Writer {
    fn name(&self, buffer: &wgpu::Buffer) -> &str {
        let found = self.names.iter().find(|(_, b)| b == buffer);
        found.map_or("(a buffer of the library's)", |(n, _)| n)
    }

    fn dispatch(&mut self, program: &impl std::fmt::Display, offsets: &[u32], d: &Bound) {
        let wgsl = d.wgsl();
        let module = fnv(wgsl.as_bytes());
        self.modules.entry(module).or_insert(wgsl);
        let constants: Vec<String> = d
            .constants
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let o = &mut self.out;
        let _ = writeln!(
            o,
            "  dispatch {program}: grid {:?}, dynamic offsets {offsets:?}",
            d.grid
        );
        let _ = writeln!(
            o,
            "    module {module:016x} {} {}",
            d.entry,
            constants.join(" ")
        );
        let header: &crate::gpu::gather::abi::Params =
            bytemuck::from_bytes(&d.table[..crate::gpu::gather::abi::HEADER_BYTES as usize]);
        let _ = writeln!(o, "    {header:?}");
        let _ = write!(
            o,
            "    table {} bytes, fnv {:016x}",
            d.table.len(),
            fnv(&d.table)
        );
        if d.table.len() <= WHOLE_TABLE {
            let words: Vec<String> = d
                .table
                .chunks(4)
                .map(|w| w.iter().rev().map(|b| format!("{b:02x}")).collect())
                .collect();
            let _ = write!(o, ": {}", words.join(" "));
        }
        let _ = writeln!(o);
        for (k, b) in d.bindings.iter().enumerate() {
            let line = match b {
                Binding::Table => "table".to_string(),
                Binding::StandIn => "stand-in".to_string(),
                Binding::Window {
                    buffer,
                    offset,
                    size,
                } => format!("{} from {offset}, {size:?} bytes", self.name(buffer)),
            };
            let _ = writeln!(self.out, "    binding {k}: {line}");
        }
    }

    fn commands(&mut self, commands: &[Commands]) {
        for c in commands {
            match c {
                Commands::BufferCopies {
                    input,
                    output,
                    copies,
                } => {
                    let (from, to) = (self.name(input).to_string(), self.name(output).to_string());
                    let _ = writeln!(self.out, "  {} copies {from} -> {to}", copies.len());
                    for c in copies {
                        let _ = writeln!(self.out, "    {} -> {}, {} bytes", c.src, c.dst, c.size);
                    }
                }
                Commands::Gather(bound) => {
                    for b in bound {
                        self.dispatch(&b.program, b.offsets(), &b.golden);
                    }
                }
            }
        }
    }
}

/// What reaches the device for every bench case, planned for `persona`, and each module's
/// WGSL by its hash.
fn record(persona: &Persona) -> (String, BTreeMap<u64, String>) {
    let gpu = splitter(persona);
    let l = &persona.limits;
    let reported = crate::gpu::device::limits_of(&persona.limits);
    assert_eq!(gpu.limits, reported, "the no-op device's limits");
    let mut w = Writer {
        out: format!(
            "# {}: {:?}; {} storage buffers a stage, bindings of {} bytes, offsets at {}\n",
            persona.name,
            persona.device_type,
            l.max_storage_buffers_per_shader_stage,
            l.max_storage_buffer_binding_size,
            l.min_storage_buffer_offset_alignment,
        ),
        modules: BTreeMap::new(),
        names: Vec::new(),
    };
    for case in standard_suite() {
        let buffers = CaseBuffers::new(&gpu, &case).expect("the case's buffers");
        let _ = writeln!(
            w.out,
            "\n{} ({} {:?})",
            case.name,
            case.op_name(),
            case.shape
        );
        let prepared = match buffers.prepare(&gpu, &case) {
            Ok(prepared) => prepared,
            Err(refused) => {
                let _ = writeln!(w.out, "  refused: {refused}");
                continue;
            }
        };
        let mut names = vec![
            ("input".to_string(), buffers.input.clone()),
            ("output".to_string(), buffers.output.clone()),
        ];
        for (k, b) in buffers.views.iter().flat_map(|v| &v.buffers).enumerate() {
            names.push((format!("part {k}"), b.clone()));
        }
        w.names = names;
        w.commands(&prepared.commands);
    }
    for case in rows_suite() {
        let buffers = RowsCaseBuffers::new(&gpu, &case).expect("the case's buffers");
        let _ = writeln!(w.out, "\n{} (rows)", case.name);
        let prepared = match buffers.prepare(&gpu, &case) {
            Ok(prepared) => prepared,
            Err(refused) => {
                let _ = writeln!(w.out, "  refused: {refused}");
                continue;
            }
        };
        w.names = buffers
            .named
            .iter()
            .map(|(n, b)| (n.to_string(), b.clone()))
            .collect();
        for commands in &prepared.commands {
            if let Commands::Gather(bound) = commands {
                for b in bound {
                    w.dispatch(&b.program, b.offsets(), &b.golden);
                }
            }
        }
    }
    let _ = writeln!(w.out, "\nmodules (WGSL hash: lines)");
    for (hash, wgsl) in &w.modules {
        let _ = writeln!(w.out, "  {hash:016x}: {}", wgsl.lines().count());
    }
    (w.out, w.modules)
}

#[test]
fn what_reaches_the_gpu_is_frozen_for_every_bench_case() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("GOLDEN_UPDATE").is_some_and(|v| v == "1");
    let mut changed = Vec::new();
    for persona in personas() {
        let (got, modules) = record(&persona);
        let file = root
            .join("tests/golden")
            .join(format!("{}.txt", persona.name));
        if update {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (GOLDEN_UPDATE=1 writes it)", file.display()));
        if got != want {
            let line = got.lines().zip(want.lines()).position(|(a, b)| a != b);
            let line = line.unwrap_or(got.lines().count().min(want.lines().count()));
            let actual = root
                .join("target/golden")
                .join(format!("{}.txt", persona.name));
            std::fs::create_dir_all(actual.parent().unwrap()).unwrap();
            std::fs::write(&actual, &got).unwrap();
            // Each module's WGSL beside it, by its hash, to diff against another tree's.
            for (hash, wgsl) in modules {
                std::fs::write(actual.with_file_name(format!("{hash:016x}.wgsl")), wgsl).unwrap();
            }
            changed.push(format!(
                "{}: line {} differs ({} now)",
                file.display(),
                line + 1,
                actual.display()
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "what reaches the GPU changed; a deliberate change updates the files with \
         GOLDEN_UPDATE=1, its A/B and its GPU evidence:\n{}",
        changed.join("\n")
    );
}
