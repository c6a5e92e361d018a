// Benchmark baseline: the plain device copy kernel a split is measured against.
// 256 invocations per workgroup, 2-D grid for large copies. Each invocation copies UNITS
// vec4<u32>, a workgroup's width apart, so a workgroup copies 256 * UNITS consecutive units:
// 1 is the plainest copy; more keep more loads in flight on a GPU.
// Its accesses go through the same trace hook as the gather's, `trace(kind, address, size)`,
// which the host appends (src/gpu/gather/builds.rs), so the memory trace measures both the
// same way.

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

override UNITS: u32 = 1u;

const TRACE_SRC: u32 = 1u;
const TRACE_DST: u32 = 2u;

var<private> trace_lane: u32;
var<private> trace_block: u32;
var<private> trace_seq: u32;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wg.y * num_wg.x + wg.x;
    trace_lane = lid;
    trace_block = block;
    trace_seq = 0u;
    let first = block * 256u * UNITS + lid;
    for (var k = 0u; k < UNITS; k++) {
        let i = first + k * 256u;
        if (i < arrayLength(&dst)) {
            trace(TRACE_SRC, i * 16u, 16u);
            let v = src[i];
            trace(TRACE_DST, i * 16u, 16u);
            dst[i] = v;
        }
    }
}
