//! Lines on the program's stderr: the interposer's only voice (a program
//! has no logger for the library's log).

/// A line on stderr; a closed or broken stderr is no reason to stop the
/// program (`eprintln!` would panic, and a panic here aborts it).
pub(crate) fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A warning, on stderr with reprise's prefix.
pub(crate) fn warn(line: std::fmt::Arguments<'_>) {
    say(format_args!("reprise: {line}"));
}
