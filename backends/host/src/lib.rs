//! reprise backend: host.
