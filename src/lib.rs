//! reprise: record one kernel launch and replay it.
