// The first `n` bytes of `v` stored from byte `at` of `dst_scatter` on: a chunk of whole
// words at a word as its four words, else each word it meets with the bytes it has there
// (`store_merged`), so every other byte keeps its value whatever the order of the lanes.
fn scatter_bytes(at: u32, v: vec4<u32>, n: u32) {
    let d = at % 4u;
    if (d == 0u && n == 16u) {
        let w = at / 4u;
        store_merged(w, v.x, 0xffffffffu);
        store_merged(w + 1u, v.y, 0xffffffffu);
        store_merged(w + 2u, v.z, 0xffffffffu);
        store_merged(w + 3u, v.w, 0xffffffffu);
        return;
    }
    let r = d * 8u;
    // The 20 bytes `d` zeros ++ v, as five words (a shift by 32 would wrap: d = 0 apart).
    var z = array<u32, 5>(v.x, v.y, v.z, v.w, 0u);
    if (d > 0u) {
        z = array<u32, 5>(v.x << r, (v.x >> (32u - r)) | (v.y << r), (v.y >> (32u - r)) | (v.z << r), (v.z >> (32u - r)) | (v.w << r), v.w >> (32u - r));
    }
    let words = (d + n + 3u) / 4u;
    for (var j = 0u; j < words; j++) {
        let lo = clamp(d, 4u * j, 4u * j + 4u) - 4u * j;
        let hi = clamp(d + n, 4u * j, 4u * j + 4u) - 4u * j;
        let below_hi = select((1u << (hi * 8u)) - 1u, 0xffffffffu, hi >= 4u);
        let below_lo = select((1u << (lo * 8u)) - 1u, 0xffffffffu, lo >= 4u);
        store_merged(at / 4u + j, z[j], below_hi & ~below_lo);
    }
}
