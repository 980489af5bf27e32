//! What a recording process did not record, and why: the summary a
//! process under reprise's interposer appends at exit to the file
//! `REPRISE_RECORD_SUMMARY` names, one line per process
//! (`recorded 3 marked 1 capture 1 graph 2 ... wrote 6b2e6a736f6e`), which
//! `reprise record` adds up. `wrote` words name the captures the process
//! wrote (each descriptor's file name, its bytes in hex), so that a
//! process's summary names its own captures when other processes record
//! into the same directory at once (an MPI job's ranks).

/// Why a launch was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// On a stream that was capturing a graph, or while one was: the
    /// launch only becomes a graph node, and the recorder's copies and
    /// synchronize would break the capture.
    Capture,
    /// A graph launch (`cuGraphLaunch`): its kernels are nodes, not launches.
    Graph,
    /// Cooperative (`cuLaunchCooperativeKernel`, or the launch attribute).
    Cooperative,
    /// With thread block clusters (a launch attribute).
    Cluster,
    /// With other launch attributes (priority, programmatic serialization).
    Attributes,
    /// Parameters packed by the program (`extra`), whose layout cannot be
    /// split into arguments.
    Extra,
    /// Of a function whose image was not seen loaded, or whose parameter
    /// sizes the driver does not tell.
    Unknown,
    /// Larger than a capture holds (a name, the argument count, or the
    /// bytes of by-value arguments past the format's limits).
    TooLarge,
    /// In a context of another device than the one recording.
    OtherDevice,
    /// While another thread's launch was being recorded for longer than
    /// the interposer waits (the program goes on rather than wait).
    Busy,
    /// The recording failed before the kernel ran (the driver's launch
    /// then ran it, and answered the program).
    Failed,
    /// The driver refused the launch itself (a block past its limit, say):
    /// the program's own error, passed back to it unchanged.
    Refused,
    /// On a stream whose host function (`cuLaunchHostFunc`,
    /// `cuStreamAddCallback`) has not run yet: the recorder's synchronize
    /// would wait for it, and it may be waiting for the launching thread.
    HostFunction,
}

impl Skipped {
    /// Every reason, in the order summaries list them.
    pub const ALL: [Skipped; 13] = [
        Skipped::Capture,
        Skipped::Graph,
        Skipped::Cooperative,
        Skipped::Cluster,
        Skipped::Attributes,
        Skipped::Extra,
        Skipped::Unknown,
        Skipped::TooLarge,
        Skipped::OtherDevice,
        Skipped::Busy,
        Skipped::Failed,
        Skipped::Refused,
        Skipped::HostFunction,
    ];

    /// Its word in summary lines, and what it means after a count, in the
    /// order of [`Skipped::ALL`].
    const WORDS: [(&'static str, &'static str); 13] = [
        ("capture", "during stream capture"),
        ("graph", "graph launches"),
        ("cooperative", "cooperative"),
        ("cluster", "with clusters"),
        ("attributes", "with other launch attributes"),
        ("extra", "with packed parameters (extra)"),
        (
            "unknown",
            "of kernels whose image or parameter sizes were unknown",
        ),
        ("too-large", "too large for a capture"),
        ("other-device", "on another device"),
        ("busy", "while another thread's launch was being recorded"),
        ("failed", "whose recording failed"),
        ("refused", "refused by the driver"),
        ("host-function", "behind a host function still to run"),
    ];

    /// The word for it in summary lines.
    pub fn key(self) -> &'static str {
        Skipped::WORDS[self.index()].0
    }

    /// What it means, after a count ("2 during stream capture").
    pub fn text(self) -> &'static str {
        Skipped::WORDS[self.index()].1
    }

    /// Its place in [`Skipped::ALL`]: the variants are declared in that
    /// order.
    fn index(self) -> usize {
        self as usize
    }
}

/// Launches recorded and not recorded, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Launches recorded.
    pub recorded: u64,
    /// Of those, launches recorded with a mark: an argument pointing
    /// outside the recording region (`ArgsOutside`) or into a device
    /// global (`ArgsInGlobals`), which a replay may not reproduce.
    pub marked: u64,
    skipped: [u64; Skipped::ALL.len()],
}

impl Summary {
    /// Launches not recorded for `why`.
    pub fn skipped(&self, why: Skipped) -> u64 {
        self.skipped[why.index()]
    }

    /// Sets the launches not recorded for `why`.
    pub fn set_skipped(&mut self, why: Skipped, n: u64) {
        self.skipped[why.index()] = n;
    }

    /// The summary line (with its newline).
    pub fn line(&self) -> String {
        self.line_with(&[])
    }

    /// [`Summary::line`] naming the captures the process wrote
    /// (descriptors' file names) with `wrote` words.
    pub fn line_with(&self, written: &[std::path::PathBuf]) -> String {
        let mut s = format!("recorded {} marked {}", self.recorded, self.marked);
        for k in Skipped::ALL {
            s.push_str(&format!(" {} {}", k.key(), self.skipped(k)));
        }
        for name in written.iter().filter_map(|p| p.file_name()) {
            s.push_str(" wrote ");
            for b in name.as_encoded_bytes() {
                s.push_str(&format!("{b:02x}"));
            }
        }
        s.push('\n');
        s
    }

    /// Summary lines added up; words it does not know are passed over.
    pub fn parse(text: &str) -> Summary {
        let mut sum = Summary::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.chunks(2) {
                let [key, value] = pair else { continue };
                let Ok(n) = value.parse::<u64>() else {
                    continue;
                };
                if *key == "recorded" {
                    sum.recorded = sum.recorded.saturating_add(n);
                } else if *key == "marked" {
                    sum.marked = sum.marked.saturating_add(n);
                } else if let Some(k) = Skipped::ALL.iter().find(|k| k.key() == *key) {
                    let i = k.index();
                    sum.skipped[i] = sum.skipped[i].saturating_add(n);
                }
            }
        }
        sum
    }

    /// "1 launch", "3 launches (1 marked: ...)": the launches recorded,
    /// and how many of them carry a mark.
    pub fn recorded_text(&self) -> String {
        let mut s = launches(self.recorded);
        if self.marked > 0 {
            s.push_str(&format!(
                " ({} marked: arguments outside the recording region or in device globals; \
                 reprise inspect shows which)",
                self.marked
            ));
        }
        s
    }

    /// "not recorded: 2 during stream capture, 1 cooperative", or `None`
    /// when every launch was recorded.
    pub fn skipped_text(&self) -> Option<String> {
        let parts: Vec<String> = Skipped::ALL
            .iter()
            .filter(|&&k| self.skipped(k) > 0)
            .map(|&k| format!("{} {}", self.skipped(k), k.text()))
            .collect();
        (!parts.is_empty()).then(|| format!("not recorded: {}", parts.join(", ")))
    }
}

/// The captures summary lines say their processes wrote (`wrote` words),
/// as descriptors' file names, in the order written; a word that is no
/// file name in hex is passed over.
pub fn written(text: &str) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2).filter(|w| w[0] == "wrote") {
            let hex = pair[1].as_bytes();
            if hex.is_empty() || hex.len() % 2 != 0 {
                continue;
            }
            let bytes: Option<Vec<u8>> = hex
                .chunks(2)
                .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
                .collect();
            match bytes {
                Some(b) if !b.contains(&b'/') && !b.contains(&0) => {
                    out.push(std::ffi::OsString::from_vec(b))
                }
                _ => {}
            }
        }
    }
    out
}

/// "1 launch", "2 launches".
pub fn launches(n: u64) -> String {
    format!("{n} launch{}", if n == 1 { "" } else { "es" })
}

#[cfg(test)]
mod tests;
