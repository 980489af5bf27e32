use super::*;

/// `h:KERNEL` a header, `r` a row.
fn parse(l: &str) -> Option<Line> {
    if let Some(kernel) = l.strip_prefix("h:") {
        return Some(Line::Header(Header {
            tune_shard: "0/1".into(),
            kernel: kernel.into(),
            capture: "c".into(),
            configs: 1,
            device_times: true,
            stopped: None,
        }));
    }
    let c = LaunchConfig {
        grid: [1; 3],
        block: [1; 3],
        shared_mem: 0,
    };
    (l == "r").then(|| Line::Row(Row::failed(c, None)))
}

#[test]
fn a_line_cut_short_is_dropped_and_another_kernel_refused() {
    let p = read("h:k\nr\nr", "k", parse).unwrap();
    assert_eq!((p.rows.len(), p.cut_short, p.unterminated), (2, None, true));
    assert!(p.header.is_some());
    let p = read("r\nr\nr2", "k", parse).unwrap();
    assert_eq!((p.rows.len(), p.cut_short), (2, Some(4)));
    assert_eq!(
        read("x\nr\n", "k", parse).unwrap_err(),
        NotResults::BadLine(1)
    );
    assert!(matches!(
        read("h:j\n", "k", parse),
        Err(NotResults::OtherKernel(..))
    ));
}
