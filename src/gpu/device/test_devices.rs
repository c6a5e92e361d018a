//! Helpers for the unit tests that need a device: one per adapter CI has.

use super::*;
use std::sync::OnceLock;

/// The device of `choice`'s adapter, opened once per test binary (as the integration tests'
/// splitters are); no adapter fails the test. One device, never dropped while tests run: the
/// NVIDIA driver (580, Vulkan, an H200) deadlocked in `vkDestroyDevice` when several tests
/// dropped devices of their own at once.
pub(crate) fn test_device(choice: BackendChoice) -> wgpu::Device {
    static VULKAN: OnceLock<wgpu::Device> = OnceLock::new();
    static GL: OnceLock<wgpu::Device> = OnceLock::new();
    let cell = match choice {
        BackendChoice::Vulkan => &VULKAN,
        BackendChoice::Gl => &GL,
        other => panic!("the tests run on Vulkan and GL, not {other:?}"),
    };
    cell.get_or_init(|| {
        DeviceChoice::from(choice)
            .open()
            .unwrap_or_else(|e| panic!("{choice:?} must have an adapter for this test: {e}"))
            .1
    })
    .clone()
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
