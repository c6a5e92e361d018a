//! A lost device (what `device.destroy()` looks like to wgpu) is a [`SplitError::Device`] from
//! every entry point, never a panic, and never a silent `Ok`.

use wgpu::util::DeviceExt;
use wgpu_split::{
    ops, BackendChoice, BufferRegion, DType, GpuSplitter, HostTensor, Inputs, IntTensor, Outputs,
    SplitError, StreamOptions,
};

/// A splitter on a device of its own (the tests destroy it), with an input and an output
/// buffer for the plan of an 8 x 12 f32 tensor split in three along axis 1.
struct Fixture {
    gpu: GpuSplitter,
    plan: wgpu_split::SplitPlan,
    input: wgpu::Buffer,
    output: wgpu::Buffer,
}

fn fixture(choice: BackendChoice) -> Fixture {
    let gpu = GpuSplitter::open(choice)
        .unwrap_or_else(|e| panic!("the {choice:?} adapter must open for this test: {e}"));
    let plan = ops::split(&[8, 12], &IntTensor::scalar(1), 3).unwrap();
    let layout = gpu.layout(&plan, DType::F32).unwrap();
    let usage = wgpu::BufferUsages::STORAGE;
    let input = gpu
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("lost input"),
            contents: &[0u8; 8 * 12 * 4],
            usage,
        });
    let output = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("lost output"),
        size: layout.total_bytes,
        usage,
        mapped_at_creation: false,
    });
    Fixture {
        gpu,
        plan,
        input,
        output,
    }
}

fn region(buffer: &wgpu::Buffer) -> BufferRegion<'_> {
    BufferRegion { buffer, offset: 0 }
}

fn assert_lost<T: std::fmt::Debug>(what: &str, result: wgpu_split::Result<T>) {
    match result {
        Err(SplitError::Device(message)) => {
            assert!(message.contains("lost"), "{what}: {message}")
        }
        other => panic!("{what} on a lost device gave {other:?}, not SplitError::Device"),
    }
}

/// Every entry point, after `device.destroy()`; wgpu raises no error of its own meanwhile
/// (one reaching the device's handler would be a panic under wgpu's default handler).
fn every_entry_point_reports_the_loss(choice: BackendChoice) {
    let f = fixture(choice);
    let uncaptured = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = uncaptured.clone();
    f.gpu
        .device()
        .on_uncaptured_error(std::sync::Arc::new(move |e: wgpu::Error| {
            seen.lock().unwrap().push(e.to_string())
        }));
    let prepared = f
        .gpu
        .prepare(
            &f.plan,
            DType::F32,
            region(&f.input),
            Outputs::Region(region(&f.output)),
        )
        .expect("prepare on a live device");
    let mut encoder = f.gpu.device().create_command_encoder(&Default::default());
    f.gpu.device().destroy();

    let device = f.gpu.device().clone();
    let queue = f.gpu.queue().clone();
    assert_lost("GpuSplitter::new", GpuSplitter::new(device, queue));
    assert_lost("Prepared::encode", prepared.encode(&mut encoder));
    assert_lost(
        "Prepared::encode_async",
        pollster::block_on(prepared.encode_async(&mut encoder)),
    );
    // encode, encode_async, prepare and prepare_async, for each place the outputs can go.
    let layout = f.gpu.layout(&f.plan, DType::F32).unwrap();
    let regions: Vec<BufferRegion> = (0..3).map(|_| region(&f.output)).collect();
    let places = [
        ("Region", Outputs::Region(region(&f.output))),
        ("Placed", Outputs::Placed(region(&f.output), &layout)),
        ("Regions", Outputs::Regions(&regions)),
    ];
    for (place, outputs) in places {
        let (plan, input) = (&f.plan, region(&f.input));
        assert_lost(
            &format!("encode into Outputs::{place}"),
            f.gpu.encode(&mut encoder, plan, DType::F32, input, outputs),
        );
        assert_lost(
            &format!("encode_async into Outputs::{place}"),
            pollster::block_on(
                f.gpu
                    .encode_async(&mut encoder, plan, DType::F32, input, outputs),
            ),
        );
        assert_lost(
            &format!("prepare into Outputs::{place}"),
            f.gpu.prepare(plan, DType::F32, input, outputs),
        );
        assert_lost(
            &format!("prepare_async into Outputs::{place}"),
            pollster::block_on(f.gpu.prepare_async(plan, DType::F32, input, outputs)),
        );
    }
    let data = HostTensor::from_slice(&[8, 12], &[1.5f32; 96]).unwrap();
    assert_lost("run", f.gpu.run(&f.plan, &data));
    assert_lost(
        "run_async",
        pollster::block_on(f.gpu.run_async(&f.plan, &data)),
    );
    assert_lost(
        "run_stream",
        f.gpu.run_stream(
            &f.plan,
            DType::F32,
            data.bytes(),
            &mut vec![Vec::<u8>::new(); 3],
            &StreamOptions::default(),
        ),
    );
    assert_lost(
        "run_stream_async",
        pollster::block_on(f.gpu.run_stream_async(
            &f.plan,
            DType::F32,
            data.bytes(),
            &mut vec![Vec::<u8>::new(); 3],
            &StreamOptions::default(),
        )),
    );
    // The concat's: the same entry points with the inverse plan.
    let concat = f.plan.inverse();
    let parts = f.plan.reference(&data).unwrap();
    assert_lost("run of a concat", f.gpu.run(&concat, &parts));
    let inputs = Inputs::Region(region(&f.output));
    assert_lost(
        "encode of a concat",
        f.gpu
            .encode(&mut encoder, &concat, DType::F32, inputs, region(&f.input)),
    );
    assert_lost(
        "prepare of a concat",
        f.gpu.prepare(&concat, DType::F32, inputs, region(&f.input)),
    );
    assert_eq!(*uncaptured.lock().unwrap(), Vec::<String>::new());
}

mod every_entry_point_reports_the_loss {
    #[test]
    fn vulkan() {
        super::every_entry_point_reports_the_loss(wgpu_split::BackendChoice::Vulkan)
    }
    #[test]
    fn gl() {
        super::every_entry_point_reports_the_loss(wgpu_split::BackendChoice::Gl)
    }
}
