//! The HSA runtime, once per process: loaded on first use, initialised by
//! each executor (`hsa_init` counts, `hsa_shut_down` balances it when the
//! executor and everything made from it are gone), and the agents and
//! memory pools an executor uses.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use hsa_sys::*;
use reprise_core::exec::LaunchLimits;

use crate::error::{AmdError, check};

/// Bytes of LDS (group segment) one work-group may use, static and dynamic
/// together, on every AMD GPU the code objects target.
const LDS_PER_WORKGROUP: u32 = 65536;

/// The runtime library, loaded once (a failed load is remembered).
fn library() -> Result<&'static Hsa, AmdError> {
    static HSA: OnceLock<Result<Hsa, LoadError>> = OnceLock::new();
    HSA.get_or_init(Hsa::load)
        .as_ref()
        .map_err(|e| AmdError::RuntimeNotFound(e.clone()))
}

/// One initialisation of the runtime and the agents and pools found with
/// it; shut down when the last reference goes.
#[derive(Debug)]
pub struct Runtime {
    /// The entry points.
    pub hsa: &'static Hsa,
    /// The GPU agent used.
    pub gpu: hsa_agent_t,
    /// A CPU agent (the source and destination of host copies).
    pub cpu: hsa_agent_t,
    /// The GPU's coarse-grained global pool: the region.
    pub device_pool: hsa_amd_memory_pool_t,
    /// Its allocation granule.
    pub granule: u64,
    /// The CPU's kernarg pool: kernel arguments.
    pub kernarg_pool: hsa_amd_memory_pool_t,
    /// The CPU's fine-grained pool: host staging buffers.
    pub host_pool: hsa_amd_memory_pool_t,
    /// The GPU agent's ISA name ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").
    pub isa: String,
    /// The GPU agent's name ("gfx90a").
    pub name: String,
    /// What one launch may ask of the agent: work-items per work-group
    /// (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`), per dimension
    /// (`WORKGROUP_MAX_DIM`), work-items per dimension of a grid
    /// (`GRID_MAX_DIM`), and the 64 KiB of LDS a work-group may use.
    pub limits: LaunchLimits,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: balances the `hsa_init` of `Runtime::open`; every object
        // made from this runtime holds an `Arc` to it and is gone.
        let rc = unsafe { (self.hsa.fns.hsa_shut_down)() };
        if rc != status::SUCCESS {
            log_warn(&format!("hsa_shut_down: {}", crate::error::status_name(rc)));
        }
    }
}

fn log_warn(m: &str) {
    eprintln!("warning: {m}");
}

impl Runtime {
    /// Initialises the runtime and takes GPU agent `ordinal`.
    pub fn open(ordinal: i32) -> Result<Arc<Runtime>, AmdError> {
        let hsa = library()?;
        // SAFETY: no arguments; a failure leaves nothing to undo.
        let rc = unsafe { (hsa.fns.hsa_init)() };
        if rc != status::SUCCESS {
            return Err(AmdError::NoGpu { status: Some(rc) });
        }
        // From here on a failure must shut the runtime down again.
        let guard = InitGuard(hsa);
        crate::fault::watch(hsa)?;
        let agents = agents(hsa)?;
        let gpus: Vec<hsa_agent_t> = agents
            .iter()
            .filter(|(_, kind)| *kind == device_type::GPU)
            .map(|(a, _)| *a)
            .collect();
        if gpus.is_empty() {
            return Err(AmdError::NoGpu { status: None });
        }
        let gpu = usize::try_from(ordinal)
            .ok()
            .and_then(|i| gpus.get(i))
            .copied()
            .ok_or(AmdError::NoSuchDevice {
                ordinal,
                count: gpus.len(),
            })?;
        let cpu = agents
            .iter()
            .find(|(_, kind)| *kind == device_type::CPU)
            .map(|(a, _)| *a)
            .ok_or(AmdError::NoPool("CPU agent"))?;
        let device_pool = find_pool(hsa, gpu, global_flag::COARSE_GRAINED, 0)?.ok_or(
            AmdError::NoPool("coarse-grained global memory pool on the GPU agent"),
        )?;
        let kernarg_pool = find_pool(hsa, cpu, global_flag::KERNARG_INIT, 0)?
            .ok_or(AmdError::NoPool("kernarg memory pool on the CPU agent"))?;
        let host_pool = find_pool(
            hsa,
            cpu,
            global_flag::FINE_GRAINED,
            global_flag::KERNARG_INIT,
        )?
        // A runtime whose only fine-grained host pool is the kernarg pool
        // stages through that.
        .unwrap_or(kernarg_pool);
        let granule: usize = pool_info_of(hsa, device_pool, pool_info::RUNTIME_ALLOC_GRANULE)?;
        let name = agent_name(hsa, gpu)?;
        let isa = isa_name(hsa, gpu)?.unwrap_or_else(|| format!("amdgcn-amd-amdhsa--{name}"));
        let workgroup_max: u32 = agent_info_of(hsa, gpu, agent_info::WORKGROUP_MAX_SIZE)?;
        let workgroup_max_dim: [u16; 3] = agent_info_of(hsa, gpu, agent_info::WORKGROUP_MAX_DIM)?;
        let grid: hsa_dim3_t = agent_info_of(hsa, gpu, agent_info::GRID_MAX_DIM)?;
        std::mem::forget(guard);
        Ok(Arc::new(Runtime {
            hsa,
            gpu,
            cpu,
            device_pool,
            granule: (granule as u64).max(4096),
            kernarg_pool,
            host_pool,
            isa,
            name,
            limits: LaunchLimits {
                threads_per_block: workgroup_max,
                block: workgroup_max_dim.map(u32::from),
                // HSA counts a grid in work-items, not in work-groups.
                grid: [0; 3],
                grid_threads: [grid.x, grid.y, grid.z],
                shared_default: LDS_PER_WORKGROUP,
                shared_optin: LDS_PER_WORKGROUP,
            },
        }))
    }

    /// Allocates `len` bytes from `pool`.
    pub fn allocate(
        &self,
        pool: hsa_amd_memory_pool_t,
        len: usize,
    ) -> Result<*mut c_void, AmdError> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer; the pool handle came from
        // this runtime.
        let rc =
            unsafe { (self.hsa.fns.hsa_amd_memory_pool_allocate)(pool, len.max(1), 0, &mut ptr) };
        check("hsa_amd_memory_pool_allocate", rc)?;
        Ok(ptr)
    }

    /// Lets the GPU agent reach host memory at `ptr`.
    pub fn allow_gpu(&self, ptr: *const c_void) -> Result<(), AmdError> {
        // SAFETY: one agent, valid for the call; `ptr` is a pool allocation
        // of this runtime.
        let rc = unsafe {
            (self.hsa.fns.hsa_amd_agents_allow_access)(1, &self.gpu, std::ptr::null(), ptr)
        };
        check("hsa_amd_agents_allow_access", rc)
    }

    /// Frees a pool allocation (errors only logged: called from `Drop`).
    pub fn free(&self, ptr: *mut c_void) {
        // SAFETY: `ptr` came from `allocate` and nothing uses it any more.
        let rc = unsafe { (self.hsa.fns.hsa_amd_memory_pool_free)(ptr) };
        if rc != status::SUCCESS {
            log_warn(&format!(
                "hsa_amd_memory_pool_free: {}",
                crate::error::status_name(rc)
            ));
        }
    }
}

/// Shuts the runtime down if opening fails after `hsa_init`.
struct InitGuard(&'static Hsa);

impl Drop for InitGuard {
    fn drop(&mut self) {
        // SAFETY: balances the successful `hsa_init` of a failed open.
        unsafe { (self.0.fns.hsa_shut_down)() };
    }
}

/// Every agent with its device type.
fn agents(hsa: &Hsa) -> Result<Vec<(hsa_agent_t, u32)>, AmdError> {
    unsafe extern "C" fn each(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the `Vec` handed to `hsa_iterate_agents` below,
        // alive for the call.
        let out = unsafe { &mut *(data as *mut Vec<hsa_agent_t>) };
        out.push(agent);
        status::SUCCESS
    }
    let mut found: Vec<hsa_agent_t> = Vec::new();
    // SAFETY: the callback only pushes into `found`, which outlives the call.
    let rc = unsafe { (hsa.fns.hsa_iterate_agents)(each, &mut found as *mut _ as *mut c_void) };
    check("hsa_iterate_agents", rc)?;
    found
        .into_iter()
        .map(|a| Ok((a, agent_info_of::<u32>(hsa, a, agent_info::DEVICE)?)))
        .collect()
}

/// An agent attribute of type `T`.
pub(crate) fn agent_info_of<T: Default>(
    hsa: &Hsa,
    agent: hsa_agent_t,
    attr: u32,
) -> Result<T, AmdError> {
    let mut v = T::default();
    // SAFETY: `T` is the attribute's type as the header gives it (callers
    // pass matching pairs); `v` is valid for writes of `T`.
    let rc = unsafe { (hsa.fns.hsa_agent_get_info)(agent, attr, &mut v as *mut T as *mut c_void) };
    check("hsa_agent_get_info", rc)?;
    Ok(v)
}

fn agent_name(hsa: &Hsa, agent: hsa_agent_t) -> Result<String, AmdError> {
    let mut raw = [0u8; 64];
    // SAFETY: NAME writes a 64-byte character array.
    let rc = unsafe {
        (hsa.fns.hsa_agent_get_info)(agent, agent_info::NAME, raw.as_mut_ptr() as *mut c_void)
    };
    check("hsa_agent_get_info", rc)?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
}

/// The agent's first ISA name.
fn isa_name(hsa: &Hsa, agent: hsa_agent_t) -> Result<Option<String>, AmdError> {
    unsafe extern "C" fn each(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the `Option` handed over below, alive for the call.
        let out = unsafe { &mut *(data as *mut Option<hsa_isa_t>) };
        *out = Some(isa);
        status::INFO_BREAK
    }
    let mut first: Option<hsa_isa_t> = None;
    // SAFETY: the callback writes only `first`, which outlives the call.
    let rc = unsafe {
        (hsa.fns.hsa_agent_iterate_isas)(agent, each, &mut first as *mut _ as *mut c_void)
    };
    if rc != status::SUCCESS && rc != status::INFO_BREAK {
        return Err(AmdError::call("hsa_agent_iterate_isas", rc));
    }
    let Some(isa) = first else { return Ok(None) };
    let mut len: u32 = 0;
    // SAFETY: NAME_LENGTH is a u32.
    let rc = unsafe {
        (hsa.fns.hsa_isa_get_info_alt)(
            isa,
            isa_info::NAME_LENGTH,
            &mut len as *mut u32 as *mut c_void,
        )
    };
    check("hsa_isa_get_info_alt", rc)?;
    let mut name = vec![0u8; (len as usize).min(4096)];
    if name.len() < len as usize {
        return Err(AmdError::IsaNameLength { len });
    }
    // SAFETY: NAME writes `len` bytes, which `name` holds.
    let rc = unsafe {
        (hsa.fns.hsa_isa_get_info_alt)(isa, isa_info::NAME, name.as_mut_ptr() as *mut c_void)
    };
    check("hsa_isa_get_info_alt", rc)?;
    while name.last() == Some(&0) {
        name.pop();
    }
    Ok(Some(String::from_utf8_lossy(&name).into_owned()))
}

/// A pool attribute of type `T`.
pub(crate) fn pool_info_of<T: Default>(
    hsa: &Hsa,
    pool: hsa_amd_memory_pool_t,
    attr: u32,
) -> Result<T, AmdError> {
    let mut v = T::default();
    // SAFETY: `T` is the attribute's type (matching pairs at every call).
    let rc = unsafe {
        (hsa.fns.hsa_amd_memory_pool_get_info)(pool, attr, &mut v as *mut T as *mut c_void)
    };
    check("hsa_amd_memory_pool_get_info", rc)?;
    Ok(v)
}

/// The agent's first global pool that allows allocation, has `flag` and
/// none of `without` (the host staging pool is fine-grained but not the
/// kernarg pool, which is fine-grained too).
fn find_pool(
    hsa: &Hsa,
    agent: hsa_agent_t,
    flag: u32,
    without: u32,
) -> Result<Option<hsa_amd_memory_pool_t>, AmdError> {
    unsafe extern "C" fn each(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the `Vec` handed over below, alive for the call.
        let out = unsafe { &mut *(data as *mut Vec<hsa_amd_memory_pool_t>) };
        out.push(pool);
        status::SUCCESS
    }
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: the callback only pushes into `pools`, which outlives the call.
    let rc = unsafe {
        (hsa.fns.hsa_amd_agent_iterate_memory_pools)(
            agent,
            each,
            &mut pools as *mut _ as *mut c_void,
        )
    };
    check("hsa_amd_agent_iterate_memory_pools", rc)?;
    for pool in pools {
        let segment: u32 = pool_info_of(hsa, pool, pool_info::SEGMENT)?;
        if segment != segment::GLOBAL {
            continue;
        }
        let allowed: bool = pool_info_of(hsa, pool, pool_info::RUNTIME_ALLOC_ALLOWED)?;
        let flags: u32 = pool_info_of(hsa, pool, pool_info::GLOBAL_FLAGS)?;
        if allowed && flags & flag != 0 && flags & without == 0 {
            return Ok(Some(pool));
        }
    }
    Ok(None)
}
