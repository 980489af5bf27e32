//! std adapter of reprise (filled in by the capture-files work).
