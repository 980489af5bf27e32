//! The search space: the compile settings, the dimensions, their product
//! and the draw of candidates from it.

use super::*;

/// How a candidate's image is built: the compile dimension of the search.
/// From IR (`--opt-level`) the capture's LLVM IR is compiled at a level;
/// JIT options load PTX (the recorded image, or on CUDA the PTX compiled
/// from IR) with them; both given, every level is crossed with every JIT
/// setting. Neither: the recorded image as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compile {
    /// The optimisation level the capture's IR is compiled at.
    pub level: Option<u8>,
    /// The JIT options the PTX is loaded with.
    pub jit: Option<JitOptions>,
}

impl Compile {
    /// Its name in rows and keys (`MAX_REGISTERS=32`, `O2`,
    /// `O2,MAX_REGISTERS=32`); none for the recorded image.
    pub fn label(&self) -> Option<String> {
        report::compile_label(
            self.level,
            self.jit.as_ref().map(ToString::to_string).as_deref(),
        )
    }

    /// Marks `row` as measured with it.
    pub(super) fn stamp(&self, row: &mut Row) {
        if let Some(o) = &self.jit {
            row.jit = Some(o.to_string());
        }
        if let Some(l) = self.level {
            row.opt_level = Some(l);
        }
    }
}

/// The compile settings `a` gives, in order: each optimisation level
/// (each once) crossed with each JIT setting, the JIT settings varying
/// fastest; the recorded image alone where neither is given.
pub fn compiles(a: &TuneArgs) -> Vec<Compile> {
    let mut levels: Vec<Option<u8>> = Vec::new();
    for &l in &a.ir.opt_level {
        if !levels.contains(&Some(l)) {
            levels.push(Some(l));
        }
    }
    if levels.is_empty() {
        levels.push(None);
    }
    let mut jit: Vec<Option<JitOptions>> = a.jit.settings().into_iter().map(Some).collect();
    if jit.is_empty() {
        jit.push(None);
    }
    let mut out = Vec::with_capacity(levels.len() * jit.len());
    for &level in &levels {
        for j in &jit {
            out.push(Compile {
                level,
                jit: j.clone(),
            });
        }
    }
    out
}

/// One point of the product: a compile setting (an index into
/// [`compiles`]) and a launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its compile setting, an index into the search's [`Compile`]s.
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
    /// The compile setting, an index into the search's [`Compile`]s.
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
    /// The flag that gives it.
    pub flag: &'static str,
    /// Its settings.
    pub values: Vec<Setting>,
}

impl Dimension {
    fn new(flag: &'static str, values: impl IntoIterator<Item = Setting>) -> Dimension {
        let mut v: Vec<Setting> = Vec::new();
        for s in values {
            if !v.contains(&s) {
                v.push(s);
            }
        }
        Dimension { flag, values: v }
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

/// The indices of the candidates: `grid` the first `n` in order, `random`
/// `n` distinct ones drawn with `seed` (the same seed, the same indices in
/// the same order).
pub fn draw(size: u64, n: u64, sampler: Sampler, seed: u64) -> Vec<u64> {
    let n = n.min(size);
    match sampler {
        Sampler::Grid => (0..n).collect(),
        Sampler::Random => {
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

/// The search space the lists give (the recorded value where a list is
/// not given); the compile setting is its first dimension where there is
/// one. `geometry`: whether the executor takes a launch geometry (a host
/// kernel's search is over its compile settings alone).
pub fn space(a: &TuneArgs, recorded: LaunchConfig, geometry: bool) -> Result<Space> {
    let compiles = compiles(a);
    let mut dims = Vec::new();
    if compiles != [Compile::default()] {
        let flag = match (a.ir.opt_level.is_empty(), a.jit.given()) {
            (false, true) => "--opt-level x JIT settings",
            (false, false) => "--opt-level",
            _ => "JIT settings",
        };
        dims.push(Dimension::new(
            flag,
            (0..compiles.len()).map(Setting::Compile),
        ));
    }
    if !geometry {
        if a.num_teams.is_some() || a.num_threads.is_some() || a.shared_mem.is_some() {
            return Err(reprise::Error::NoGeometry.into());
        }
        return Ok(Space { dims });
    }
    let (teams, threads, shared) = crate::tune::geometry_lists(a, recorded, "search")?;
    dims.extend([
        Dimension::new("--num-teams", teams.into_iter().map(Setting::Grid)),
        Dimension::new("--num-threads", threads.into_iter().map(Setting::Block)),
        Dimension::new("--shared-mem", shared.into_iter().map(Setting::SharedMem)),
    ]);
    Ok(Space { dims })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(g: u32, b: u32, s: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [g, 1, 1],
            block: [b, 1, 1],
            shared_mem: s,
        }
    }

    fn space3() -> Space {
        Space {
            dims: vec![
                Dimension::new("a", [1, 2, 3].map(|g| Setting::Grid([g, 1, 1]))),
                Dimension::new("b", [10, 20, 10].map(|b| Setting::Block([b, 1, 1]))),
                Dimension::new("c", [0, 5].map(Setting::SharedMem)),
            ],
        }
    }

    #[test]
    fn the_product_is_read_in_mixed_radix_last_dimension_fastest() {
        let s = space3();
        // The repeated block is one value.
        assert_eq!(s.size(), 3 * 2 * 2);
        let base = cfg(9, 9, 9);
        assert_eq!(s.point(0, base).config, cfg(1, 10, 0));
        assert_eq!(s.point(1, base).config, cfg(1, 10, 5));
        assert_eq!(s.point(2, base).config, cfg(1, 20, 0));
        assert_eq!(s.point(11, base).config, cfg(3, 20, 5));
        let all: HashSet<String> = (0..s.size())
            .map(|i| shard::key(&s.point(i, base).config))
            .collect();
        assert_eq!(all.len(), 12);
        assert_eq!(s.shape(), "3 (a) x 2 (b) x 2 (c)");
    }

    #[test]
    fn levels_cross_jit_settings_into_distinct_labels() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            a: TuneArgs,
        }
        let mut a = <Cli as clap::Parser>::parse_from(["t", "x.json", "--opt-level", "O1,O3,O1"]).a;
        let levels: Vec<Option<u8>> = compiles(&a).iter().map(|c| c.level).collect();
        assert_eq!(levels, [Some(1), Some(3)]);
        assert!(compiles(&a).iter().all(|c| c.jit.is_none()));
        a.jit.max_registers = Some(crate::tune::lists::ValueList(vec![32, 64]));
        let labels: Vec<String> = compiles(&a).iter().filter_map(Compile::label).collect();
        assert_eq!(
            labels,
            [
                "O1,MAX_REGISTERS=32",
                "O1,MAX_REGISTERS=64",
                "O3,MAX_REGISTERS=32",
                "O3,MAX_REGISTERS=64"
            ]
        );
        let mut row: Row = serde_json::from_str(
            r#"{"grid":[4,1,1],"block":[256,1,1],"shared_mem":0,"recorded":true,"status":"verified","detail":null,"times_ns":[5]}"#,
        )
        .unwrap();
        compiles(&a)[3].stamp(&mut row);
        assert_eq!(row.compile().as_deref(), Some("O3,MAX_REGISTERS=64"));
    }

    #[test]
    fn random_draws_are_distinct_seeded_and_capped() {
        for size in [1u64, 7, 100, 1 << 40] {
            for n in [1u64, 3, 50] {
                let a = draw(size, n, Sampler::Random, 7);
                assert_eq!(a, draw(size, n, Sampler::Random, 7), "same seed");
                assert_eq!(a.len() as u64, n.min(size));
                let set: HashSet<u64> = a.iter().copied().collect();
                assert_eq!(set.len(), a.len(), "distinct");
                assert!(a.iter().all(|&i| i < size));
            }
        }
        assert_ne!(
            draw(1000, 20, Sampler::Random, 1),
            draw(1000, 20, Sampler::Random, 2)
        );
        assert_eq!(draw(5, 9, Sampler::Grid, 3), [0, 1, 2, 3, 4]);
    }
}
