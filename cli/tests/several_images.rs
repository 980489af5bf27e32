//! `--image` given more than once: a directory holding the captures of an
//! application and of a plugin it `dlopen`s (LLVM 16 saves no image, and
//! each kernel's image is in the binary that defines it), or of two
//! applications. Each capture takes its image from the binary whose
//! offload entries hold its kernel; a capture none holds is refused,
//! naming what each holds.
//!
//! The committed fixtures (two applications) are only listed and
//! inspected, which runs nothing; replaying needs LLVM 16's runtime and
//! recording the plugin program needs clang-16: where they are missing the
//! tests skip with a message, unless `REPRISE_REQUIRE_LLVM16=1` makes that a
//! failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::llvm16::*;
use common::*;

/// The application: a kernel of its own, then the plugin's (its path is
/// the first argument) on the same array.
const APP: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = 1000;
  double *a = malloc(n * sizeof *a);
  for (int i = 0; i < n; i++)
    a[i] = i;
#pragma omp target teams distribute parallel for map(tofrom : a[0:n])
  for (int i = 0; i < n; i++)
    a[i] = 2 * a[i] + 1;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  void (*scale)(double *, int, double) =
      (void (*)(double *, int, double))dlsym(h, "plugin_scale");
  scale(a, n, 3.0);
  for (int i = 0; i < n; i++)
    if (a[i] != (2.0 * i + 1) * 3.0 + 0.5)
      return 1;
  return 0;
}
"#;

/// The plugin: one offloaded kernel, in a shared object of its own.
const PLUGIN: &str = r#"
void plugin_scale(double *x, int n, double f) {
#pragma omp target teams distribute parallel for map(tofrom : x[0:n])
  for (int i = 0; i < n; i++)
    x[i] = x[i] * f + 0.5;
}
"#;

/// Compiles the C `code` with clang-16 for the host offload target into
/// `out`, `extra` arguments before the output.
fn clang16(code: &str, out: &Path, extra: &[&str]) {
    let src = out.with_extension("c");
    std::fs::write(&src, code).unwrap();
    let st = Command::new("clang-16")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O2"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap();
    assert!(st.success(), "compiling {}", src.display());
}

/// Builds the application and its plugin in `root`, and runs the
/// application in `root/captures` with LLVM 16's recorder on: the
/// application, the plugin and the two descriptors (the plugin's
/// kernel's first).
fn recorded(root: &Path) -> (PathBuf, PathBuf, Vec<PathBuf>) {
    let app = root.join("app");
    let plugin = root.join("plugin.so");
    clang16(PLUGIN, &plugin, &["-shared", "-fPIC"]);
    clang16(APP, &app, &["-ldl"]);
    let dir = root.join("captures");
    std::fs::create_dir(&dir).unwrap();
    let out = Command::new(&app)
        .arg(&plugin)
        .current_dir(&dir)
        .env("LD_LIBRARY_PATH", LIB)
        .env("LIBOMPTARGET_RECORD", "1")
        .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
        .env("LIBOMPTARGET_RR_DEVMEM_SIZE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "app: {:?}", text(&out));
    is_what_llvm16_writes(&dir, &app);
    let mut ds = descriptors(&dir);
    assert_eq!(ds.len(), 2, "{ds:?}");
    // The kernels' names hold the sources' file ids: sorted by kernel.
    ds.sort_by_key(|d| !d.to_string_lossy().contains("plugin_scale"));
    assert!(ds[0].to_string_lossy().contains("plugin_scale"), "{ds:?}");
    assert!(ds[1].to_string_lossy().contains("_main_l"), "{ds:?}");
    (app, plugin, ds)
}

/// `list --image` with each of `images`: its exit status and stdout.
fn list(dir: &Path, images: &[&Path]) -> (i32, String) {
    let mut args = vec!["list"];
    for i in images {
        args.extend(["--image", s(i)]);
    }
    args.push(s(dir));
    let out = reprise(&args);
    (out.status.code().unwrap_or(-1), text(&out).0)
}

#[test]
fn an_application_and_its_plugin_each_give_their_captures_images() {
    let test = "an_application_and_its_plugin_each_give_their_captures_images";
    if need(compiler(), test).is_none() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (app, plugin, ds) = recorded(root.path());
    let dir = ds[0].parent().unwrap();

    // One binary leaves the other's capture incomplete, as it always has;
    // both list every capture clean.
    let (code, stdout) = list(dir, &[&app]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("2 capture(s) (1 incomplete)"), "{stdout}");
    assert!(
        stdout.contains("no entry of its .llvm.offloading section defines the kernel"),
        "{stdout}"
    );
    let (code, stdout) = list(dir, &[&app, &plugin]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("2 capture(s) (0 incomplete)"), "{stdout}");
    // In either order.
    let (code, stdout) = list(dir, &[&plugin, &app]);
    assert_eq!(code, 0, "{stdout}");

    let both = ["--image", s(&app), "--image", s(&plugin)];
    for (d, holder) in [(&ds[0], &plugin), (&ds[1], &app)] {
        // replay verifies, with the image of the binary that holds it.
        let mut args = vec!["replay", "--verify", "--allow-missing-globals"];
        args.extend(both);
        args.push(s(d));
        let out = reprise(&args);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("verification: PASS"), "{stdout}");
        let from = format!("of the offload binary in {}", holder.display());
        assert!(stdout.contains(&from), "{stdout}");

        // inspect finds it complete, its image from that binary.
        let mut args = vec!["inspect"];
        args.extend(both);
        args.push(s(d));
        let out = reprise(&args);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("status    complete"), "{stdout}");
        assert!(stdout.contains(&from), "{stdout}");

        // tune opens it: the host executor then refuses a sweep for its
        // own reason, never for the image.
        let mut args = vec!["tune", "--allow-missing-globals"];
        args.extend(both);
        args.push(s(d));
        let out = reprise(&args);
        let (_, stderr) = text(&out);
        assert_exit(&out, 2);
        assert!(stderr.contains("host executor"), "{stderr}");
        assert!(!stderr.contains("none of the images"), "{stderr}");
    }

    // check replays both.
    let results = root.path().join("results.jsonl");
    let mut args = vec!["check", "--allow-missing-globals", "--results", s(&results)];
    args.extend(both);
    args.push(s(dir));
    let out = reprise(&args);
    let (stdout, _) = text(&out);
    assert_exit(&out, 0);
    assert!(stdout.contains("passed        2"), "{stdout}");

    // A capture neither binary holds (another program's) is refused by
    // each command, naming what each holds.
    let other = fixtures().join("saxpy");
    let foreign = descriptors(&other).remove(0);
    let holds = [
        "is in none of the images".to_string(),
        format!("{} holds __omp_offloading_", app.display()),
        format!("{} holds __omp_offloading_", plugin.display()),
        "_plugin_scale_l".to_string(),
    ];
    let holds: Vec<&str> = holds.iter().map(String::as_str).collect();
    for cmd in [
        &["replay", "--verify", "--allow-missing-globals"][..],
        &["tune", "--allow-missing-globals"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(both);
        args.push(s(&foreign));
        assert_error(&reprise(&args), &holds);
    }
    let mut args = vec!["inspect"];
    args.extend(both);
    args.push(s(&foreign));
    let out = reprise(&args);
    assert_exit(&out, 1);
    for h in &holds {
        assert!(text(&out).0.contains(h), "{}", text(&out).0);
    }
    let (code, stdout) = list(&other, &[&app, &plugin]);
    assert_eq!(code, 1, "{stdout}");
    for h in &holds {
        assert!(stdout.contains(h), "{stdout}");
    }
    let results = root.path().join("foreign.jsonl");
    let mut args = vec!["check", "--allow-missing-globals", "--results", s(&results)];
    args.extend(both);
    args.push(s(&other));
    let out = reprise(&args);
    assert_exit(&out, 2);
    assert!(text(&out).0.contains("refused       1"), "{}", text(&out).0);
    for h in &holds {
        assert!(text(&out).0.contains(h), "{}", text(&out).0);
    }
}

#[test]
fn two_applications_list_each_capture_with_its_own_binary() {
    // Listing and inspecting run nothing: no LLVM 16 needed.
    let (saxpy, two) = (fixtures().join("saxpy"), fixtures().join("two"));
    let (saxpy_bin, two_bin) = (saxpy.join("saxpy"), two.join("two"));
    for dir in [&saxpy, &two] {
        let (code, stdout) = list(dir, &[&saxpy_bin, &two_bin]);
        assert_eq!(code, 0, "{stdout}");
        assert!(stdout.contains("(0 incomplete)"), "{stdout}");
    }
    // One binary alone still leaves the other's captures incomplete.
    let (code, stdout) = list(&two, &[&saxpy_bin]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("2 capture(s) (2 incomplete)"), "{stdout}");
    for d in descriptors(&two) {
        let out = reprise(&[
            "inspect",
            "--image",
            s(&saxpy_bin),
            "--image",
            s(&two_bin),
            s(&d),
        ]);
        assert_exit(&out, 0);
        let (stdout, _) = text(&out);
        assert!(stdout.contains("status    complete"), "{stdout}");
        let from = format!("of the offload binary in {}", two_bin.display());
        assert!(stdout.contains(&from), "{stdout}");
    }
    // A third program's capture is in neither.
    let update = fixtures().join("update");
    let (code, stdout) = list(&update, &[&saxpy_bin, &two_bin]);
    assert_eq!(code, 1, "{stdout}");
    for want in [
        "is in none of the images".to_string(),
        format!(
            "{} holds __omp_offloading_fe00_65c005_main_l17",
            saxpy_bin.display()
        ),
        format!(
            "{} holds __omp_offloading_fe00_65c008_main_l17, __omp_offloading_fe00_65c008_main_l20",
            two_bin.display()
        ),
    ] {
        assert!(stdout.contains(&want), "{want}\n{stdout}");
    }
}

#[test]
fn one_image_in_two_files_is_one_choice_two_that_differ_are_refused() {
    // A plugin given again, or its image given beside the binary that
    // holds it, is the very same image: no ambiguity.
    let saxpy = fixtures().join("saxpy");
    let bin = saxpy.join("saxpy");
    let tmp = tempfile::tempdir().unwrap();
    let again = tmp.path().join("saxpy");
    std::fs::copy(&bin, &again).unwrap();
    let (code, stdout) = list(&saxpy, &[&bin, &again]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("(0 incomplete)"), "{stdout}");
    let out = reprise(&["extract", "--dir", s(tmp.path()), s(&bin)]);
    assert_exit(&out, 0);
    let image = tmp.path().join("saxpy.x86_64-pc-linux-gnu.so");
    let (code, stdout) = list(&saxpy, &[&image, &bin]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("(0 incomplete)"), "{stdout}");
    // Another image of the kernel (one byte more) is another choice: the
    // capture is refused, naming both.
    let other = tmp.path().join("other.so");
    let mut bytes = std::fs::read(&image).unwrap();
    bytes.push(0);
    std::fs::write(&other, bytes).unwrap();
    let (code, stdout) = list(&saxpy, &[&image, &other]);
    assert_eq!(code, 1, "{stdout}");
    let want = format!(
        "is in more than one of the images, and they differ ({}, {})",
        image.display(),
        other.display()
    );
    assert!(stdout.contains(&want), "{stdout}");
}

#[test]
fn a_binary_rewritten_in_place_is_looked_into_again() {
    // The entries of a binary are kept for the captures that follow, under
    // the file's identity: the same path written anew is another file.
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    let kernels = |path: &Path| -> Vec<String> {
        reprise::offload::images_in(path)
            .unwrap()
            .iter()
            .flat_map(|i| i.kernels.iter().cloned())
            .collect()
    };
    std::fs::copy(fixtures().join("saxpy/saxpy"), &app).unwrap();
    let first = kernels(&app);
    assert_eq!(first, ["__omp_offloading_fe00_65c005_main_l17"]);
    assert_eq!(kernels(&app), first, "looked into again, the same");
    std::fs::copy(fixtures().join("two/two"), &app).unwrap();
    assert_eq!(
        kernels(&app),
        [
            "__omp_offloading_fe00_65c008_main_l17",
            "__omp_offloading_fe00_65c008_main_l20"
        ]
    );
}
