//! The table, modes, schedules and entry points of `abi.rs`, checked against the WGSL as
//! naga parses it.

use super::*;
use naga::{Expression, Literal, Module, TypeInner};
use std::mem::{offset_of, size_of};

fn module() -> Module {
    naga::front::wgsl::parse_str(super::super::builds::shader_source()).expect("the shader parses")
}

/// `(name, offset)` of each member of the WGSL struct `name`, and its size.
fn wgsl_struct(module: &Module, name: &str) -> (Vec<(String, u32)>, u32) {
    let ty = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("struct {name} in the shader"))
        .1;
    let TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{name} is a struct");
    };
    let members = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (members, *span)
}

fn wgsl_u32_constant(module: &Module, name: &str) -> u32 {
    let c = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("constant {name} in the shader"))
        .1;
    match module.global_expressions[c.init] {
        Expression::Literal(Literal::U32(v)) => v,
        ref other => panic!("{name} is {other:?}, not a u32 literal"),
    }
}

/// `(name, offset)` of each named field of `$ty`.
macro_rules! fields {
    ($ty:ty; $($f:ident),*) => {
        vec![$((stringify!($f).to_string(), offset_of!($ty, $f) as u32)),*]
    };
}

#[test]
fn the_table_records_match_the_shader_structs() {
    let module = module();
    let records = [
        (
            "Params",
            fields!(Params; num_blocks, num_entries, steps_per_lane, num_lanes,
                interleaved),
            size_of::<Params>(),
            "HEADER_BYTES",
        ),
        (
            "Entry",
            fields!(Entry; block_start, dst_unit, first_byte, out_bytes, row_bytes, src_stride,
                src_offset, mode, dst_stride, skip, binding),
            size_of::<Entry>(),
            "ENTRY_WORDS",
        ),
        (
            "JoinHeader",
            fields!(JoinHeader; first_unit, units, row_bytes, end_byte, band_units, band_first,
                band_width, repeat_blocks, repeat_src, repeat_units, binding, repeat_binding),
            size_of::<JoinHeader>(),
            "JOIN_HEADER_WORDS",
        ),
        (
            "Segment",
            fields!(Segment; first_byte, row_bytes, src_offset, binding, count, part_step),
            size_of::<Segment>(),
            "SEGMENT_WORDS",
        ),
    ];
    for (name, rust, size, constant) in records {
        // The shader's readers build each record from its words in order: the same fields
        // in the same order, all u32, is the same layout.
        assert_eq!(wgsl_struct(&module, name), (rust, size as u32), "{name}");
        let words = wgsl_u32_constant(&module, constant);
        let bytes = if constant.ends_with("_BYTES") {
            words
        } else {
            4 * words
        };
        assert_eq!(bytes as usize, size, "{constant}");
    }
}

#[test]
fn no_build_has_workgroup_memory() {
    // No program stages bytes or hands values over through workgroup memory, so none has a
    // barrier (the GPU evidence: docs/performance.md): every build, the trace build
    // included.
    use super::super::builds::{gather_source, Bodies, Hook, InputBindings, OutputBindings};
    let (inputs, outputs) = (InputBindings(2), OutputBindings::Units(2));
    let trace = gather_source(inputs, outputs, Hook::Recording, Bodies::Wide).unwrap();
    let trace = naga::front::wgsl::parse_str(&trace).expect("the trace build parses");
    for build in [module(), trace] {
        let shared: Vec<_> = build
            .global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .map(|(_, g)| g.name.clone())
            .collect();
        assert!(shared.is_empty(), "{shared:?}");
    }
}

#[test]
fn modes_workgroup_size_and_units_match_the_shader() {
    let module = module();
    for (name, mode) in [
        ("MODE_VEC4", Mode::Vec4),
        ("MODE_WORD", Mode::Word),
        ("MODE_BYTE", Mode::Byte),
    ] {
        assert_eq!(wgsl_u32_constant(&module, name), mode as u32, "{name}");
    }
    assert_eq!(
        wgsl_u32_constant(&module, "HEADER_BYTES") as u64,
        HEADER_BYTES
    );
    let names: Vec<&str> = module
        .entry_points
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, EntryPoint::STAMPED.map(|(name, _)| name));
    // Every entry point's workgroup size is the override constant, whose default is the
    // lanes' size.
    let size = module
        .overrides
        .iter()
        .find(|(_, o)| o.name.as_deref() == Some("WORKGROUP_SIZE"))
        .expect("override WORKGROUP_SIZE")
        .1;
    let default = size.init.map(|i| &module.global_expressions[i]);
    assert!(
        matches!(default, Some(Expression::Literal(Literal::U32(v))) if *v as u64 == WORKGROUP_SIZE),
        "{default:?}"
    );
    for e in &module.entry_points {
        assert!(e.workgroup_size_overrides.is_some(), "{}", e.name);
    }
    // `dst0` is an array of vec4<u32>: one unit per element.
    let dst = module
        .global_variables
        .iter()
        .find(|(_, v)| v.name.as_deref() == Some("dst0"))
        .expect("dst0 binding")
        .1;
    let TypeInner::Array { stride, .. } = module.types[dst.ty].inner else {
        panic!("dst is an array");
    };
    assert_eq!(stride as u64, UNIT_BYTES);
}

#[test]
fn aligned_rows_take_the_vec4_program_and_every_key_its_own_place() {
    let entry = |mode: Mode| Entry {
        mode: mode as u32,
        ..bytemuck::Zeroable::zeroed()
    };
    let (vec4, word, byte) = (entry(Mode::Vec4), entry(Mode::Word), entry(Mode::Byte));
    for runs in [true, false] {
        let rows = |entries: &[Entry]| ProgramKey::rows(entries, runs).entry;
        assert_eq!(rows(&[vec4, vec4]), EntryPoint::RowsVec4);
        assert_eq!(rows(&[vec4, word]), EntryPoint::Rows);
        assert_eq!(rows(&[byte]), EntryPoint::Rows);
    }
    // Every key has a place of its own, and the lane mapping sets the workgroup size.
    let mut places: Vec<usize> = EntryPoint::ALL
        .into_iter()
        .flat_map(|entry| {
            [false, true].map(|lanes_in_runs| ProgramKey {
                entry,
                lanes_in_runs,
                channels: None,
            })
        })
        .chain(
            [EntryPoint::Rows, EntryPoint::Join]
                .into_iter()
                .flat_map(|entry| {
                    [false, true].into_iter().flat_map(move |lanes_in_runs| {
                        Channels::ALL.map(|c| ProgramKey {
                            entry,
                            lanes_in_runs,
                            channels: Some(c),
                        })
                    })
                }),
        )
        .map(ProgramKey::index)
        .collect();
    places.sort();
    assert_eq!(places, (0..ProgramKey::COUNT).collect::<Vec<_>>());
    // Issue #62's bound on the programs a device may compile.
    const { assert!(ProgramKey::COUNT <= 32) };
    assert_eq!(
        ProgramKey::rows(&[vec4], true).constants(),
        [
            ("LANES_IN_RUNS", 1.0),
            ("WORKGROUP_SIZE", 64.0),
            ("CHANNEL_WIDTH", 0.0),
            ("VEC4_ONLY", 1.0)
        ]
    );
    assert_eq!(
        ProgramKey::rows(&[vec4], true).to_string(),
        "main_rows vec4 runs"
    );
    let wide = ProgramKey {
        entry: EntryPoint::Join,
        lanes_in_runs: false,
        channels: Channels::of(32, 4, 8),
    };
    assert_eq!(
        wide.constants(),
        [
            ("LANES_IN_RUNS", 0.0),
            ("WORKGROUP_SIZE", 256.0),
            ("CHANNEL_WIDTH", 4.0),
            ("VEC4_ONLY", 0.0)
        ]
    );
    assert_eq!(wide.to_string(), "main_join lanes channels w4 wide");
}
