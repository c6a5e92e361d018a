//! Telling whether a device is lost, which wgpu reports nowhere else.

use crate::error::{Result, SplitError};

/// The error of an entry point, named by `what`, on a lost device.
fn lost(what: &str) -> SplitError {
    SplitError::Device(format!(
        "{what}: the device is lost (destroyed, or reset by its driver); open a new device and \
         a new GpuSplitter"
    ))
}

/// Tells whether a device is lost (destroyed, or reset by its driver), which wgpu reports
/// nowhere else: work on a lost device raises no error (WebGPU's rule), and `device.poll`
/// returns none. A map request of a device's buffer is refused at once, its callback called
/// before `map_async` returns, exactly when the device is lost; on a live device the request
/// waits for a poll, and the probe withdraws it (`unmap`). No allocation, no driver call,
/// except where the request is refused: then [`check_alive`] confirms the loss. One probe at
/// a time per splitter and its clones, so that a request never meets another's.
#[derive(Debug)]
pub(crate) struct LossProbe {
    device: wgpu::Device,
    buffer: wgpu::Buffer,
    busy: std::sync::Mutex<()>,
}

impl LossProbe {
    /// A probe of `device`, which must be alive ([`check_alive`]).
    pub(crate) fn new(device: &wgpu::Device) -> Result<Self> {
        check_alive(device, "opening the splitter")?;
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgpu-split loss probe"),
            size: 4,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(Self {
            device: device.clone(),
            buffer,
            busy: std::sync::Mutex::default(),
        })
    }

    /// Fails with [`SplitError::Device`], naming `what` and the loss, where the device is
    /// lost. On WebGPU, where map requests always settle later, it checks nothing.
    pub(crate) fn check(&self, what: impl std::fmt::Display) -> Result<()> {
        if cfg!(target_arch = "wasm32") {
            return Ok(());
        }
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        // Whatever wgpu says of the request and its withdrawal (the race below) is the
        // probe's own, never the caller's device handler's.
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = refused.clone();
        self.buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            flag.fetch_or(r.is_err(), std::sync::atomic::Ordering::SeqCst);
        });
        // Read before the withdrawal, which calls the callback with an error of its own.
        let refused_at_once = refused.load(std::sync::atomic::Ordering::SeqCst);
        // Withdraws the request (or unmaps what another thread's poll mapped meanwhile).
        self.buffer.unmap();
        drop(scope.pop());
        if refused_at_once {
            // A lost device, or, rarely, a mapping that another thread's poll completed while
            // an earlier probe withdrew it, left active (unmapped just now): the allocating
            // check tells them apart.
            check_alive(&self.device, &what.to_string())?;
        }
        Ok(())
    }
}

/// Fails with [`SplitError::Device`], naming `what` and the loss, where `device` is lost:
/// a buffer made on a lost device is invalid and cannot be mapped, so this makes a 4-byte
/// mapped buffer and maps it. It allocates; [`LossProbe`] does not, once made.
pub(crate) fn check_alive(device: &wgpu::Device, what: &str) -> Result<()> {
    let probe = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("wgpu-split device probe"),
        size: 4,
        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    let alive = probe.get_mapped_range_mut(..).is_ok();
    if alive {
        Ok(())
    } else {
        Err(lost(what))
    }
}
