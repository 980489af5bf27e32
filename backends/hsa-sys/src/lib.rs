//! reprise backend: hsa-sys.
