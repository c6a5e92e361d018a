//! The shader's other builds, made from its text: the multi-output build (several output
//! bindings in one dispatch) and the trace build (every global access recorded). Each replaces
//! one declaration of the shader, which must appear exactly once.

use super::abi::{DST_BINDING_SHIFT, MAX_DST_BINDINGS};
use crate::error::{Result, SplitError};

/// The output binding as the shader declares it; the multi-output build replaces this line.
pub const DST_DECLARATION: &str =
    "@group(0) @binding(3) var<storage, read_write> dst: array<vec4<u32>>;";

/// The stores to it, in `store_unit` and `store_word`; the multi-output build replaces these
/// lines.
pub const DST_STORES: [&str; 2] = ["    dst[i] = v;", "    dst[i][j] = x;"];

/// The multi-output build of `source`: `bindings` output buffers at bindings 3, 4, ... of
/// group 0, the entry's binding taken from the top bits of its unit ([`DST_BINDING_SHIFT`]).
/// The rest of the shader is the same text.
pub fn multi_output_source(source: &str, bindings: u32) -> Result<String> {
    let once = |text: &str| source.matches(text).count() == 1;
    if !once(DST_DECLARATION) || !DST_STORES.iter().all(|s| once(s)) {
        return Err(SplitError::Device(
            "the shader must declare its output binding, and store units and words to it, \
             exactly once each"
                .into(),
        ));
    }
    if !(1..=MAX_DST_BINDINGS).contains(&bindings) {
        return Err(SplitError::Device(format!(
            "the multi-output build takes 1 to {MAX_DST_BINDINGS} output bindings, not {bindings}"
        )));
    }
    let declarations: String = (0..bindings)
        .map(|j| {
            format!(
                "@group(0) @binding({}) var<storage, read_write> dst{j}: array<vec4<u32>>;\n",
                3 + j
            )
        })
        .collect();
    // Each store picks its binding by the top bits of the unit `i`.
    let store = |assignment: &str| {
        let cases: String = (0..bindings)
            .map(|b| format!("        case {b}u: {{ dst{b}{assignment}; }}\n"))
            .collect();
        format!(
            "    let unit = i & {mask:#x}u;\n    switch (i >> {DST_BINDING_SHIFT}u) {{\n{cases}        default: {{}}\n    }}",
            mask = (1u32 << DST_BINDING_SHIFT) - 1
        )
    };
    Ok(source
        .replace(DST_DECLARATION, &declarations)
        .replace(DST_STORES[0], &store("[unit] = v"))
        .replace(DST_STORES[1], &store("[unit][j] = x")))
}

/// The hook as the shaders declare it; the trace build replaces this line.
pub const TRACE_HOOK: &str = "fn trace(kind: u32, address: u32, size: u32) {}";

/// The trace build of `source`: its trace hook records into a buffer at `binding` of group 0.
///
/// The buffer starts with one `vec4<u32>` header written by the host (workgroup sampling
/// stride, traced workgroups, records per lane, lanes per workgroup); the `seq`-th access of
/// lane `lane` of traced workgroup `slot` is the `vec4<u32>` (kind, address, size, n + 1) at
/// index `1 + (slot * lanes + lane) * records + seq`, where `n` counts the lane's earlier
/// accesses of the same kind. Lanes in step make their n-th load (or store) together, so `n`
/// is what groups accesses into warp instructions: lane 0's table reads do not shift its loads.
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
    use crate::gpu::gather::abi::SHADER_SOURCE;

    #[test]
    fn the_multi_output_build_binds_one_buffer_per_binding() {
        for bindings in [1, 2, MAX_DST_BINDINGS] {
            let source = multi_output_source(SHADER_SOURCE, bindings).unwrap();
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
            let want: Vec<(String, u32)> =
                (0..bindings).map(|j| (format!("dst{j}"), 3 + j)).collect();
            assert_eq!(dst, want);
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::empty(),
            )
            .validate(&module)
            .expect("the build validates");
        }
        assert!(multi_output_source(SHADER_SOURCE, 0).is_err());
        assert!(multi_output_source(SHADER_SOURCE, MAX_DST_BINDINGS + 1).is_err());
        assert!(multi_output_source("fn f() {}", 2).is_err());
    }
}
