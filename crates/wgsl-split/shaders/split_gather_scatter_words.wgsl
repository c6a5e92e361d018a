// The indexed build's scattered chunks stored as words (`ScatterStores::Words` and
// `::Shared`, src/gpu/gather/builds.rs): each chunk's bytes shifted onto the words they meet,
// stored through the build's `store_merged` (plain, or compare-and-swap where rows share
// words).

fn scatter_chunk(at: u32, src: u32, n: u32) {
    scatter_bytes(at, load_bytes16(0u, src), n);
}

