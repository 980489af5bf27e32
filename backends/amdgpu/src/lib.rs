//! reprise backend: amdgpu.
