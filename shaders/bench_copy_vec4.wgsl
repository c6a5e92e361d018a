// Benchmark baseline: the plain device copy kernel a split is measured against.
// One vec4<u32> per invocation, 256 invocations per workgroup, 2-D grid for large copies.

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * num_wg.x + wg.x) * 256u + lid;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
