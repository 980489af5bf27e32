//! A search's space: the product of its dimensions, each one list of
//! settings ([`Dimension`]); a candidate is one point of the product, its
//! index read in mixed radix (the last dimension fastest, as a grid's
//! nested loops). [`draw`] picks the candidates: in order, or distinct
//! points drawn without replacement from a seeded generator, so one seed
//! gives the same candidates in the same order.

use std::collections::HashSet;

use reprise_core::exec::LaunchConfig;

/// How the candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampler {
    /// Every point of the product, in order.
    Grid,
    /// Distinct points drawn at random, from a generator seeded with this.
    Random(u64),
}

/// One point of the product: a compile setting (an index into the
/// search's list of them) and a launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its compile setting, an index into the search's compile settings.
    pub compile: usize,
    /// Its launch geometry.
    pub config: LaunchConfig,
}

/// One setting a dimension of the search chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The grid (team counts).
    Grid([u32; 3]),
    /// The block (threads per team).
    Block([u32; 3]),
    /// Dynamic shared memory, bytes.
    SharedMem(u32),
    /// The compile setting, an index into the search's compile settings.
    Compile(usize),
}

impl Setting {
    /// Applies it to `c`.
    fn apply(self, c: &mut Candidate) {
        match self {
            Setting::Grid(g) => c.config.grid = g,
            Setting::Block(b) => c.config.block = b,
            Setting::SharedMem(s) => c.config.shared_mem = s,
            Setting::Compile(i) => c.compile = i,
        }
    }
}

/// One dimension: its values, each once, in the order given. A new
/// dimension of the search is one more of these (and a [`Setting`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    /// What gives it (a command line's flag, say), for [`Space::shape`].
    pub flag: &'static str,
    /// Its settings.
    pub values: Vec<Setting>,
}

impl Dimension {
    /// The dimension `flag` gives, its `values` each kept once.
    pub fn new(flag: &'static str, values: impl IntoIterator<Item = Setting>) -> Dimension {
        Dimension {
            flag,
            values: distinct(values),
        }
    }
}

/// The product of the dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// The dimensions, the last one varying fastest.
    pub dims: Vec<Dimension>,
}

impl Space {
    /// How many points the product holds (saturating).
    pub fn size(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |n, d| n.saturating_mul(d.values.len() as u64))
    }

    /// `4 (--num-teams) x 4 (--num-threads) x 1 (--shared-mem)`.
    pub fn shape(&self) -> String {
        let parts: Vec<String> = self
            .dims
            .iter()
            .map(|d| format!("{} ({})", d.values.len(), d.flag))
            .collect();
        parts.join(" x ")
    }

    /// The candidate at `index` (below [`size`](Self::size)): `base`
    /// (and the first compile setting) with each dimension's setting
    /// applied.
    pub fn point(&self, mut index: u64, base: LaunchConfig) -> Candidate {
        let mut c = Candidate {
            compile: 0,
            config: base,
        };
        for d in self.dims.iter().rev() {
            let n = d.values.len() as u64;
            d.values[(index % n) as usize].apply(&mut c);
            index /= n;
        }
        c
    }
}

/// The indices of `n` candidates of a product of `size`: [`Sampler::Grid`]
/// the first `n` in order, [`Sampler::Random`] `n` distinct ones drawn
/// with its seed (the same seed, the same indices in the same order).
pub fn draw(size: u64, n: u64, sampler: Sampler) -> Vec<u64> {
    let n = n.min(size);
    match sampler {
        Sampler::Grid => (0..n).collect(),
        Sampler::Random(seed) => {
            let mut rng = fastrand::Rng::with_seed(seed);
            if n.saturating_mul(2) >= size {
                // A dense draw: a shuffle of all, then the first n.
                let mut all: Vec<u64> = (0..size).collect();
                rng.shuffle(&mut all);
                all.truncate(n as usize);
                all
            } else {
                // A sparse draw: redraw what was drawn before (fewer than
                // half are taken, so each draw is new more often than not).
                let mut seen = HashSet::new();
                let mut out = Vec::with_capacity(n as usize);
                while (out.len() as u64) < n {
                    let i = rng.u64(0..size);
                    if seen.insert(i) {
                        out.push(i);
                    }
                }
                out
            }
        }
    }
}

/// Whether the capture records a team and a thread count to measure as
/// `recorded` (LLVM 16's may record none).
fn known(recorded: LaunchConfig) -> bool {
    recorded.grid[0] != 0 && recorded.block[0] != 0
}

/// Every candidate a study of `candidates` measures: the recorded
/// configuration with each compile setting drawn (where the capture
/// records it, or the executor takes no `geometry`), then the other
/// candidates, each once.
pub fn study(candidates: &[Candidate], recorded: LaunchConfig, geometry: bool) -> Vec<Candidate> {
    let measured = !geometry || known(recorded);
    let mut out = distinct(candidates.iter().filter(|_| measured).map(|c| Candidate {
        compile: c.compile,
        config: recorded,
    }));
    out.extend(candidates.iter().copied().filter(|c| c.config != recorded));
    out
}

/// A whole sweep's geometries: the recorded one first (where the capture
/// records it), then the others of `configs`, each once.
pub fn full_list(configs: &[LaunchConfig], recorded: LaunchConfig) -> Vec<LaunchConfig> {
    let recorded = known(recorded).then_some(recorded);
    distinct(recorded.into_iter().chain(configs.iter().copied()))
}

/// `items`, each kept once, in the order first met.
fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests;
