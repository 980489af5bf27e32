//! The chunk-hashing kernel's body (`b3_store_chunk` in
//! test-support/src/cuda_driver/blake3_chunks.h, which chunk_hash.cu and
//! chunk_hash.hip run on the GPU) on real threads: compiled with the C
//! compiler into a small program that runs each block's threads as
//! pthreads meeting at a pthread barrier where the kernel calls
//! `__syncthreads()`, so the work split between threads and the barriers
//! between the tree's levels are checked, as the simulators (one thread per
//! block) cannot. Its hashes must be the `blake3` crate's, for chunk sizes
//! that make trees with odd carries and short last chunks, and thread
//! counts that do and do not divide the work. Skipped without a C compiler
//! unless `REPRISE_REQUIRE_SIM=1`.

use std::path::Path;
use std::process::Command;

const HARNESS: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_barrier_t barrier;
#define B3_SYNC() pthread_barrier_wait(&barrier)
#include "blake3_chunks.h"

struct job {
  const unsigned char *src;
  unsigned long long len, c;
  unsigned *out;
  unsigned chunk_size, tid, bdim;
};

static void *run(void *arg) {
  struct job *j = arg;
  b3_store_chunk(j->src, j->len, j->out, j->chunk_size, j->c, j->tid, j->bdim);
  return NULL;
}

/* harness FILE CHUNK_SIZE THREADS: the hash of each store chunk, in hex. */
int main(int argc, char **argv) {
  if (argc != 4) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  unsigned long long len = (unsigned long long)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *src = malloc(len);
  if (!src || fread(src, 1, len, f) != len) return 2;
  unsigned chunk_size = (unsigned)atoi(argv[2]);
  unsigned threads = (unsigned)atoi(argv[3]);
  unsigned long long chunks = b3_store_chunks(len, chunk_size);
  unsigned *out = calloc(b3_out_words(len, chunk_size), 4);
  pthread_t *t = malloc(threads * sizeof *t);
  struct job *jobs = malloc(threads * sizeof *jobs);
  if (!out || !t || !jobs) return 2;
  for (unsigned long long c = 0; c < chunks; c++) {
    pthread_barrier_init(&barrier, NULL, threads);
    for (unsigned i = 0; i < threads; i++) {
      struct job j = {src, len, c, out, chunk_size, i, threads};
      jobs[i] = j;
      if (pthread_create(&t[i], NULL, run, &jobs[i])) return 2;
    }
    for (unsigned i = 0; i < threads; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
  }
  for (unsigned long long c = 0; c < chunks; c++) {
    for (int w = 0; w < 8; w++)
      for (int b = 0; b < 4; b++) printf("%02x", (out[8 * c + w] >> (8 * b)) & 0xff);
    printf("\n");
  }
  return 0;
}
"#;

#[test]
fn the_kernel_body_on_threads_at_barriers_hashes_as_blake3_does() {
    let header = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test-support/src/cuda_driver/blake3_chunks.h");
    let dir = tempfile_dir();
    let source = dir.join("harness.c");
    std::fs::write(&source, HARNESS).unwrap();
    std::fs::copy(&header, dir.join("blake3_chunks.h")).unwrap();
    let program = dir.join("harness");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let built = Command::new(words.next().unwrap_or("cc"))
        .args(words)
        .args(["-O2", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&program)
        .arg(&source)
        .output();
    let built = match built {
        Ok(o) => o,
        Err(e) if std::env::var("REPRISE_REQUIRE_SIM").as_deref() != Ok("1") => {
            return println!("skipped: no C compiler ({cc}: {e})");
        }
        Err(e) => panic!("REPRISE_REQUIRE_SIM=1 but no C compiler ({cc}: {e})"),
    };
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let len = 300 * 1024 + 77;
    let mut x = 0x853c_49e6_748f_ea9bu64;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let input = dir.join("input");
    std::fs::write(&input, &data).unwrap();
    for (chunk, threads) in [
        (4096usize, 1u32),
        (4096, 3),
        (5 * 1024 + 1, 2),
        (64 << 10, 7),
        (64 << 10, 64),
        (256 << 10, 5),
        (1 << 20, 16),
    ] {
        let out = Command::new(&program)
            .arg(&input)
            .arg(chunk.to_string())
            .arg(threads.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "{chunk} bytes, {threads} threads");
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        let want: Vec<String> = data
            .chunks(chunk)
            .map(|c| blake3::hash(c).to_hex().to_string())
            .collect();
        assert_eq!(got, want, "chunks of {chunk} bytes on {threads} threads");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory of this test's own.
fn tempfile_dir() -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("chunk-hash-threads-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
