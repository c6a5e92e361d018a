//! The device: choosing an adapter, opening a device on it, and capturing wgpu's errors.

use crate::error::{Result, SplitError};
use std::str::FromStr;

mod loss;
pub(crate) use loss::{check_alive, LossProbe};

/// Environment variable read by [`BackendChoice::from_env`]; wgpu's own `WGPU_BACKEND` is read
/// when it is unset.
pub const BACKEND_ENV: &str = "WGPU_SPLIT_BACKEND";

/// wgpu's variable for the backend ([`BackendChoice::from_env`] reads it second).
pub const WGPU_BACKEND_ENV: &str = "WGPU_BACKEND";

/// wgpu's variable for the adapter: part of its name ([`DeviceChoice::from_env`]).
pub const WGPU_ADAPTER_NAME_ENV: &str = "WGPU_ADAPTER_NAME";

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
    /// Reads `BACKEND_ENV`, else wgpu's `WGPU_BACKEND_ENV` (one backend name); unset or
    /// empty means [`BackendChoice::Auto`].
    pub fn from_env() -> Result<Self> {
        for var in [BACKEND_ENV, WGPU_BACKEND_ENV] {
            if let Ok(v) = std::env::var(var) {
                if !v.is_empty() {
                    return v.parse();
                }
            }
        }
        Ok(BackendChoice::Auto)
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

/// Which adapter of the chosen backends to open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AdapterPick {
    /// The one wgpu prefers for the power preference.
    #[default]
    Preferred,
    /// The adapter at this index of the backend's adapters, as `wgpu-split info` numbers them.
    Index(usize),
    /// The first adapter whose name contains this text, ignoring case (as wgpu's
    /// `WGPU_ADAPTER_NAME`).
    Name(String),
}

impl FromStr for AdapterPick {
    type Err = SplitError;

    /// A number is an index; any other text part of a name; empty text the preferred one.
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        Ok(if s.is_empty() {
            AdapterPick::Preferred
        } else if let Ok(i) = s.parse() {
            AdapterPick::Index(i)
        } else {
            AdapterPick::Name(s.to_string())
        })
    }
}

/// Everything that picks a device: backend, adapter and power preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceChoice {
    /// The backends to look at.
    pub backend: BackendChoice,
    /// Which of their adapters.
    pub adapter: AdapterPick,
    /// What wgpu prefers when no adapter is named.
    pub power: wgpu::PowerPreference,
}

impl Default for DeviceChoice {
    fn default() -> Self {
        Self {
            backend: BackendChoice::Auto,
            adapter: AdapterPick::Preferred,
            power: wgpu::PowerPreference::HighPerformance,
        }
    }
}

impl From<BackendChoice> for DeviceChoice {
    /// The choice of `backend`'s preferred adapter.
    fn from(backend: BackendChoice) -> Self {
        Self {
            backend,
            ..Self::default()
        }
    }
}

impl DeviceChoice {
    /// Opens a device on the adapter this choice picks, with the adapter's own limits (not
    /// wgpu's conservative defaults), so tensors up to the adapter's binding size fit, and
    /// its timestamp queries where it has them: the device
    /// [`GpuSplitter::open`](crate::GpuSplitter::open) uses, for a caller that wants it
    /// beside the splitter (`DeviceChoice::from(BackendChoice::Vulkan).open()`).
    pub fn open(&self) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
        open_chosen(self)
    }

    /// From the environment, as wgpu's own tools read it: the backend from
    /// [`BackendChoice::from_env`], the adapter from `WGPU_ADAPTER_NAME`, the power preference
    /// from `WGPU_POWER_PREF` (`low` or `high`; high by default).
    pub fn from_env() -> Result<Self> {
        let adapter = match std::env::var(WGPU_ADAPTER_NAME_ENV) {
            Ok(name) if !name.is_empty() => AdapterPick::Name(name),
            _ => AdapterPick::Preferred,
        };
        Ok(Self {
            backend: BackendChoice::from_env()?,
            adapter,
            power: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
        })
    }
}

/// A wgpu instance limited to `backends`, with no window system: every instance the library
/// makes ([`list_adapters`], [`DeviceChoice::open`], `GpuSplitter::open`).
///
/// Before the first one that includes Vulkan, the library turns off Mesa's Vulkan
/// device-select layer ([`quiet_device_select`]).
/// The core's view of a device's limits: those the plans and the programs read.
pub(crate) fn limits_of(limits: &wgpu::Limits) -> wgsl_split::Limits {
    wgsl_split::Limits {
        max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
        max_buffer_size: limits.max_buffer_size,
        max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
        max_dynamic_storage_buffers_per_pipeline_layout: limits
            .max_dynamic_storage_buffers_per_pipeline_layout,
        max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
        min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
    }
}

pub(crate) fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    if backends.contains(wgpu::Backends::VULKAN) {
        quiet_device_select();
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// The environment variable that turns Mesa's Vulkan device-select layer off, the layer's own
/// switch (the Vulkan loader turns it off whenever the variable is set, whatever its value).
const DEVICE_SELECT_OFF_ENV: &str = "NODEVICE_SELECT";

/// Turns off Mesa's Vulkan device-select layer for this process, once, unless the environment
/// already steers it (`NODEVICE_SELECT`, `MESA_VK_DEVICE_SELECT` or `DRI_PRIME` set).
///
/// The Vulkan loader puts that implicit layer under every Vulkan instance on a machine with
/// Mesa's Vulkan drivers. It orders the adapters by the display they drive: at every adapter
/// enumeration of an instance that enabled `VK_KHR_wayland_surface` (wgpu enables it wherever
/// it exists) it connects to the Wayland compositor. In a shell with no compositor and no
/// runtime directory (a container, a CI runner, ssh without a login) libwayland then prints
/// its complaint about the runtime directory on stderr, twice per enumeration, and finds
/// nothing. The library picks adapters by its own rules (power preference, index, name), so
/// the layer's order serves it nothing; without it the order is the loader's, the same in
/// every shell, so an adapter's number in `wgpu-split info` does not depend on the session.
///
/// The variable is set before the first instance, from the thread that makes it; the loader
/// reads it when an instance is created. A program that reads its environment from C on
/// other threads at that moment sets the variable itself before it starts them. A user who
/// wants the layer's choice says so with `MESA_VK_DEVICE_SELECT` or `DRI_PRIME`, which keep
/// this function from writing anything.
fn quiet_device_select() {
    if !cfg!(all(
        unix,
        not(target_vendor = "apple"),
        not(target_arch = "wasm32")
    )) {
        return;
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let steered = [DEVICE_SELECT_OFF_ENV, "MESA_VK_DEVICE_SELECT", "DRI_PRIME"]
            .iter()
            .any(|var| std::env::var_os(var).is_some());
        if !steered {
            std::env::set_var(DEVICE_SELECT_OFF_ENV, "1");
        }
    });
}

#[cfg(feature = "bench")]
/// Every adapter wgpu finds on `choice`'s backends.
/// None on WebGPU, where listing adapters is async (wgpu's `Instance::enumerate_adapters`).
pub fn list_adapters(choice: BackendChoice) -> Vec<wgpu::Adapter> {
    if cfg!(target_arch = "wasm32") {
        return Vec::new();
    }
    pollster::block_on(instance(choice.backends()).enumerate_adapters(choice.backends()))
}

/// [`DeviceChoice::open`].
pub(crate) fn open_chosen(
    choice: &DeviceChoice,
) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    if cfg!(target_arch = "wasm32") {
        return Err(SplitError::NoAdapter(
            "opening a device blocks until the browser answers, which it does only once the \
             thread returns to it: on WebGPU, request the adapter and the device with wgpu's \
             async calls and pass them to GpuSplitter::new_async"
                .into(),
        ));
    }
    let backends = choice.backend.backends();
    let instance = instance(backends);
    let adapter = match &choice.adapter {
        AdapterPick::Preferred => {
            pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: choice.power,
                ..Default::default()
            }))
            .map_err(|e| SplitError::NoAdapter(format!("backend {:?}: {e}", choice.backend)))?
        }
        pick => {
            let adapters = pollster::block_on(instance.enumerate_adapters(backends));
            let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
            let found = match pick {
                AdapterPick::Index(i) => adapters.into_iter().nth(*i),
                AdapterPick::Name(n) => {
                    let n = n.to_lowercase();
                    adapters
                        .into_iter()
                        .find(|a| a.get_info().name.to_lowercase().contains(&n))
                }
                AdapterPick::Preferred => None,
            };
            found.ok_or_else(|| {
                let wanted = match pick {
                    AdapterPick::Index(i) => format!("number {i}"),
                    AdapterPick::Name(n) => format!("named like {n:?}"),
                    AdapterPick::Preferred => "preferred".into(),
                };
                SplitError::NoAdapter(format!(
                    "no adapter {wanted} on backend {:?}; the adapters are {names:?}",
                    choice.backend
                ))
            })?
        }
    };
    // Timestamps where the adapter has them, so a caller can time its commands on the device
    // (the bench does), and pipeline caches (Vulkan), so a command can keep its compiled
    // pipelines across processes; nothing else is asked for.
    let wanted = wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::PIPELINE_CACHE;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("wgpu-split"),
        required_features: adapter.features() & wanted,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| SplitError::NoAdapter(format!("{}: {e}", adapter.get_info().name)))?;
    Ok((adapter, device, queue))
}

/// Runs `f` inside validation, out-of-memory and internal error scopes and turns whatever
/// they catch into [`SplitError::Device`]; wgpu's default handler would panic instead. The
/// scopes are awaited, never blocked on, so this runs under any async executor (on native
/// wgpu the futures are ready at once; on WebGPU they resolve through the browser).
///
/// wgpu's scope guards are not `Send` (native scopes belong to the thread that pushed them),
/// so all three are pushed and popped here with no `.await` between: only the popped scopes'
/// futures, which are `Send` on native, are held across an await, and the future of a caller
/// stays `Send` when `T` is.
pub async fn scoped_async<T>(
    device: &wgpu::Device,
    what: impl std::fmt::Display,
    f: impl FnOnce() -> T,
) -> Result<T> {
    let (out, popped) = {
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        // Scopes pop in reverse order of their pushes.
        (out, [validation.pop(), oom.pop(), internal.pop()])
    };
    let mut first = None;
    for scope in popped {
        let error = scope.await;
        first = first.or(error);
    }
    match first {
        Some(e) => Err(SplitError::Device(format!("{what}: {e}"))),
        None => Ok(out),
    }
}

/// A buffer of `usage` holding `contents`, made mapped and written; an error where the device
/// cannot give it ([`check_alive`]'s message for a lost device), where wgpu's
/// `create_buffer_init` would panic.
pub(crate) fn buffer_with(
    device: &wgpu::Device,
    label: &str,
    contents: &[u8],
    usage: wgpu::BufferUsages,
) -> Result<wgpu::Buffer> {
    let size = (contents.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(wgpu::COPY_BUFFER_ALIGNMENT),
        usage,
        mapped_at_creation: true,
    });
    let written = buffer
        .get_mapped_range_mut(..)
        .map(|mut view| view.slice(..contents.len()).copy_from_slice(contents));
    if let Err(e) = written {
        check_alive(device, label)?;
        return Err(SplitError::Device(format!("{label}: {e}")));
    }
    buffer.unmap();
    Ok(buffer)
}

/// Runs `future`, an entry point's async twin, to its end on this thread: the sync entry
/// points. Native wgpu's error scopes are ready at once, so it waits only where the entry point
/// itself waits (a read-back). On WebGPU (wasm32) the browser settles the device's promises
/// only once control returns to it, which a blocked thread never gives: there a future not
/// ready at once is refused with `blocks_in_browser`, naming `what`.
pub(crate) fn block_on<T>(
    what: &str,
    future: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = what;
        pollster::block_on(future)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut future = std::pin::pin!(future);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => Err(blocks_in_browser(what, &format!("{what}_async"))),
        }
    }
}

/// The error of a sync entry point `what` on WebGPU, where only the async ones can wait:
/// `instead` says what to call there.
#[cfg(target_arch = "wasm32")]
pub(crate) fn blocks_in_browser(what: &str, instead: &str) -> SplitError {
    SplitError::Device(format!(
        "{what} blocks the thread until the device answers, and a browser answers only once \
         the thread returns to it: on WebGPU, call {instead}"
    ))
}

/// [`scoped_async`], blocking the thread until the scopes report (at once on native wgpu):
/// the benchmark's and the memory trace's sync setup.
#[cfg(feature = "bench")]
pub fn scoped<T>(device: &wgpu::Device, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    pollster::block_on(scoped_async(device, what, f))
}

/// Helpers for the unit tests that need a device.
#[cfg(test)]
pub(crate) mod test_devices;
