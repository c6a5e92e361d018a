//! The WGSL shaders parse, validate and translate with naga to SPIR-V (Vulkan), MSL (Metal),
//! HLSL (DX12) and GLSL (GL), so they are known to compile for all four even where only the
//! Vulkan and GL adapters exist.

use naga::back::{glsl, hlsl, msl, spv};
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

fn parse(name: &str, source: &str) -> (naga::Module, ModuleInfo) {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
    // No optional capabilities: the shader must need none (no f16, no i64).
    let info = Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    (module, info)
}

/// Override constants, by name.
type Constants = naga::back::PipelineConstants;

/// The gather's override constants of a build in the lane mapping of runs (`runs`) or not
/// (those of each [`ProgramKey`](crate::gather::abi::ProgramKey) its pipelines take).
fn gather_constants(runs: bool) -> Vec<Constants> {
    let channels = crate::gather::abi::Channels::of(3, 1, 3);
    let wide = crate::gather::abi::Channels::of(32, 4, 8);
    [(runs, None), (runs, channels), (runs, wide)]
        .into_iter()
        .map(|(lanes_in_runs, channels)| {
            let key = crate::gather::abi::ProgramKey {
                entry: crate::gather::abi::EntryPoint::Rows,
                lanes_in_runs,
                channels,
            };
            key.constants().map(|(k, v)| (k.to_string(), v)).into()
        })
        .collect()
}

/// Translates `source` to every backend's language, once per set of override constants in
/// `constants` where it has overrides; it has the entry points `entries`.
fn translate_everywhere(name: &str, source: &str, entries: &[&str], constants: &[Constants]) {
    let (module, info) = parse(name, source);
    let names: Vec<&str> = module
        .entry_points
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, entries, "{name}");
    if module.overrides.is_empty() {
        return translate_resolved(name, &module, &info, entries);
    }
    for constants in constants {
        let (module, info) =
            naga::back::pipeline_constants::process_overrides(&module, &info, None, constants)
                .unwrap_or_else(|e| panic!("{name} with {constants:?}: {e}"));
        let name = format!("{name} with {constants:?}");
        translate_resolved(&name, &module, &info, entries);
    }
}

/// [`translate_everywhere`] for a module whose override constants are resolved.
fn translate_resolved(name: &str, module: &naga::Module, info: &ModuleInfo, entries: &[&str]) {
    let words = spv::write_vec(module, info, &spv::Options::default(), None)
        .unwrap_or_else(|e| panic!("{name} SPIR-V: {e}"));
    assert_eq!(words[0], 0x0723_0203, "{name}: SPIR-V magic number");

    let (metal, _) = msl::write_string(
        module,
        info,
        &msl::Options::default(),
        &msl::PipelineOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{name} MSL: {e}"));
    assert!(metal.contains("kernel void"), "{name}: no Metal kernel");

    let mut hlsl_text = String::new();
    hlsl::Writer::new(
        &mut hlsl_text,
        &hlsl::Options::default(),
        &hlsl::PipelineOptions::default(),
    )
    .write(module, info, None)
    .unwrap_or_else(|e| panic!("{name} HLSL: {e}"));
    assert!(
        hlsl_text.contains("[numthreads("),
        "{name}: no HLSL compute entry"
    );

    // GLSL takes one entry point per program.
    for entry in entries {
        let mut glsl_text = String::new();
        let options = glsl::Options {
            version: glsl::Version::new_gles(310),
            ..Default::default()
        };
        let pipeline = glsl::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: entry.to_string(),
            multiview: None,
        };
        glsl::Writer::new(
            &mut glsl_text,
            module,
            info,
            &options,
            &pipeline,
            Default::default(),
        )
        .and_then(|mut w| w.write())
        .unwrap_or_else(|e| panic!("{name} GLSL {entry}: {e}"));
        assert!(
            glsl_text.contains("layout(local_size_x"),
            "{name}: no GLSL compute layout for {entry}"
        );
    }
}

/// Every entry point of the gather shader.
fn gather_entries() -> Vec<&'static str> {
    crate::gather::abi::EntryPoint::STAMPED
        .map(|(name, _)| name)
        .to_vec()
}

#[test]
fn split_shader_compiles_for_every_backend() {
    use crate::gather::abi::{MAX_DST_BINDINGS, MAX_SRC_BINDINGS};
    use crate::gather::builds::{
        Bodies, Convert, GatherSource, Hook, InputBindings, OutputBindings,
    };
    let one = InputBindings::ONE;
    let many = InputBindings(MAX_SRC_BINDINGS);
    // Every build: the outputs bound each way (the multi-output build at its most bindings),
    // the multi-input build with each single output, and the trace build, whose hook records;
    // each of the channels' bodies; the indexed build (rows placed by indices) with each
    // single output, and with each conversion of its input.
    use crate::gather::builds::ScatterStores;
    let indexed = [
        (OutputBindings::Units(1), ScatterStores::Units),
        (OutputBindings::Units(1), ScatterStores::Words),
        (OutputBindings::WordsOnly, ScatterStores::Shared),
    ]
    .map(|(outputs, stores)| (one, outputs, Hook::Silent, Bodies::None, Some(stores), None));
    // Each conversion with chunks of vec4s and of words.
    let converting = [ScatterStores::Units, ScatterStores::Shared]
        .into_iter()
        .flat_map(|stores| Convert::ALL.map(|c| (stores, c)))
        .map(|(stores, c)| {
            let (outputs, hook) = (OutputBindings::Units(1), Hook::Silent);
            (one, outputs, hook, Bodies::None, Some(stores), Some(c))
        });
    for (inputs, outputs, hook, bodies, indexed, convert) in [
        (one, OutputBindings::Units(1), Hook::Silent, Bodies::None),
        (one, OutputBindings::Units(1), Hook::Silent, Bodies::Narrow),
        (one, OutputBindings::Units(1), Hook::Silent, Bodies::Wide),
        (one, OutputBindings::WordsOnly, Hook::Silent, Bodies::Narrow),
        (
            one,
            OutputBindings::Units(MAX_DST_BINDINGS),
            Hook::Silent,
            Bodies::Wide,
        ),
        (many, OutputBindings::Units(1), Hook::Silent, Bodies::Narrow),
        (many, OutputBindings::WordsOnly, Hook::Silent, Bodies::None),
        (one, OutputBindings::Units(1), Hook::Recording, Bodies::Wide),
    ]
    .map(|(i, o, h, b)| (i, o, h, b, None, None))
    .into_iter()
    .chain(indexed)
    .chain(converting)
    {
        for runs in [false, true] {
            let source = GatherSource::new(inputs, outputs, hook, indexed, convert).unwrap();
            let source = source.with(bodies, runs);
            let name = format!(
                "split_gather.wgsl ({inputs:?}, {outputs:?}, {hook:?}, {bodies:?}, runs {runs}, \
                 indexed {indexed:?}, {convert:?})"
            );
            translate_everywhere(&name, &source, &gather_entries(), &gather_constants(runs));
        }
    }
}

#[test]
fn bench_copy_shader_compiles_for_every_backend() {
    use crate::gather::builds::{copy_kernel_source, Hook};
    for hook in [Hook::Silent, Hook::Recording] {
        let source = copy_kernel_source(hook);
        translate_everywhere(
            &format!("bench_copy_vec4.wgsl ({hook:?})"),
            &source,
            &["main"],
            &[1.0, 4.0].map(|units| [("UNITS".to_string(), units)].into()),
        );
    }
}

#[test]
fn split_shader_uses_five_bindings_in_group_0() {
    // The host's bind group layout (table, source, vec4 source, destination as units and as
    // words).
    let (module, _) = parse("split_gather.wgsl", crate::gather::builds::shader_source());
    let mut bindings: Vec<u32> = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| g.binding.as_ref())
        .inspect(|b| assert_eq!(b.group, 0))
        .map(|b| b.binding)
        .collect();
    bindings.sort_unstable();
    assert_eq!(bindings, vec![0, 1, 2, 3, 4]);
}
