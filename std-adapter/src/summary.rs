//! What a recording process did not record, and why: the summary a
//! process under reprise's interposer appends at exit to the file
//! `REPRISE_RECORD_SUMMARY` names, one line per process
//! (`recorded 3 capture 1 graph 2 ...`), which `reprise record` adds up.

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
}

impl Skipped {
    /// Every reason, in the order summaries list them.
    pub const ALL: [Skipped; 11] = [
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
    ];

    /// The word for it in summary lines.
    pub fn key(self) -> &'static str {
        match self {
            Skipped::Capture => "capture",
            Skipped::Graph => "graph",
            Skipped::Cooperative => "cooperative",
            Skipped::Cluster => "cluster",
            Skipped::Attributes => "attributes",
            Skipped::Extra => "extra",
            Skipped::Unknown => "unknown",
            Skipped::TooLarge => "too-large",
            Skipped::OtherDevice => "other-device",
            Skipped::Busy => "busy",
            Skipped::Failed => "failed",
        }
    }

    /// What it means, after a count ("2 during stream capture").
    pub fn text(self) -> &'static str {
        match self {
            Skipped::Capture => "during stream capture",
            Skipped::Graph => "graph launches",
            Skipped::Cooperative => "cooperative",
            Skipped::Cluster => "with clusters",
            Skipped::Attributes => "with other launch attributes",
            Skipped::Extra => "with packed parameters (extra)",
            Skipped::Unknown => "of kernels whose image or parameter sizes were unknown",
            Skipped::TooLarge => "too large for a capture",
            Skipped::OtherDevice => "on another device",
            Skipped::Busy => "while another thread's launch was being recorded",
            Skipped::Failed => "whose recording failed",
        }
    }

    fn index(self) -> usize {
        Skipped::ALL
            .iter()
            .position(|&k| k == self)
            .expect("ALL has every reason")
    }
}

/// Launches recorded and not recorded, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Launches recorded.
    pub recorded: u64,
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
        let mut s = format!("recorded {}", self.recorded);
        for k in Skipped::ALL {
            s.push_str(&format!(" {} {}", k.key(), self.skipped(k)));
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
                } else if let Some(k) = Skipped::ALL.iter().find(|k| k.key() == *key) {
                    let i = k.index();
                    sum.skipped[i] = sum.skipped[i].saturating_add(n);
                }
            }
        }
        sum
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_several_processes_add_up() {
        let mut a = Summary {
            recorded: 2,
            ..Summary::default()
        };
        a.set_skipped(Skipped::Capture, 1);
        let mut b = Summary {
            recorded: 3,
            ..Summary::default()
        };
        b.set_skipped(Skipped::Graph, 2);
        b.set_skipped(Skipped::Unknown, 1);
        let sum = Summary::parse(&format!(
            "{}{}garbage line\nrecorded x\n",
            a.line(),
            b.line()
        ));
        assert_eq!(sum.recorded, 5);
        assert_eq!(sum.skipped(Skipped::Capture), 1);
        assert_eq!(sum.skipped(Skipped::Graph), 2);
        assert_eq!(
            sum.skipped_text().unwrap(),
            "not recorded: 1 during stream capture, 2 graph launches, 1 of kernels whose image or parameter sizes were unknown"
        );
        assert_eq!(Summary::parse("").skipped_text(), None);
    }
}
