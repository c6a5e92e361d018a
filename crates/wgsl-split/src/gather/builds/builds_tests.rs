//! Each build binds what it says where `builds` says, validates, and records only in the
//! trace build.

use super::*;
use crate::gather::abi::{MAX_DST_BINDINGS, MAX_SRC_BINDINGS};

fn module(source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source).expect("the build parses");
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .expect("the build validates");
    module
}

/// `(name, binding)` of each storage variable whose name starts with `prefix`, by binding.
fn bound(module: &naga::Module, prefix: &str) -> Vec<(String, u32)> {
    let mut dst: Vec<(String, u32)> = module
        .global_variables
        .iter()
        .filter_map(|(_, v)| {
            let name = v.name.clone()?;
            let binding = v.binding.as_ref()?.binding;
            name.starts_with(prefix).then_some((name, binding))
        })
        .collect();
    dst.sort_by_key(|d| d.1);
    dst
}

/// [`bound`] of the outputs.
fn outputs(module: &naga::Module) -> Vec<(String, u32)> {
    bound(module, "dst")
}

#[test]
fn a_window_binds_an_even_number_of_units_then_its_tail() {
    // At an alignment of 256: 1,000 bytes are 768 as units (48) and 232 as the tail; under
    // 256, all tail; a multiple of 256, no tail. At 16 (or 4), the step is 32.
    assert_eq!(tail_start(1000, 256), 768);
    assert_eq!(tail_start(252, 256), 0);
    assert_eq!(tail_start(512, 256), 512);
    assert_eq!(tail_start(1000, 16), 992);
    assert_eq!(tail_start(20, 16), 0);
    for (size, align) in [(4, 16), (48, 16), (4096, 64), (68, 4)] {
        let units = tail_start(size, align);
        assert!(units <= size && units.is_multiple_of(align) && (units / 16).is_multiple_of(2));
    }
}

#[test]
fn each_build_binds_its_outputs() {
    let units_and_tail = module(shader_source());
    assert_eq!(
        outputs(&units_and_tail),
        [("dst0".to_string(), 3), ("dst_tail0".to_string(), 4)]
    );
    for bindings in [1, 2, MAX_DST_BINDINGS] {
        let source = gather_source(
            InputBindings::ONE,
            OutputBindings::Units(bindings),
            Hook::Silent,
            Bodies::Narrow,
        )
        .unwrap();
        let units = (0..bindings).map(|j| (format!("dst{j}"), 3 + j));
        let tails = (0..bindings).map(|j| (format!("dst_tail{j}"), 3 + bindings + j));
        let want: Vec<(String, u32)> = units.chain(tails).collect();
        assert_eq!(outputs(&module(&source)), want);
    }
    let words = gather_source(
        InputBindings::ONE,
        OutputBindings::WordsOnly,
        Hook::Silent,
        Bodies::None,
    )
    .unwrap();
    let words = module(&words);
    assert_eq!(outputs(&words), [("dst_words".to_string(), 3)]);
    let storage = words
        .global_variables
        .iter()
        .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
        .count();
    assert_eq!(storage, 4, "the words build fits downlevel devices");
    for bad in [0, MAX_DST_BINDINGS + 1] {
        let err = gather_source(
            InputBindings::ONE,
            OutputBindings::Units(bad),
            Hook::Silent,
            Bodies::None,
        )
        .unwrap_err();
        assert!(err.to_string().contains(&bad.to_string()), "{err}");
    }
}

#[test]
fn the_recording_hook_adds_its_buffer_at_its_binding() {
    let source = gather_source(
        InputBindings::ONE,
        OutputBindings::Units(1),
        Hook::Recording,
        Bodies::None,
    )
    .unwrap();
    let traced = module(&source);
    let trace = traced
        .global_variables
        .iter()
        .find(|(_, v)| v.name.as_deref() == Some("trace_out"))
        .expect("the trace buffer")
        .1;
    assert_eq!(trace.binding.as_ref().map(|b| b.binding), Some(5));
    assert!(module(shader_source())
        .global_variables
        .iter()
        .all(|(_, v)| v.name.as_deref() != Some("trace_out")));
}

#[test]
fn each_build_binds_its_inputs_before_its_outputs() {
    let one = module(shader_source());
    assert_eq!(
        bound(&one, "src"),
        [("src0".to_string(), 1), ("src4_0".to_string(), 2)]
    );
    for (n, outputs_kind) in [
        (1, OutputBindings::Units(1)),
        (3, OutputBindings::Units(1)),
        (MAX_SRC_BINDINGS, OutputBindings::Units(1)),
        (3, OutputBindings::WordsOnly),
    ] {
        let source =
            gather_source(InputBindings(n), outputs_kind, Hook::Silent, Bodies::Wide).unwrap();
        let built = module(&source);
        let words = (0..n).map(|j| (format!("src{j}"), 1 + j));
        let vec4s = (0..n).map(|j| (format!("src4_{j}"), 1 + n + j));
        let want: Vec<(String, u32)> = words.chain(vec4s).collect();
        assert_eq!(bound(&built, "src"), want);
        // The outputs follow the inputs.
        let first = outputs(&built)[0].1;
        assert_eq!(first, 1 + 2 * n, "{outputs_kind:?}");
        let storage = built
            .global_variables
            .iter()
            .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
            .count() as u32;
        assert_eq!(storage, 1 + 2 * n + outputs_kind.count_and_views().1);
    }
    for bad in [0, MAX_SRC_BINDINGS + 1] {
        let err = gather_source(
            InputBindings(bad),
            OutputBindings::Units(1),
            Hook::Silent,
            Bodies::None,
        )
        .unwrap_err();
        assert!(err.to_string().contains(&bad.to_string()), "{err}");
    }
}

#[test]
fn every_build_declares_its_slots_and_nothing_else() {
    // The declarations come from the one list of slots: as many storage variables, at
    // bindings 0 .. n, read-only exactly where the slot is not written.
    for (inputs, outputs, hook) in [
        (InputBindings::ONE, OutputBindings::Units(1), Hook::Silent),
        (InputBindings::ONE, OutputBindings::WordsOnly, Hook::Silent),
        (InputBindings(3), OutputBindings::Units(1), Hook::Silent),
        (
            InputBindings::ONE,
            OutputBindings::Units(4),
            Hook::Recording,
        ),
    ] {
        let want = slots(inputs, outputs, None, hook == Hook::Recording);
        let built = module(&gather_source(inputs, outputs, hook, Bodies::Narrow).unwrap());
        let mut got: Vec<(u32, bool)> = built
            .global_variables
            .iter()
            .filter_map(|(_, v)| match v.space {
                naga::AddressSpace::Storage { access } => Some((
                    v.binding.as_ref()?.binding,
                    access.contains(naga::StorageAccess::STORE),
                )),
                _ => None,
            })
            .collect();
        got.sort();
        let want: Vec<(u32, bool)> = (0..).zip(want.iter().map(|s| s.writable())).collect();
        assert_eq!(got, want, "{inputs:?} {outputs:?} {hook:?}");
    }
}

#[test]
fn each_build_holds_its_channels_bodies() {
    // The build without channels holds none of their functions; the narrow and the wide
    // ones a body for each count of parts of their band, the last the default.
    let (one, units) = (InputBindings::ONE, OutputBindings::Units(1));
    let functions = |bodies| {
        let source = gather_source(one, units, Hook::Silent, bodies).unwrap();
        let built = module(&source);
        let names: Vec<String> = built
            .functions
            .iter()
            .filter_map(|(_, f)| f.name.clone())
            .collect();
        (source, names)
    };
    // Each build's schedules: the channels alone, or the rows' runs or lanes and the join's
    // units (the lanes here); no pipeline reaches the other's code.
    let (none, names) = functions(Bodies::None);
    assert!(none.contains("lanes(block, lane, VEC4_ONLY);"));
    assert!(!none.contains("runs(block, lane, VEC4_ONLY);"));
    assert!(none.contains("join_runs_block(p, h, block, lane);"));
    assert!(!names.iter().any(|n| n == "join_channels"));
    assert!(!names
        .iter()
        .any(|n| n.starts_with("channel_") || n.ends_with("channels_of")));
    assert!(!none.contains("CHANNEL_ROWS"));
    for (bodies, cases, default) in [
        (Bodies::Narrow, &[2, 3][..], 4),
        (Bodies::Wide, &[5, 6, 7][..], 8),
    ] {
        let (source, names) = functions(bodies);
        assert!(names.iter().any(|n| n == "join_channels_of"), "{bodies:?}");
        assert!(source.contains("    channels(block, lane);"));
        assert!(source.contains("return join_channel_lanes("));
        assert!(!source.contains("runs(block, lane, VEC4_ONLY);"));
        assert!(!source.contains("join_runs_block(p, h, block, lane);"));
        for c in cases {
            assert!(source.contains(&format!(
                "case {c}u: {{ left = channels_of(p, block, lane, {c}u); }}"
            )));
            assert!(source.contains(&format!(
                "case {c}u: {{ left = join_channels_of(p, h, s, block, lane, {c}u); }}"
            )));
        }
        assert!(source.contains(&format!(
            "default: {{ left = channels_of(p, block, lane, {default}u); }}"
        )));
        assert!(source.contains(&format!(
            "default: {{ left = join_channels_of(p, h, s, block, lane, {default}u); }}"
        )));
        assert!(
            !source.contains(&format!("case {default}u: {{ left")),
            "{bodies:?}"
        );
    }
}
