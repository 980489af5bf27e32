//! The core must stay usable without `std`: no dependency of `reprise-core`
//! may have its `std` feature turned on, with or without the `alloc` feature.

use std::process::Command;

fn std_features(extra: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "reprise-core",
            "-e",
            "features,normal,no-proc-macro",
            "--prefix",
            "none",
        ])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("serde-json-core"),
        "unexpected cargo tree output:\n{text}"
    );
    text.lines()
        .filter(|l| l.contains("feature \"std\""))
        .map(str::to_owned)
        .collect()
}

#[test]
fn no_dependency_of_the_core_enables_std() {
    assert_eq!(std_features(&[]), Vec::<String>::new());
    assert_eq!(std_features(&["--features", "alloc"]), Vec::<String>::new());
}
