//! The texture route: strided outputs moved by the device's copy commands, through a scratch
//! texture.
//!
//! A buffer-to-texture copy reads rows at any `bytes_per_row` that is a multiple of 256, and a
//! texture-to-buffer copy writes a rectangle of them at another: one command reads a band of
//! input rows (every output's columns, or one output's), and one per output writes its
//! columns back to back. On CPU adapters (lavapipe, llvmpipe)
//! copy commands run at memcpy speed, several times faster than any compute shader there, so
//! this beats the gather dispatch by 3 to 5x on splits with 256-byte-multiple rows. On GPUs it
//! moves every byte twice, so [`GpuSplitter`](crate::GpuSplitter) uses it on CPU adapters only
//! unless told otherwise.
//!
//! The texture is `Rgba32Uint`: 16-byte texels copied as raw bits, so every dtype comes out
//! bit-exact. [`plan`] is pure and tested without a device; [`record`] records the copies.

pub mod plan;
pub mod record;
