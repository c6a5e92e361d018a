//! The device: choosing an adapter, opening a device on it, and capturing wgpu's errors.

use crate::error::{Result, SplitError};
use std::str::FromStr;

/// Environment variable read by [`BackendChoice::from_env`].
pub const BACKEND_ENV: &str = "WGPU_SPLIT_BACKEND";

/// Which graphics API to open a device on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// Any backend; wgpu's own preference order.
    #[default]
    Auto,
    /// Vulkan (lavapipe on a machine without a GPU).
    Vulkan,
    /// OpenGL / GLES (llvmpipe on a machine without a GPU).
    Gl,
    /// Metal.
    Metal,
    /// Direct3D 12.
    Dx12,
}

impl BackendChoice {
    /// Reads [`BACKEND_ENV`]; unset or empty means [`BackendChoice::Auto`].
    pub fn from_env() -> Result<Self> {
        match std::env::var(BACKEND_ENV) {
            Ok(v) if !v.is_empty() => v.parse(),
            _ => Ok(BackendChoice::Auto),
        }
    }

    /// The choice that opens `backend` (Auto for backends this crate does not name).
    pub fn from_backend(backend: wgpu::Backend) -> Self {
        match backend {
            wgpu::Backend::Vulkan => BackendChoice::Vulkan,
            wgpu::Backend::Gl => BackendChoice::Gl,
            wgpu::Backend::Metal => BackendChoice::Metal,
            wgpu::Backend::Dx12 => BackendChoice::Dx12,
            _ => BackendChoice::Auto,
        }
    }

    /// The wgpu backend set this choice allows.
    pub fn backends(self) -> wgpu::Backends {
        match self {
            BackendChoice::Auto => wgpu::Backends::all(),
            BackendChoice::Vulkan => wgpu::Backends::VULKAN,
            BackendChoice::Gl => wgpu::Backends::GL,
            BackendChoice::Metal => wgpu::Backends::METAL,
            BackendChoice::Dx12 => wgpu::Backends::DX12,
        }
    }
}

impl FromStr for BackendChoice {
    type Err = SplitError;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "auto" => BackendChoice::Auto,
            "vulkan" | "vk" => BackendChoice::Vulkan,
            "gl" | "gles" | "opengl" => BackendChoice::Gl,
            "metal" => BackendChoice::Metal,
            "dx12" | "d3d12" => BackendChoice::Dx12,
            other => return Err(SplitError::UnknownBackend(other.to_string())),
        })
    }
}

/// A wgpu instance limited to `backends`, with no window system.
pub fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// Every adapter wgpu finds on `choice`'s backends.
pub fn list_adapters(choice: BackendChoice) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance(choice.backends()).enumerate_adapters(choice.backends()))
}

/// Opens a device on the best adapter of `choice`, with the adapter's own limits (not wgpu's
/// conservative defaults), so tensors up to the adapter's binding size fit.
pub fn open_device(choice: BackendChoice) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    let instance = instance(choice.backends());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| SplitError::NoAdapter(format!("backend {choice:?}: {e}")))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("wgpu-split"),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| SplitError::NoAdapter(format!("{}: {e}", adapter.get_info().name)))?;
    Ok((adapter, device, queue))
}

/// Runs `f` inside validation, out-of-memory and internal error scopes and turns whatever
/// they catch into [`SplitError::Device`]; wgpu's default handler would panic instead.
pub fn scoped<T>(device: &wgpu::Device, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    // Scopes pop in reverse order of their pushes.
    let errors = [
        pollster::block_on(validation.pop()),
        pollster::block_on(oom.pop()),
        pollster::block_on(internal.pop()),
    ];
    match errors.into_iter().flatten().next() {
        Some(e) => Err(SplitError::Device(format!("{what}: {e}"))),
        None => Ok(out),
    }
}

/// Helpers for the unit tests that need a device.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A device on `choice`'s adapter; no adapter fails the test.
    pub(crate) fn test_device(choice: BackendChoice) -> wgpu::Device {
        open_device(choice)
            .unwrap_or_else(|e| panic!("{choice:?} must have an adapter for this test: {e}"))
            .1
    }

    /// Stamps out one test per CI adapter for each named `fn(BackendChoice)`: a module of
    /// the function's name with the tests `vulkan` and `gl`, so a failure names its backend.
    macro_rules! per_backend {
        ($($name:ident),* $(,)?) => {$(
            mod $name {
                #[test]
                fn vulkan() {
                    super::$name($crate::BackendChoice::Vulkan)
                }
                #[test]
                fn gl() {
                    super::$name($crate::BackendChoice::Gl)
                }
            }
        )*};
    }
    pub(crate) use per_backend;
}
