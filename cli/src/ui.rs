//! What every subcommand shows people: lines on stdout that end the process
//! quietly when stdout closes, errors with their causes, sizes and times for
//! people, and a progress bar that appears only for long work.

/// `println!` that ends the process quietly (status 141, as a process killed
/// by SIGPIPE) when stdout is closed, e.g. piped into `head`, instead of
/// panicking.
macro_rules! out {
    () => {
        out_text!()
    };
    ($($t:tt)*) => {
        out_text!("{}", $crate::ui::shown(&format!($($t)*)))
    };
}

/// `out!` for text whose line breaks are its own (pretty JSON, whose
/// strings serde_json escaped, or a heading after a blank line): any other
/// control character or bidirectional override is written as a JSON
/// escape (`\u009b`), which keeps JSON valid.
macro_rules! out_text {
    () => {
        out_text!("")
    };
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let text = $crate::ui::shown_text(&format!($($t)*)).into_owned();
        if writeln!(std::io::stdout(), "{text}").is_err() {
            std::process::exit(141);
        }
    }};
}

/// `eprintln!` through [`ui::shown`]: a warning or note on stderr, one line.
macro_rules! note {
    ($($t:tt)*) => {{
        eprintln!("{}", $crate::ui::shown(&format!($($t)*)));
    }};
}

use std::borrow::Cow;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::CliError;

/// `text` as it may be printed: every control character (line breaks,
/// carriage returns, escape sequences, DEL and the C1 controls) and every
/// bidirectional override escaped as Rust writes them (`\n`, `\u{1b}`),
/// so that no string read from a file (a kernel name, an offload triple,
/// a metadata name, a path) can draw on the terminal, forge a line, or set
/// its title. Everything reprise prints passes through here once:
/// [`out!`], `note!` and [`print_error`].
pub fn shown(text: &str) -> Cow<'_, str> {
    escaped(text, unsafe_char, |c, out| out.extend(c.escape_default()))
}

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// [`shown`] for text whose line breaks are its own: they stay, and every
/// other unsafe character becomes a JSON escape (`\u009b`).
pub fn shown_text(text: &str) -> Cow<'_, str> {
    let unsafe_here = |c| c != '\n' && unsafe_char(c);
    escaped(text, unsafe_here, |c, out| {
        out.push_str(&format!("\\u{:04x}", c as u32))
    })
}

/// `text` with each character `unsafe_here` picks written by `escape`.
fn escaped(
    text: &str,
    unsafe_here: impl Fn(char) -> bool,
    escape: impl Fn(char, &mut String),
) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_here) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_here(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Prints an error and its causes to stderr, settings named by their flags.
pub fn print_error(e: &CliError) {
    let mut shown_text = e.to_string();
    eprintln!("error: {}", shown(&shown_text));
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        // Messages that already include their cause do not repeat it.
        let text = s.to_string();
        if !shown_text.ends_with(&text) {
            eprintln!("  caused by: {}", shown(&text));
        }
        shown_text = text;
        source = s.source();
    }
}

/// Prints `v` as pretty JSON, whose strings serde_json escaped.
pub fn print_json(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).expect("JSON values serialize");
    out_text!("{text}");
}

/// Formats a byte count for people (1.5 MiB).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Formats a duration with a unit that suits it.
pub fn human_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// A progress bar that appears only once work has taken about a second.
pub struct LazyProgress {
    total: u64,
    what: String,
    start: Instant,
    bar: Option<ProgressBar>,
}

impl LazyProgress {
    /// Progress over `total` steps of `what`.
    pub fn new(total: u64, what: &'static str) -> Self {
        LazyProgress {
            total,
            what: what.to_string(),
            start: Instant::now(),
            bar: None,
        }
    }

    /// Marks `done` steps complete, the last of them `what`.
    pub fn step(&mut self, done: u64, what: String) {
        self.what = format!("{done} of {}: {what}", self.total);
        if let Some(b) = &self.bar {
            b.set_message(self.what.clone());
        }
        self.set(done);
    }

    /// Marks `done` steps complete.
    pub fn set(&mut self, done: u64) {
        if self.bar.is_none() && self.start.elapsed() > Duration::from_secs(1) && done < self.total
        {
            let bar = ProgressBar::new(self.total);
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta} left)")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_message(self.what.clone());
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }
}

impl Drop for LazyProgress {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// For `#[command(mut_args(..))]`: the options whose ids `keep` does not
/// name leave the short help (`-h`) for the long one (`--help`), so that
/// `-h` fits a screen.
pub fn short_help(keep: &'static [&'static str]) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |a| {
        let hide = !keep.contains(&a.get_id().as_str());
        a.hide_short_help(hide)
    }
}

/// Refuses an output file that cannot be written, before any work is done:
/// a name that does not end in `.ext` (when `ext` is given: what is written
/// is that format), or a directory that does not exist.
pub fn check_output_file(path: &std::path::Path, ext: Option<&str>) -> Result<(), CliError> {
    if let Some(ext) = ext
        && path
            .extension()
            .is_none_or(|e| !e.eq_ignore_ascii_case(ext))
    {
        return Err(CliError::file(
            path,
            format!(
                "what is written is {}, so the name must end in .{ext}",
                ext.to_uppercase()
            ),
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(CliError::file(
            path,
            format!("the directory {} does not exist", dir.display()),
        ));
    }
    Ok(())
}

/// This executable, which the commands run again in child processes.
pub fn exe() -> Result<std::path::PathBuf, CliError> {
    std::env::current_exe()
        .map_err(|e| reprise::Error::io("the reprise executable", "locate", e).into())
}

/// How to run this very `reprise` from a shell: `reprise` when that name on
/// `PATH` is this executable, else its full path.
pub fn invocation() -> String {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return "reprise".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            d.join("reprise")
                .canonicalize()
                .is_ok_and(|found| found == me)
        })
    });
    if on_path {
        "reprise".into()
    } else {
        me.display().to_string()
    }
}

/// Memory the system can still give, from `/proc/meminfo` (None elsewhere).
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
