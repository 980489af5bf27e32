//! `reprise bench --store`: the capture store against raw files, as
//! tables and JSON (see [`crate::store`]).

use std::fmt::Write as _;

use serde_json::json;

use super::{bytes, line, ms};
use crate::human;
use crate::store::{CHUNK, Disk, PROGRAM_LAUNCHES, StoreResults};

fn gb_s(bytes_per_s: f64) -> String {
    format!("{:.2} GiB/s", bytes_per_s / f64::from(1u32 << 30))
}

fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "-".into()
    }
}

fn disk_json(d: &Disk) -> serde_json::Value {
    json!({
        "captures": d.captures,
        "raw_bytes": d.raw,
        "stored_bytes": d.stored,
        "raw_vs_stored": d.ratio(),
    })
}

/// The results as JSON (sizes in bytes, times in seconds).
pub fn to_json(r: &StoreResults) -> serde_json::Value {
    let t = &r.throughput;
    json!({
        "program": disk_json(&r.program),
        "program_reachable": disk_json(&r.program_reachable),
        "sizes": r.sizes.iter().map(|s| json!({
            "size_bytes": s.size,
            "disk": disk_json(&s.disk),
            "plain_launch_s": s.plain,
            "llvm_s": s.llvm,
            "raw_launch_s": s.raw_launch,
            "store_launch_s": s.store_launch,
            "launch_store_vs_raw": s.launch_store_vs_raw(),
            "store_vs_llvm": s.store_vs_llvm(),
            "raw_write_s": s.raw_write,
            "store_write_new_s": s.store_write_new,
            "store_write_stored_s": s.store_write_stored,
            "stored_share": s.stored_share,
            "write_new_vs_raw": s.write_new_vs_raw(),
            "write_stored_vs_raw": s.write_stored_vs_raw(),
            "replay_raw_s": s.replay_raw,
            "replay_store_s": s.replay_store,
            "read_raw_s": s.read_raw,
            "replay_store_vs_raw": s.replay_store_vs_raw(),
            "replay_store_vs_read": s.replay_store_vs_read(),
        })).collect::<Vec<_>>(),
        "throughput": {
            "memcpy_bytes_per_s": t.memcpy,
            "checksum_bytes_per_s": t.checksum,
            "blake3_bytes_per_s": t.blake3,
            "zstd_bytes_per_s": t.zstd,
            "unzstd_bytes_per_s": t.unzstd,
            "zstd_ratio": t.zstd_ratio,
            "blake3_vs_memcpy": t.blake3 / t.memcpy,
            "zstd_vs_memcpy": t.zstd / t.memcpy,
        },
    })
}

/// The tables, as Markdown.
pub fn table(r: &StoreResults, backend: reprise::BackendKind) -> String {
    let mut o = String::new();
    line!(
        o,
        "capture store against raw files on the {backend} executor (same run; the region holds a float field)"
    );
    line!(
        o,
        "\ndisk: what the directory holds (descriptors, manifests, chunk files) against raw files\n"
    );
    line!(o, "| recording | captures | raw | stored | raw / stored |");
    line!(o, "| :--- | ---: | ---: | ---: | ---: |");
    let program = format!("{PROGRAM_LAUNCHES}-launch program (x, y 16 MiB, 32 MiB untouched)");
    let reachable = "the same, --reachable (the untouched buffer not held)".to_string();
    let sizes = r
        .sizes
        .iter()
        .map(|s| (format!("bench kernel, {} region", human(s.size)), &s.disk));
    for (name, d) in [(program, &r.program), (reachable, &r.program_reachable)]
        .into_iter()
        .chain(sizes)
    {
        line!(
            o,
            "| {name} | {} | {} | {} | {:.2} |",
            d.captures,
            bytes(d.raw),
            bytes(d.stored),
            d.ratio()
        );
    }
    line!(
        o,
        "\nrecording: the launching thread's cost (recorded minus plain; medians) and the writer's time per capture (fsync on, each begun on a quiet file system)\n"
    );
    line!(
        o,
        "| size | plain | LLVM (sync, inline raw) | raw files | store | store / raw | store / LLVM | writer raw | writer store, all new | store / raw | writer store, ~90% stored | store / raw |"
    );
    line!(
        o,
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for s in &r.sizes {
        line!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({:.0}%) | {} |",
            human(s.size),
            ms(s.plain),
            ms(s.llvm),
            ms(s.raw_launch),
            ms(s.store_launch),
            ratio(s.launch_store_vs_raw()),
            ratio(s.store_vs_llvm()),
            ms(s.raw_write),
            ms(s.store_write_new),
            ratio(s.write_new_vs_raw()),
            ms(s.store_write_stored),
            s.stored_share * 100.0,
            ratio(s.write_stored_vs_raw())
        );
    }
    line!(
        o,
        "\nreplay (open, verify checksums, launch) from a warm page cache: raw files are mapped and their xxh3 read from the page cache; the store (format 2, host) maps its plain chunk files the same way, reads the other chunks into place, then the same xxh3 (chunks' blake3 only if it fails)\n"
    );
    line!(
        o,
        "| size | raw files | store | store / raw | read raw files | store / read |"
    );
    line!(o, "| ---: | ---: | ---: | ---: | ---: | ---: |");
    for s in &r.sizes {
        line!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            human(s.size),
            ms(s.replay_raw),
            ms(s.replay_store),
            ratio(s.replay_store_vs_raw()),
            ms(s.read_raw),
            ratio(s.replay_store_vs_read())
        );
    }
    let t = &r.throughput;
    line!(
        o,
        "\nthroughput per core (16 MiB of a float field, {} chunks)\n",
        human(CHUNK as u64)
    );
    line!(o, "| operation | rate | vs memcpy |");
    line!(o, "| :--- | ---: | ---: |");
    line!(o, "| memcpy | {} | 1.00 |", gb_s(t.memcpy));
    let zstd = format!("zstd level 1 (to {:.1}%)", t.zstd_ratio * 100.0);
    for (name, rate) in [
        ("xxh3-64 (checksums, verified on replay)", t.checksum),
        ("blake3 (naming chunks)", t.blake3),
        (zstd.as_str(), t.zstd),
        ("zstd decompression", t.unzstd),
    ] {
        line!(o, "| {name} | {} | {:.2} |", gb_s(rate), rate / t.memcpy);
    }
    o
}
