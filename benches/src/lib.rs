//! The criterion benches of the workspace (`cargo bench`): sync against
//! async recording, replay, the globals codec and the recording allocator,
//! beside this file. They measure through the library's harness,
//! `reprise::bench`, on the built-in kernels of `reprise::samples`; this
//! library is empty, there because a package needs one to hold benches.
