//! [`Limits`]: what a device allows that the plans and the programs depend on, named as
//! WebGPU's `GPUSupportedLimits` names them, so that any host fills it from its device.

/// A device's limits, as far as the plans and the programs read them. [`Limits::default`]
/// is what WebGPU gives a device that asks for nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes one storage binding views at most.
    pub max_storage_buffer_binding_size: u64,
    /// Bytes one buffer holds at most.
    pub max_buffer_size: u64,
    /// Storage buffers one shader stage binds at most.
    pub max_storage_buffers_per_shader_stage: u32,
    /// Storage buffers with a dynamic offset one pipeline layout binds at most.
    pub max_dynamic_storage_buffers_per_pipeline_layout: u32,
    /// Workgroups a dispatch takes in each dimension at most.
    pub max_compute_workgroups_per_dimension: u32,
    /// The alignment of a storage binding's offset, in bytes.
    pub min_storage_buffer_offset_alignment: u32,
}

impl Default for Limits {
    /// WebGPU's defaults.
    fn default() -> Self {
        Self {
            max_storage_buffer_binding_size: 128 << 20,
            max_buffer_size: 256 << 20,
            max_storage_buffers_per_shader_stage: 8,
            max_dynamic_storage_buffers_per_pipeline_layout: 4,
            max_compute_workgroups_per_dimension: 65535,
            min_storage_buffer_offset_alignment: 256,
        }
    }
}
