//! reprise backend: cuda.
