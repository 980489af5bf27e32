//! The criterion benches of the workspace (`cargo bench`): sync against
//! async recording, replay, the globals codec and the recording allocator,
//! beside this file, through the library's harness, `reprise::bench`, on
//! the built-in kernels of `reprise::samples`; and the chunk store
//! (`store.rs`: chunk size and compression level, hashing and compression
//! per core against `memcpy`, the 40-launch saxpy on disk). This
//! library is empty, there because a package needs one to hold benches.
