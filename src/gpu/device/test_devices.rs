//! Helpers for the unit tests that need a device: one per adapter CI has.

use super::*;

/// A device on `choice`'s adapter; no adapter fails the test.
pub(crate) fn test_device(choice: BackendChoice) -> wgpu::Device {
    DeviceChoice::from(choice)
        .open()
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
