//! Equal parts side by side joined on each adapter, byte for byte against the CPU reference:
//! parts in one segment (short rows, and parts narrower than a unit over the whole row), the
//! channels (2 to 8 parts of 1, 2 or 4 bytes) and parts of whole words (walked a word at a
//! time), in every lane mapping.

#[macro_use]
mod common;

use common::concat::parts;
use wgpu_split::{ops, DType, GatherMode, GpuSplitter};

/// The lane mappings every test here runs: lanes in turn (GPUs), and runs of three units (so
/// runs start at any column) and of many (CPU adapters).
const MAPPINGS: [(GatherMode, u32); 3] = [
    (GatherMode::Gpu, 4),
    (GatherMode::Cpu, 3),
    (GatherMode::Cpu, 2048),
];

/// Equal parts side by side (attention heads merged back, a sequence of equal rows) take one
/// segment of many parts in the GPU's mapping, and in the CPU adapters' where output rows are
/// at most a unit or the parts, each narrower than a unit, are the whole row (else one part
/// per segment there): all give the reference's bytes, at every alignment of the parts'
/// rows, with lanes' runs of 3 units starting at any column.
fn equal_parts_in_one_segment(gpu: &'static GpuSplitter) {
    for (name, gpu) in common::gather_mappings(gpu, &MAPPINGS) {
        // Rows of 3 to 16 bytes in 1 to 4 equal parts (units start at every column), then
        // longer rows of parts narrower than a unit (rows of 17 to 48 bytes).
        let short = [(1, 3), (5, 3), (2, 7), (3, 5), (4, 4), (16, 1), (7, 2)];
        let long = [(7, 5), (6, 3), (15, 3), (1, 40), (9, 2), (1, 17), (13, 3)];
        for (width, count) in short.into_iter().chain(long) {
            let plan = ops::concat(&vec![[301, width]; count], 1).unwrap();
            common::run_verified(&gpu, &plan, &parts(&plan, DType::U8))
                .unwrap_or_else(|e| panic!("{name} {width} x {count}: {e}"));
        }
        let plan = ops::concat(&[[777, 3]; 7], 1).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::F16)).unwrap();
        let plan = ops::concat(&[[8, 64]; 64], 1).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::F32)).unwrap();
        let plan = ops::concat(&[[5, 7]; 9], 1).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::U8)).unwrap();
        let plan = ops::concat(&[[3, 2, 3], [3, 2, 3], [3, 2, 5], [3, 2, 3]], 2).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::F16)).unwrap();
    }
}

/// Equal parts of rows of up to 16 bytes, which join as channels where they are 2 to 8
/// parts of 1, 2 or 4 bytes: every row length and every part width that divides it, with row
/// counts around a group of 16 rows (the last group part full, the output ending mid-unit),
/// in runs of three groups and of many, and in lanes; and parts of f16 and i16 elements.
fn equal_short_parts_as_channels(gpu: &'static GpuSplitter) {
    for (name, gpu) in common::gather_mappings(gpu, &MAPPINGS) {
        for stride in 2..=16usize {
            for width in (1..stride).filter(|w| stride % w == 0) {
                for rows in [15, 16, 17, 333] {
                    let plan = ops::concat(&vec![[rows, width]; stride / width], 1).unwrap();
                    common::run_verified(&gpu, &plan, &parts(&plan, DType::U8)).unwrap_or_else(
                        |e| panic!("{name} {rows} rows of {stride} in parts of {width}: {e}"),
                    );
                }
            }
        }
        for (dtype, count) in [(DType::F16, 3), (DType::I16, 5)] {
            let plan = ops::concat(&vec![[1001, 1]; count], 1).unwrap();
            common::run_verified(&gpu, &plan, &parts(&plan, dtype)).unwrap();
        }
    }
}

/// Equal parts of whole words side by side, the wide channels where they are 5 to 8 words
/// (f32 columns, 5 and 8 of them) and walked a word at a time where they are more than 8 or
/// wider than a word, or lie off a vec4: 17 f32 columns, f64 and complex128 columns, parts of
/// 3 f32, at row counts that end the output mid-unit or on a unit; in runs of three units and
/// of many, and in lanes.
fn equal_parts_of_whole_words(gpu: &'static GpuSplitter) {
    let cases = [
        (DType::F32, 1, 5),
        (DType::F32, 1, 6),
        (DType::F32, 1, 7),
        (DType::F32, 1, 8),
        (DType::F32, 1, 9),
        (DType::F32, 1, 17),
        (DType::F32, 3, 2),
        (DType::F32, 1, 3),
        (DType::F64, 1, 3),
        (DType::Complex128, 1, 3),
        (DType::I32, 2, 7),
    ];
    for (name, gpu) in common::gather_mappings(gpu, &MAPPINGS) {
        for (dtype, width, count) in cases {
            for rows in [1, 3, 4, 5, 333, 1024] {
                let plan = ops::concat(&vec![[rows, width]; count], 1).unwrap();
                common::run_verified(&gpu, &plan, &parts(&plan, dtype)).unwrap_or_else(|e| {
                    panic!("{name} {rows} rows of {count} {dtype:?} x {width}: {e}")
                });
            }
        }
    }
}

per_backend!(
    equal_parts_in_one_segment,
    equal_short_parts_as_channels,
    equal_parts_of_whole_words,
);
