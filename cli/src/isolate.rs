//! Running a host image in a child process: a capture is code, and a host
//! image runs in the process that loads it. A corrupted image (a flipped
//! bit in its relocations, its PLT or its constructors) can crash the
//! dynamic loader or itself before any kernel runs, where the host
//! executor's fault guard does not reach, or make the loader end the
//! process (status 127). So `reprise replay` on the host executor runs the
//! replay in a child process of its own (the same command, marked by
//! [`CHILD`]) and reports a death of that child as an error naming the
//! image.

use std::path::Path;
use std::process::{Command, ExitCode};

use reprise::{BackendKind, OpenOptions};
use reprise_std::capture::{CapturePaths, head, read_descriptor};

use crate::error::{CliError, Result};

/// Set in the child's environment: it replays in its own process.
pub const CHILD: &str = "REPRISE_REPLAY_CHILD";

/// Whether this process should hand the replay of `descriptor` to a child:
/// it is not the child itself, and the capture runs on the host executor
/// (`forced`, or what its image is). A capture whose files cannot be read
/// goes to the child too, which reports what is wrong.
pub fn wanted(descriptor: &Path, options: &OpenOptions) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return false;
    }
    if let Some(kind) = options.backend {
        return kind == BackendKind::Host;
    }
    let image = match &options.image {
        // From an application binary: the entry for the capture's kernel.
        Some(path) => read_descriptor(descriptor).ok().and_then(|record| {
            reprise::offload::image_for(path, &record.name, record.backend)
                .ok()
                .map(|(bytes, _)| bytes)
        }),
        None => image_path(descriptor).and_then(|image| head(&image, 4096)),
    };
    image.is_none_or(|bytes| reprise::core::image::sniff(&bytes).backend() == Ok(BackendKind::Host))
}

fn image_path(descriptor: &Path) -> Option<std::path::PathBuf> {
    let record = read_descriptor(descriptor).ok()?;
    Some(CapturePaths::new(descriptor, record.generation).image)
}

/// Runs this very command again in a child process that replays in its
/// own process, and passes its exit status on; a child that dies of a
/// signal, or ends with a status reprise never gives, is an error naming
/// the image.
pub fn replay_in_child(descriptor: &Path, image: Option<&Path>) -> Result<ExitCode> {
    let exe = std::env::current_exe()
        .map_err(|e| reprise::Error::io("the reprise executable", "locate", e))?;
    let status = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD, "1")
        .status()
        .map_err(|e| reprise::Error::io(&exe, "run", e))?;
    let image = image
        .map(Path::to_path_buf)
        .or_else(|| image_path(descriptor))
        .unwrap_or_else(|| descriptor.to_path_buf());
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        // What reprise itself ends with: success, a difference, an error,
        // and stdout closed (as `out!` ends).
        (Some(code @ (0 | 1 | 2 | 141)), _) => Ok(ExitCode::from(code as u8)),
        (Some(code), _) => Err(CliError::Command(format!(
            "{}: the process that loaded and ran this image ended with status {code} \
             (the dynamic loader ends a process with 127 when it cannot load an image): \
             the image is corrupt, or does not belong to this machine",
            image.display()
        ))),
        // Interrupted (Ctrl-C reaches the child too): end as it did.
        (None, Some(sig @ (libc::SIGINT | libc::SIGTERM | libc::SIGHUP))) => {
            Ok(ExitCode::from(128 + sig as u8))
        }
        (None, sig) => Err(CliError::Command(format!(
            "{}: the process that loaded and ran this image was killed by {}: the image is \
             corrupt (its relocations, PLT or constructors), or its code crashed outside the \
             kernel, where reprise cannot catch the fault",
            image.display(),
            sig.map_or_else(|| "a signal".to_string(), signal_name)
        ))),
    }
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
}
