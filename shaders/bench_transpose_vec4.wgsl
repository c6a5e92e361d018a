// Benchmark baseline for parts through views: the plain transpose an engine runs after a
// split, [B, S, H, D] into [B, H, S_dst, D] from sequence position `pos` on, one vec4 of D per
// invocation (D a multiple of 16 bytes), 256 invocations per workgroup, 2-D grid.

struct Shape {
    seq: u32,
    heads: u32,
    row_vec4s: u32,
    dst_seq: u32,
    pos: u32,
    total: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> shape: Shape;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * num_wg.x + wg.x) * 256u + lid;
    if (i >= shape.total) {
        return;
    }
    let d = i % shape.row_vec4s;
    let row = i / shape.row_vec4s;
    let h = row % shape.heads;
    let s = (row / shape.heads) % shape.seq;
    let b = row / shape.heads / shape.seq;
    dst[((b * shape.heads + h) * shape.dst_seq + shape.pos + s) * shape.row_vec4s + d] = src[i];
}
