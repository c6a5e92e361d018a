//! The shader's builds: the shader itself, its files followed by the entry points stamped
//! from one body ([`shader_source`]); and, made from its text, the multi-output build
//! (several output bindings in one dispatch) and the trace build (every global access
//! recorded). Each of these replaces one declaration of the shader, which must appear exactly
//! once.

use super::abi::{EntryPoint, DST_BINDING_SHIFT, GATHER_WGSL, LAYOUTS_WGSL, MAX_DST_BINDINGS};
use crate::error::{Result, SplitError};
use std::sync::OnceLock;

/// The one body every entry point is stamped from: `{name}` is the entry point's name,
/// `{size}` the shader constant of its workgroup size and `{block}` its layout's block
/// function ([`EntryPoint::block_function`]).
const ENTRY_POINT: &str = "
@compute @workgroup_size({size})
fn {name}(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    {block}(start(wg, num_wg, lane), lane);
}
";

/// The gather shader: `shaders/split_gather.wgsl`, `shaders/split_gather_layouts.wgsl`
/// (WGSL has no include), then one entry point per [`EntryPoint`], stamped from
/// [`ENTRY_POINT`]. Made once per process.
pub fn shader_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let mut source = format!("{GATHER_WGSL}\n{LAYOUTS_WGSL}\n// ---- Entry points ----\n");
        for entry in EntryPoint::ALL {
            let (block, size) = entry.block_function();
            source += &ENTRY_POINT
                .replace("{name}", entry.name())
                .replace("{size}", size)
                .replace("{block}", block);
        }
        source
    })
}

/// The output bindings as the shader declares them (its units, then its words); the
/// multi-output build replaces these lines.
pub const DST_DECLARATION: &str =
    "@group(0) @binding(3) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> dst_words: array<u32>;";

/// The accesses to them, in `store_unit`, `store_word` and `load_dst_word`; the multi-output
/// build replaces these lines.
pub const DST_ACCESSES: [&str; 3] = [
    "    dst[i] = v;",
    "    dst_words[i * 4u + j] = x;",
    "    x = dst_words[i * 4u + j];",
];

/// The multi-output build of `source`: `bindings` output buffers, each as units at binding
/// 3 + j and as words at 3 + bindings + j of group 0, the entry's binding taken from the top
/// bits of its unit ([`DST_BINDING_SHIFT`]). The rest of the shader is the same text.
pub fn multi_output_source(source: &str, bindings: u32) -> Result<String> {
    let once = |text: &str| source.matches(text).count() == 1;
    if !once(DST_DECLARATION) || !DST_ACCESSES.iter().all(|s| once(s)) {
        return Err(SplitError::Device(
            "the shader must declare its output bindings, and store units, store words and \
             load words through them, exactly once each"
                .into(),
        ));
    }
    if !(1..=MAX_DST_BINDINGS).contains(&bindings) {
        return Err(SplitError::Device(format!(
            "the multi-output build takes 1 to {MAX_DST_BINDINGS} output bindings, not {bindings}"
        )));
    }
    let units = (0..bindings).map(|j| {
        format!(
            "@group(0) @binding({}) var<storage, read_write> dst{j}: array<vec4<u32>>;\n",
            3 + j
        )
    });
    let words = (0..bindings).map(|j| {
        format!(
            "@group(0) @binding({}) var<storage, read_write> dst_words{j}: array<u32>;\n",
            3 + bindings + j
        )
    });
    let declarations: String = units.chain(words).collect();
    // Each access picks its binding by the top bits of the unit `i`; `{b}` is the binding.
    let store = |access: &str| {
        let cases: String = (0..bindings)
            .map(|b| {
                let access = access.replace("{b}", &b.to_string());
                format!("        case {b}u: {{ {access}; }}\n")
            })
            .collect();
        format!(
            "    let unit = i & {mask:#x}u;\n    switch (i >> {DST_BINDING_SHIFT}u) {{\n{cases}        default: {{}}\n    }}",
            mask = (1u32 << DST_BINDING_SHIFT) - 1
        )
    };
    Ok(source
        .replace(DST_DECLARATION, &declarations)
        .replace(DST_ACCESSES[0], &store("dst{b}[unit] = v"))
        .replace(DST_ACCESSES[1], &store("dst_words{b}[unit * 4u + j] = x"))
        .replace(DST_ACCESSES[2], &store("x = dst_words{b}[unit * 4u + j]")))
}

/// The words-only build of `source`, for devices that allow only 4 storage buffers per
/// shader stage (`Limits::downlevel_defaults`): the output is bound once, as words, at
/// binding 3, and a whole unit is stored as its four words. The same bytes; each lane's
/// store of a unit becomes four narrower ones.
pub fn words_only_source(source: &str) -> Result<String> {
    let once = |text: &str| source.matches(text).count() == 1;
    if !once(DST_DECLARATION) || !once(DST_ACCESSES[0]) {
        return Err(SplitError::Device(
            "the shader must declare its output bindings and store units exactly once".into(),
        ));
    }
    Ok(source
        .replace(
            DST_DECLARATION,
            "@group(0) @binding(3) var<storage, read_write> dst_words: array<u32>;",
        )
        .replace(
            DST_ACCESSES[0],
            "    dst_words[i * 4u] = v.x;\n    dst_words[i * 4u + 1u] = v.y;\n    \
             dst_words[i * 4u + 2u] = v.z;\n    dst_words[i * 4u + 3u] = v.w;",
        ))
}

/// The hook as the shaders declare it; the trace build replaces this line.
#[cfg(feature = "bench")]
pub const TRACE_HOOK: &str = "fn trace(kind: u32, address: u32, size: u32) {}";

/// The trace build of `source`: its trace hook records into a buffer at `binding` of group 0.
///
/// The buffer starts with one `vec4<u32>` header written by the host (workgroup sampling
/// stride, traced workgroups, records per lane, lanes per workgroup); the `seq`-th access of
/// lane `lane` of traced workgroup `slot` is the `vec4<u32>` (kind, address, size, n + 1) at
/// index `1 + (slot * lanes + lane) * records + seq`, where `n` counts the lane's earlier
/// accesses of the same kind. Lanes in step make their n-th load (or store) together, so `n`
/// is what groups accesses into warp instructions: lane 0's table reads do not shift its loads.
#[cfg(feature = "bench")]
pub fn traced_source(source: &str, binding: u32) -> Result<String> {
    if source.matches(TRACE_HOOK).count() != 1 {
        return Err(SplitError::Device(
            "the shader must declare the trace hook exactly once".into(),
        ));
    }
    let body = format!(
        "@group(0) @binding({binding}) var<storage, read_write> trace_out: array<vec4<u32>>;
var<private> trace_kind_seq: array<u32, 3>;

fn trace(kind: u32, address: u32, size: u32) {{
    let seq = trace_seq;
    trace_seq = seq + 1u;
    let n = trace_kind_seq[kind];
    trace_kind_seq[kind] = n + 1u;
    let cfg = trace_out[0];
    let slot = trace_block / cfg.x;
    if (trace_block % cfg.x != 0u || slot >= cfg.y || seq >= cfg.z) {{
        return;
    }}
    trace_out[1u + (slot * cfg.w + trace_lane) * cfg.z + seq] = vec4<u32>(kind, address, size, n + 1u);
}}"
    );
    Ok(source.replace(TRACE_HOOK, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multi_output_build_binds_one_buffer_per_binding() {
        for bindings in [1, 2, MAX_DST_BINDINGS] {
            let source = multi_output_source(shader_source(), bindings).unwrap();
            let module = naga::front::wgsl::parse_str(&source).expect("the build parses");
            let mut dst: Vec<(String, u32)> = module
                .global_variables
                .iter()
                .filter_map(|(_, v)| {
                    let name = v.name.clone()?;
                    let binding = v.binding.as_ref()?.binding;
                    name.starts_with("dst").then_some((name, binding))
                })
                .collect();
            dst.sort_by_key(|d| d.1);
            let units = (0..bindings).map(|j| (format!("dst{j}"), 3 + j));
            let words = (0..bindings).map(|j| (format!("dst_words{j}"), 3 + bindings + j));
            let want: Vec<(String, u32)> = units.chain(words).collect();
            assert_eq!(dst, want);
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::empty(),
            )
            .validate(&module)
            .expect("the build validates");
        }
        let words = words_only_source(shader_source()).unwrap();
        let module = naga::front::wgsl::parse_str(&words).expect("the words build parses");
        let storage = module
            .global_variables
            .iter()
            .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
            .count();
        assert_eq!(storage, 4, "the words build fits downlevel devices");
        assert!(multi_output_source(shader_source(), 0).is_err());
        assert!(multi_output_source(shader_source(), MAX_DST_BINDINGS + 1).is_err());
        assert!(multi_output_source("fn f() {}", 2).is_err());
    }
}
