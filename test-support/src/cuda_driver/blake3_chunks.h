// BLAKE3 (the hash of the chunk store's names) for hashing a store chunk on
// a GPU: one compression, one BLAKE3 chunk (up to 1 KiB of input) and one
// parent node, in the subset of C that C, CUDA and HIP share, so that the
// fixture kernels backends/cuda/fixtures/chunk_hash.cu and
// backends/amdgpu/fixtures/chunk_hash.hip (which include this file from
// here) and the simulators' C twins of them (kernels.c of each simulator)
// run the same code: b3_store_chunk is the kernel's whole body, run by
// every thread of a block on the GPU, and by one thread of each block in
// the simulators. B3_FN is `__device__` in device code and empty in C;
// B3_SYNC() is the block's barrier (`__syncthreads()`; nothing with one
// thread; a pthread barrier in the test that runs it on CPU threads).
//
// From the BLAKE3 specification (Aumasson, Neves, O'Connor, Wilcox-O'Hearn,
// 2020), section 2: the 32-bit words, the IV of SHA-256, seven rounds of
// the G function with the message permuted between rounds, the flags, and
// a tree in which each parent's left subtree holds the largest power of two
// of 1 KiB chunks that leaves at least one for the right. Hashing the
// chunks' chaining values bottom up, in place with doubling strides (node
// i absorbs node i + s when i is a multiple of 2s), builds exactly that
// tree, and its last parent is the root.
#ifndef B3_FN
#define B3_FN
#endif

#define B3_CHUNK_LEN 1024u
#define B3_BLOCK_LEN 64u
#define B3_CHUNK_START 1u
#define B3_CHUNK_END 2u
#define B3_PARENT 4u
#define B3_ROOT 8u

B3_FN static inline unsigned b3_rotr(unsigned w, unsigned c) {
  return (w >> c) | (w << (32u - c));
}

B3_FN static inline void b3_g(unsigned *s, int a, int b, int c, int d,
                              unsigned x, unsigned y) {
  s[a] = s[a] + s[b] + x;
  s[d] = b3_rotr(s[d] ^ s[a], 16);
  s[c] = s[c] + s[d];
  s[b] = b3_rotr(s[b] ^ s[c], 12);
  s[a] = s[a] + s[b] + y;
  s[d] = b3_rotr(s[d] ^ s[a], 8);
  s[c] = s[c] + s[d];
  s[b] = b3_rotr(s[b] ^ s[c], 7);
}

// Compresses one 64-byte block `m` (16 words) into the chaining value
// `cv` (8 words, updated): the first 8 words of the compression's output.
B3_FN static inline void b3_compress(unsigned *cv, const unsigned *block,
                                     unsigned long long counter,
                                     unsigned block_len, unsigned flags) {
  const unsigned iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                          0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
  const unsigned char perm[16] = {2, 6, 3, 10, 7, 0, 4, 13,
                                  1, 11, 12, 5, 9, 14, 15, 8};
  unsigned s[16], m[16], t[16];
  for (int i = 0; i < 8; i++) {
    s[i] = cv[i];
    s[i + 8] = iv[i];
  }
  s[12] = (unsigned)counter;
  s[13] = (unsigned)(counter >> 32);
  s[14] = block_len;
  s[15] = flags;
  for (int i = 0; i < 16; i++)
    m[i] = block[i];
  for (int r = 0; r < 7; r++) {
    b3_g(s, 0, 4, 8, 12, m[0], m[1]);
    b3_g(s, 1, 5, 9, 13, m[2], m[3]);
    b3_g(s, 2, 6, 10, 14, m[4], m[5]);
    b3_g(s, 3, 7, 11, 15, m[6], m[7]);
    b3_g(s, 0, 5, 10, 15, m[8], m[9]);
    b3_g(s, 1, 6, 11, 12, m[10], m[11]);
    b3_g(s, 2, 7, 8, 13, m[12], m[13]);
    b3_g(s, 3, 4, 9, 14, m[14], m[15]);
    for (int i = 0; i < 16; i++)
      t[i] = m[perm[i]];
    for (int i = 0; i < 16; i++)
      m[i] = t[i];
  }
  for (int i = 0; i < 8; i++)
    cv[i] = s[i] ^ s[i + 8];
}

// The chaining value (8 words) of the BLAKE3 chunk `counter` of an input:
// its `len` bytes (1 to 1024; 0 only for an empty input) at `in`, which the
// caller may read. `root` when the chunk is the whole input: then the
// result is the input's hash.
B3_FN static inline void b3_chunk(unsigned *cv, const unsigned char *in,
                                  unsigned len, unsigned long long counter,
                                  int root) {
  const unsigned iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                          0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
  for (int i = 0; i < 8; i++)
    cv[i] = iv[i];
  unsigned blocks = len == 0 ? 1 : (len + B3_BLOCK_LEN - 1) / B3_BLOCK_LEN;
  for (unsigned b = 0; b < blocks; b++) {
    unsigned at = b * B3_BLOCK_LEN;
    unsigned n = len - at < B3_BLOCK_LEN ? len - at : B3_BLOCK_LEN;
    unsigned words[16];
    for (int i = 0; i < 16; i++)
      words[i] = 0;
    // Little-endian words, the last block zero-padded.
    for (unsigned i = 0; i < n; i++)
      words[i / 4] |= (unsigned)in[at + i] << (8 * (i % 4));
    unsigned flags = 0;
    if (b == 0)
      flags |= B3_CHUNK_START;
    if (b + 1 == blocks) {
      flags |= B3_CHUNK_END;
      if (root)
        flags |= B3_ROOT;
    }
    b3_compress(cv, words, counter, n, flags);
  }
}

// The parent of chaining values `left` and `right` (8 words each), into
// `left`; `root` for the tree's root: then the result is the input's hash.
B3_FN static inline void b3_parent(unsigned *left, const unsigned *right,
                                   int root) {
  const unsigned iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                          0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
  unsigned block[16];
  for (int i = 0; i < 8; i++) {
    block[i] = left[i];
    block[i + 8] = right[i];
    left[i] = iv[i];
  }
  b3_compress(left, block, 0, B3_BLOCK_LEN, B3_PARENT | (root ? B3_ROOT : 0));
}

// How many BLAKE3 chunks `len` bytes make (at least one).
B3_FN static inline unsigned long long b3_chunks_of(unsigned long long len) {
  return len == 0 ? 1 : (len + B3_CHUNK_LEN - 1) / B3_CHUNK_LEN;
}

// The layout the kernel's `out` argument has, for `len` bytes cut into
// store chunks of `chunk_size`: the 32-byte hash of each store chunk, then
// scratch for the chaining values of each store chunk's BLAKE3 chunks
// (b3_chunks_of(chunk_size) of 8 words for every store chunk).
B3_FN static inline unsigned long long b3_store_chunks(unsigned long long len,
                                                        unsigned chunk_size) {
  return (len + chunk_size - 1) / chunk_size;
}
B3_FN static inline unsigned long long b3_out_words(unsigned long long len,
                                                     unsigned chunk_size) {
  unsigned long long n = b3_store_chunks(len, chunk_size);
  return 8 * n + 8 * n * b3_chunks_of(chunk_size);
}

#ifdef B3_SYNC
// The kernel's work for store chunk `c` (its block), as thread `tid` of
// `bdim`: the BLAKE3 chunks tid, tid + bdim, ... of the store chunk into
// its scratch, a barrier, then each level of the tree (the node pairs
// tid, tid + bdim, ... of the level) and a barrier after each, and thread
// 0 copies the root to the store chunk's hash. Every thread of a block
// makes the same calls of B3_SYNC().
B3_FN static inline void b3_store_chunk(const unsigned char *src,
                                        unsigned long long len, unsigned *out,
                                        unsigned chunk_size,
                                        unsigned long long c, unsigned tid,
                                        unsigned bdim) {
  unsigned long long start = c * chunk_size;
  if (chunk_size == 0 || start >= len)
    return;
  unsigned long long clen = len - start < chunk_size ? len - start : chunk_size;
  unsigned long long n = b3_chunks_of(clen);
  unsigned long long chunks = b3_store_chunks(len, chunk_size);
  unsigned *cvs = out + 8 * chunks + 8 * c * b3_chunks_of(chunk_size);
  for (unsigned long long j = tid; j < n; j += bdim) {
    unsigned long long at = j * B3_CHUNK_LEN;
    unsigned l =
        clen - at < B3_CHUNK_LEN ? (unsigned)(clen - at) : B3_CHUNK_LEN;
    b3_chunk(cvs + 8 * j, src + start + at, l, j, n == 1);
  }
  B3_SYNC();
  for (unsigned long long s = 1; s < n; s *= 2) {
    for (unsigned long long i = 2 * s * tid; i + s < n; i += 2 * s * bdim)
      b3_parent(cvs + 8 * i, cvs + 8 * (i + s), 2 * s >= n);
    B3_SYNC();
  }
  if (tid == 0)
    for (int w = 0; w < 8; w++)
      out[8 * c + w] = cvs[w];
}
#endif
