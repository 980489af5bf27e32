//! Device images out of application binaries: LLVM's offloading compilers
//! put them in the binary's `.llvm.offloading` section (an offload binary
//! container, [`reprise_core::offload`]), one entry per target triple and
//! architecture, and LLVM 16's recorder never saves one beside its
//! captures. [`images_in`] lists a file's entries with the kernels each
//! defines; [`image_for`] picks the one that holds a capture's kernel.
//!
//! A file is untrusted input, and a small one can describe much: thousands
//! of entries sharing one large image. So the images borrow the file's
//! bytes ([`ImageBytes`]) instead of each copying its own, each distinct
//! image (byte range) is looked into for its kernels once, and the reader
//! bounds the rest ([`reprise_core::offload`]: at most
//! [`offload::MAX_ENTRIES`] entries, whose images add up to at most the
//! file's section, or [`offload::MIN_IMAGES_LIMIT`]), an error naming the
//! file and the limit past it.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reprise_core::image::{EM_AMDGPU, EM_CUDA, ImageKind, sniff};
use reprise_core::offload::{self, ImageFormat};
use reprise_core::record::BackendKind;

use super::open::not_found;
use crate::error::{CaptureProblem, Error, Result};

/// Largest application binary read for its device images: 4 GiB.
pub const APPLICATION_LIMIT: u64 = 4 << 30;

/// The name of the ELF section LLVM's offloading compilers put device images
/// in.
pub const SECTION: &str = ".llvm.offloading";

/// The bytes of one device image: a range of the file read, shared by
/// every image of that file (cloning one copies nothing).
#[derive(Clone)]
pub struct ImageBytes {
    file: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl Deref for ImageBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // The range was cut from this very file (`images`).
        self.file.get(self.range.clone()).unwrap_or_default()
    }
}

impl AsRef<[u8]> for ImageBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for ImageBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ImageBytes {}

impl std::fmt::Debug for ImageBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (len, at) = (self.range.len(), self.range.start);
        write!(f, "ImageBytes({len} bytes at offset {at})")
    }
}

/// One device image an application binary (or offload container) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceImage {
    /// Its place among the file's entries (from 0).
    pub index: usize,
    /// The target triple (`x86_64-pc-linux-gnu`, `nvptx64-nvidia-cuda`,
    /// `amdgcn-amd-amdhsa`).
    pub triple: String,
    /// The architecture (`sm_80`, `gfx90a`; empty for the host).
    pub arch: String,
    /// The container's word for what the image is.
    pub format: ImageFormat,
    /// What the image is, from its bytes.
    pub kind: ImageKind,
    /// The kernels it defines (empty when they cannot be told); entries
    /// that share an image share the list.
    pub kernels: Arc<[String]>,
    /// The image, borrowed from the file.
    pub bytes: ImageBytes,
}

impl DeviceImage {
    /// A file name for the image: `APP.TRIPLE[.ARCH][.INDEX].EXT`, the index
    /// only when another entry has the same triple and architecture
    /// (`shared`).
    pub fn file_name(&self, app: &str, shared: bool) -> String {
        let ext = match (self.kind, self.format) {
            (ImageKind::Ptx, _) | (_, ImageFormat::Ptx) => "ptx",
            (ImageKind::Fatbin, _) => "fatbin",
            (ImageKind::Bitcode, _) => "bc",
            (ImageKind::Elf { machine, .. }, _) => match machine {
                EM_CUDA => "cubin",
                EM_AMDGPU => "hsaco",
                _ => "so",
            },
            _ => "bin",
        };
        let mut name = format!("{app}.{}", self.triple);
        if !self.arch.is_empty() {
            name.push('.');
            name.push_str(&self.arch);
        }
        if shared {
            name.push_str(&format!(".{}", self.index));
        }
        format!("{name}.{ext}")
    }
}

/// The kernels `image` defines, where its kind tells them (as its
/// executor's [`ImageInfo`](reprise_core::image::ImageInfo) reads them).
pub fn kernels_of(image: &[u8]) -> Vec<String> {
    sniff(image)
        .backend()
        .ok()
        .and_then(crate::images::image_info)
        .map(|info| info.kernels(image))
        .unwrap_or_default()
}

/// The device images in the offload container `section` (the contents of
/// a `.llvm.offloading` section of `file`, or all of a container file), for
/// messages about `path`. Each distinct image (offset and length) is
/// sniffed and looked into for its kernels once, however many entries
/// share it.
fn entries(file: &Arc<Vec<u8>>, section: &[u8], path: &Path) -> Result<Vec<DeviceImage>> {
    let mut seen: HashMap<(usize, usize), Looked> = HashMap::new();
    offload::entries(section)
        .enumerate()
        .map(|(index, e)| {
            let e = e.map_err(|e| Error::capture(path, CaptureProblem::Offload(e)))?;
            let start = offset_in(file, e.image);
            let range = start..start + e.image.len();
            let (kind, kernels) = seen
                .entry((range.start, range.len()))
                .or_insert_with(|| (sniff(e.image), kernels_of(e.image).into()))
                .clone();
            Ok(DeviceImage {
                index,
                triple: e.triple().unwrap_or("").to_string(),
                arch: e.arch().unwrap_or("").to_string(),
                format: e.format,
                kind,
                kernels,
                bytes: ImageBytes {
                    file: Arc::clone(file),
                    range,
                },
            })
        })
        .collect()
}

/// What an image is and the kernels it defines, found once per image.
type Looked = (ImageKind, Arc<[String]>);

/// Where `inner`, a subslice of `outer`, starts in it.
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    // Addresses compared, never dereferenced: `inner` was cut from
    // `outer` by the offload reader.
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

/// The device images `path` holds: the entries of an application binary's
/// `.llvm.offloading` section, or of an offload container file. An error
/// when it holds none (a plain device image, say).
pub fn images_in(path: &Path) -> Result<Vec<DeviceImage>> {
    let (bytes, images) = looked_into(path)?;
    let section = SECTION;
    let images = images.ok_or_else(|| {
        let kind = sniff(&bytes);
        Error::capture(path, CaptureProblem::NoDeviceImages { kind, section })
    })?;
    if images.is_empty() {
        return Err(Error::capture(path, CaptureProblem::NoEntries { section }));
    }
    Ok(images)
}

/// The application binary (or offload container) `path`, looked into: its
/// entries when it is an offload container or an ELF file with a
/// `.llvm.offloading` section (`None` when it is neither), and its bytes,
/// which are the whole file only when it has no entries (the file is then
/// the image).
///
/// `list` and `check` look for every capture's image in the same files,
/// and an application binary can be GiBs around entries of KiBs: the
/// entries of a file this process has looked into are kept (their bytes
/// alone, up to [`SEEN_BYTES`] in all) under the file's identity (device,
/// inode, length, modification and change times) and not read again.
fn looked_into(path: &Path) -> Result<LookedInto> {
    let (file, _) = super::open_regular(path)?.ok_or_else(|| not_found(path, "open"))?;
    let id = identity(&file);
    if let Some(images) = id.and_then(seen) {
        return Ok((Arc::default(), Some(images)));
    }
    let role = "application binary";
    let bytes = Arc::new(super::open::read_open(file, path, role, APPLICATION_LIMIT)?);
    let Some(images) = contained(&bytes, path)? else {
        return Ok((bytes, None));
    };
    let images = compact(images);
    if let Some(id) = id {
        keep(id, &images);
    }
    Ok((Arc::default(), Some(images)))
}

/// A file's bytes and its entries ([`looked_into`]).
type LookedInto = (Arc<Vec<u8>>, Option<Vec<DeviceImage>>);

/// Most bytes of entries kept for files looked into ([`looked_into`]).
const SEEN_BYTES: usize = 256 << 20;

/// A file's identity: device, inode, length, modification and change
/// times (to the nanosecond).
type Identity = [i64; 7];

fn identity(file: &std::fs::File) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    Some([
        m.dev() as i64,
        m.ino() as i64,
        m.len() as i64,
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ])
}

/// The entries of the files looked into, newest last.
static SEEN: std::sync::Mutex<Vec<(Identity, Vec<DeviceImage>)>> =
    std::sync::Mutex::new(Vec::new());

/// The entries kept for the file `id`, if they are.
fn seen(id: Identity) -> Option<Vec<DeviceImage>> {
    let seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.iter()
        .find(|(i, _)| *i == id)
        .map(|(_, images)| images.clone())
}

/// Keeps the entries of the file `id`, the oldest kept given up to stay
/// within [`SEEN_BYTES`].
fn keep(id: Identity, images: &[DeviceImage]) {
    let size = |images: &[DeviceImage]| images.first().map_or(0, |i| i.bytes.file.len());
    if size(images) > SEEN_BYTES {
        return;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|(i, _)| *i != id);
    seen.push((id, images.to_vec()));
    while seen.iter().map(|(_, i)| size(i)).sum::<usize>() > SEEN_BYTES {
        seen.remove(0);
    }
}

/// The same entries, their bytes copied out of the file into a buffer of
/// their own that holds nothing else, so that the file's bytes can go.
fn compact(images: Vec<DeviceImage>) -> Vec<DeviceImage> {
    let Some(start) = images.iter().map(|i| i.bytes.range.start).min() else {
        return images;
    };
    let ends = images.iter().map(|i| i.bytes.range.end);
    let end = ends.max().unwrap_or(start);
    let kept = images[0].bytes.file.get(start..end).unwrap_or_default();
    let file = Arc::new(kept.to_vec());
    images
        .into_iter()
        .map(|i| DeviceImage {
            bytes: ImageBytes {
                file: Arc::clone(&file),
                range: i.bytes.range.start - start..i.bytes.range.end - start,
            },
            ..i
        })
        .collect()
}

/// The entries of `bytes` when it is an offload container or an ELF file
/// with a `.llvm.offloading` section; `None` when it is neither.
fn contained(bytes: &Arc<Vec<u8>>, path: &Path) -> Result<Option<Vec<DeviceImage>>> {
    if sniff(bytes) == ImageKind::OffloadBinary {
        return entries(bytes, bytes, path).map(Some);
    }
    match offload::elf_section(bytes, SECTION)
        .map_err(|e| Error::capture(path, CaptureProblem::Offload(e)))?
    {
        Some(section) => entries(bytes, section, path).map(Some),
        None => Ok(None),
    }
}

/// Where a capture's image came from when it was not the capture's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageOrigin {
    /// The file given.
    pub path: PathBuf,
    /// The entry taken from it, when it is an application binary or an
    /// offload container (`None`: the file is the image).
    pub entry: Option<(usize, String, String)>,
    /// Whether it was compiled from the capture's IR
    /// ([`super::OpenOptions::image_compiled`]): the descriptor's image
    /// checksum is not of it.
    pub compiled: bool,
}

/// The image in `path` for a capture of `kernel` (whose descriptor names
/// `backend`, if it does): `path` itself when it is a device image, else the
/// one entry of its `.llvm.offloading` section (or offload container) that
/// defines `kernel` and runs on `backend`. Several such entries, or none,
/// are an error listing what the file holds.
pub fn image_for(
    path: &Path,
    kernel: &str,
    backend: Option<BackendKind>,
) -> Result<(Vec<u8>, ImageOrigin)> {
    let (bytes, images) = looked_into(path)?;
    pick(path, bytes, images, kernel, backend)
}

/// The image for a capture of `kernel` (descriptor `descriptor`, for
/// `backend` when known) among the files `paths`, each as [`image_for`]
/// reads it: with one file, exactly [`image_for`]; with several, the file
/// whose offload entries (or, for a plain device image, whose own kernels)
/// hold the kernel (an application binary and the plugins it `dlopen`s,
/// say). A kernel that no file holds is an error naming what each holds,
/// and one that several hold differently is an error naming them. `None`
/// when `paths` is empty: the capture's own image is used.
pub fn image_among(
    paths: &[PathBuf],
    descriptor: &Path,
    kernel: &str,
    backend: Option<BackendKind>,
) -> Option<Result<(Vec<u8>, ImageOrigin)>> {
    match paths {
        [] => None,
        [one] => Some(image_for(one, kernel, backend)),
        several => Some(among(several, descriptor, kernel, backend)),
    }
}

/// One file [`among`] read: what it holds and whether it holds the kernel.
struct Candidate<'p> {
    path: &'p Path,
    bytes: Arc<Vec<u8>>,
    images: Option<Vec<DeviceImage>>,
    /// The bytes of each image of it that defines the kernel.
    holding: Vec<ImageBytes>,
}

/// How many of a file's kernels a refusal names before counting the rest.
const KERNELS_NAMED: usize = 8;

fn among(
    paths: &[PathBuf],
    descriptor: &Path,
    kernel: &str,
    backend: Option<BackendKind>,
) -> Result<(Vec<u8>, ImageOrigin)> {
    let runs = |kind: ImageKind| backend.is_none_or(|b| kind.backend() == Ok(b));
    let mut read = Vec::with_capacity(paths.len());
    for path in paths {
        let (bytes, images) = looked_into(path)?;
        let holding = match &images {
            Some(images) => images
                .iter()
                .filter(|i| i.kernels.iter().any(|k| k == kernel) && runs(i.kind))
                .map(|i| i.bytes.clone())
                .collect(),
            None if runs(sniff(&bytes)) && kernels_of(&bytes).iter().any(|k| k == kernel) => {
                vec![ImageBytes {
                    range: 0..bytes.len(),
                    file: Arc::clone(&bytes),
                }]
            }
            None => Vec::new(),
        };
        read.push(Candidate {
            path,
            bytes,
            images,
            holding,
        });
    }
    let holders: Vec<usize> = (0..read.len())
        .filter(|&i| !read[i].holding.is_empty())
        .collect();
    // Files that hold the very same images of the kernel (a plugin given
    // twice, or an entry extracted beside its binary) are one choice.
    let same = |a: &Candidate, b: &Candidate| a.holding == b.holding;
    match holders.as_slice() {
        [] => Err(Error::capture(
            descriptor,
            CaptureProblem::InNoImage {
                kernel: kernel.to_string(),
                backend,
                held: read.iter().map(held_by).collect::<Vec<_>>().join("; "),
            },
        )),
        [first, rest @ ..] if rest.iter().all(|&i| same(&read[*first], &read[i])) => {
            let Candidate {
                path,
                bytes,
                images,
                holding,
            } = read.swap_remove(*first);
            // Nothing else borrows the chosen file's bytes: no copy.
            drop((holding, read));
            pick(path, bytes, images, kernel, backend)
        }
        several => Err(Error::capture(
            descriptor,
            CaptureProblem::InSeveralImages {
                kernel: kernel.to_string(),
                files: several
                    .iter()
                    .map(|&i| read[i].path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            },
        )),
    }
}

/// What a file [`among`] read holds, for people: `PATH holds K1, K2`.
fn held_by(c: &Candidate) -> String {
    let mut kernels: Vec<String> = match &c.images {
        Some(images) => images
            .iter()
            .flat_map(|i| i.kernels.iter().cloned())
            .collect(),
        None => kernels_of(&c.bytes),
    };
    kernels.sort_unstable();
    kernels.dedup();
    let path = c.path.display();
    match kernels.len() {
        0 => format!("{path} holds no kernel reprise can find"),
        n if n > KERNELS_NAMED => format!(
            "{path} holds {} and {} more",
            kernels[..KERNELS_NAMED].join(", "),
            n - KERNELS_NAMED
        ),
        _ => format!("{path} holds {}", kernels.join(", ")),
    }
}

/// The image of `path` (its bytes, and its entries when it has any) for a
/// capture of `kernel`, as [`image_for`] chooses it.
fn pick(
    path: &Path,
    bytes: Arc<Vec<u8>>,
    images: Option<Vec<DeviceImage>>,
    kernel: &str,
    backend: Option<BackendKind>,
) -> Result<(Vec<u8>, ImageOrigin)> {
    let origin = |entry| ImageOrigin {
        path: path.to_path_buf(),
        entry,
        compiled: false,
    };
    let Some(images) = images else {
        // Nothing borrows the bytes any more: no copy.
        let bytes = Arc::try_unwrap(bytes).unwrap_or_else(|shared| shared.to_vec());
        return Ok((bytes, origin(None)));
    };
    let fits = |i: &&DeviceImage| {
        i.kernels.iter().any(|k| k == kernel) && backend.is_none_or(|b| i.kind.backend() == Ok(b))
    };
    let matching: Vec<&DeviceImage> = images.iter().filter(fits).collect();
    match matching.as_slice() {
        [one] => {
            let entry = (one.index, one.triple.clone(), one.arch.clone());
            Ok((one.bytes.to_vec(), origin(Some(entry))))
        }
        many => {
            let held = images
                .iter()
                .map(|i| {
                    let (index, triple, arch, kind) = (i.index, &i.triple, &i.arch, i.kind);
                    let sep = if arch.is_empty() { "" } else { " " };
                    let kernels = match i.kernels.is_empty() {
                        true => "none found".to_string(),
                        false => i.kernels.join(", "),
                    };
                    format!("#{index} {triple}{sep}{arch} ({kind}, kernels: {kernels})")
                })
                .collect::<Vec<_>>()
                .join("; ");
            if !many.is_empty() && backend.is_none() {
                return Err(Error::AmbiguousImage {
                    path: path.to_path_buf(),
                    kernel: kernel.to_string(),
                    held,
                });
            }
            let (kernel, section) = (kernel.to_string(), SECTION);
            let problem = match backend {
                Some(backend) if !many.is_empty() => CaptureProblem::SeveralEntriesFor {
                    kernel,
                    backend,
                    section,
                    held,
                },
                _ => CaptureProblem::NoEntryFor {
                    kernel,
                    backend,
                    section,
                    held,
                },
            };
            Err(Error::capture(path, problem))
        }
    }
}
