//! Recording configuration, from code (a builder) or from the environment.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `REPRISE_RECORD` | record launches (`1`/`0`, `true`/`false`, `on`/`off`) | off |
//! | `REPRISE_RECORD_DIR` | directory for captures | `.` |
//! | `REPRISE_RECORD_OUTPUT` | also save the post-kernel snapshot | on |
//! | `REPRISE_RECORD_MEMSIZE` | the recording region's address space (`64M`, `2G`, bytes), a cap it never grows past; memory is put behind it as allocations reach it | the device's memory size (`1G` where the executor cannot tell) |
//! | `REPRISE_RECORD_FILTER` | record only kernels whose name matches this glob (`*`, `?`) | all |
//! | `REPRISE_RECORD_SKIP` | skip the first N matching launches | 0 |
//! | `REPRISE_RECORD_MAX` | record at most M launches (failed launches do not count) | unlimited |
//! | `REPRISE_RECORD_MODE` | `async` (one synchronize) or `sync` (LLVM's) | `async` |
//! | `REPRISE_RECORD_WRITER` | `background` or `inline` file writes | `background` |
//! | `REPRISE_RECORD_FSYNC` | flush files to disk before renaming | on |
//! | `REPRISE_RECORD_FORMAT` | `raw` (one file per snapshot) or `store` (chunks in the directory's content-addressed, compressed store, see [`CaptureFormat`]) | `store` |
//! | `REPRISE_RECORD_DEDUP` | record only the first launch of each (kernel, grid, block, shared memory) and count the rest | off |
//! | `REPRISE_RECORD_REPORT` | write a record report (`reprise-PID-N.report.txt` and `.report.json`: kernels in recording order with their launch counts) | on with `DEDUP` |
//! | `REPRISE_RECORD_REACHABLE` | snapshot only the allocations a launch can reach from its arguments (a conservative scan); the rest is poison, and a kernel reaching it shows a difference on replay | off |
//! | `REPRISE_RECORD_MAX_DISK` | stop recording (one line says why; the program goes on) before the captures written pass this size (`500M`, `10G`); with or without it, recording stops while the file system still has 5% of its size free (at most 4 GiB) | none (5%, at most 4 GiB, kept free) |
//! | `REPRISE_RECORD_DEVICE_HASHING` | hash the snapshots' store chunks on the device and copy back only those the host lacks (store format, CUDA executor; see [`RecordConfig::device_hashing`]) | off |
//! | `REPRISE_RECORD_SUMMARY` | (the interposer's) file each process appends its summary line to | none |
//!
//! An empty value (`VAR=`) is as if the variable were unset; a value that
//! cannot be used is an error naming the variable. Any other
//! `REPRISE_RECORD_*` variable (a misspelling, say) draws a warning
//! ([`unknown_variables`]) rather than being ignored in silence.

mod env;
mod parse;
mod record;

pub use env::{VARIABLE_PREFIX, VARIABLES, unknown_variables, unknown_warning};
pub(crate) use parse::bad;
pub use parse::{glob_match, parse_size};
pub use record::{
    DEFAULT_QUEUE_BYTES, DEFAULT_QUEUE_DEPTH, DEFAULT_REGION_SIZE, RecordConfig, WriterKind,
};
pub use reprise_capture::CaptureFormat;
