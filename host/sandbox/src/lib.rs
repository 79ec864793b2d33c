//! The WebAssembly sandbox (rules W1–W5, E4, P4).
//!
//! One [`Sandbox`] owns one wasmtime engine (component model, epoch
//! interruption, pooling allocator), one epoch ticker thread, one linker and
//! the compiled-code cache. A [`PluginLoad`], from
//! [`Sandbox::plugin_file`] or [`Sandbox::plugin_bytes`], turns a component
//! into a [`LoadedPlugin`] whose tools and hooks join a
//! [`ToolHost`](toolhost_core::ToolHost) like any other extension: same
//! registry, same pipeline.
//!
//! Each call runs in a fresh instance, in a store whose WASI context comes
//! from the plugin's [`PluginPolicy`] alone: preopened directories, granted
//! environment variables, no inherited stdio, outgoing HTTP only to granted
//! destinations, no sockets. Memory, tables and instances are bounded, and
//! the guest is interrupted at the call's deadline whether or not it
//! cooperates. A trap, panic, timeout or limit fails that call and nothing
//! else.

mod bindings;
mod budget;
mod cache;
mod classify_fault;
mod cpu_time;
mod deadline;
mod denials;
#[cfg(target_os = "linux")]
mod dirstream;
mod engine;
mod engine_parts;
mod error;
// Always built, never part of the API: a feature for it would give tests
// and the binary different builds of this crate and everything above it.
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod inspect;
mod lazy;
mod plugin;
mod plugin_load;
mod policy;
mod poll_list;
pub mod progress;
mod protect;
mod request_head;
mod secret_guard;
pub mod settings;
mod shadow;
mod state;
// The test plugins' paths, for this crate's tests and those above it.
// Always built, never part of the API, like `fuzzing`.
#[doc(hidden)]
pub mod testing;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime::component::{Component, Linker};

pub use budget::{OverBudget, Resource};
pub use cache::{CacheError, CodeSource};
pub use engine::{MAX_PLUGIN_MEMORY, engine_config};
pub use error::{LoadError, PolicyRefusal, SchemaKind, ToolListError};
pub use inspect::{Capability, ComponentInfo, PluginWorld, WIT_VERSION, WitVersion, WorldError};
pub use plugin_load::PluginLoad;
pub use policy::{
    DirGrant, DirMode, GuestBounds, HookPower, PluginPolicy, PolicyError, TenantOverlay,
    describe_policy,
};
pub use protect::{GrantOverlap, ProtectedPath, check_grants};
pub use secret_guard::SecretGuard;

use bindings::Exports;
use budget::Budget;
use cache::CodeCache;
use engine_parts::{EngineCell, EngineParts};
use lazy::LazyRuntime;
use plugin::{Checked, PluginRuntime, Schemas, WasmExtension, specs_from_descriptors};
use state::{ResolvedPolicy, StoreState};

use toolhost_core::Cause;
use toolhost_core::error::ToolError;
use toolhost_core::extension::Extension;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext, ToolSpec};

/// A component loaded and checked (or, from a [lazy](PluginLoad::lazy)
/// load, its tool list read and checked, its code to load on first use),
/// ready to register with a host.
pub struct LoadedPlugin {
    runtime: Arc<LazyRuntime>,
    world: PluginWorld,
    version: String,
    wit: WitVersion,
    /// Each tool's descriptor with its schemas: compiled while loading,
    /// or from a cached list, their validators deferred to first use.
    specs: Vec<(ToolSpec, Schemas)>,
    digest: String,
    code_source: CodeSource,
}

impl LoadedPlugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.runtime.name
    }

    /// The world it was built for.
    pub fn world(&self) -> PluginWorld {
        self.world
    }

    /// The `toolhost:plugin` version it was built for, as the component
    /// names it (`0.3.0`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The interface version the host runs it with.
    pub fn wit(&self) -> WitVersion {
        self.wit
    }

    /// Its tools' descriptors, in the order it listed them.
    pub fn tools(&self) -> Vec<&ToolSpec> {
        self.specs.iter().map(|(spec, _)| spec).collect()
    }

    /// The sha256 of its wasm, in hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether its code came from the cache, was compiled, or waits for
    /// its first use.
    pub fn code_source(&self) -> CodeSource {
        self.code_source
    }

    /// The policy it runs under.
    pub fn policy(&self) -> &PluginPolicy {
        &self.runtime.policy
    }

    /// Runs its tool `tool` once, in a fresh instance, under its policy and
    /// `ctx`'s deadline (the policy's timeout if sooner).
    ///
    /// This is not a call in the pipeline's sense — no hooks, middleware or
    /// validation run — so it is only for host code that uses a plugin as
    /// its own implementation, such as the `run_code` tool's interpreter,
    /// whose own call goes through the pipeline.
    pub async fn call_tool(
        &self,
        tool: &str,
        ctx: &CallContext,
        args: &Arguments,
    ) -> Result<ToolOutput, ToolError> {
        self.runtime.get().await?.call_tool(tool, ctx, args).await
    }

    /// Whether its code is loaded (false only for a plugin from a
    /// [lazy](PluginLoad::lazy) load that no call has needed yet).
    pub fn is_loaded(&self) -> bool {
        self.runtime.is_loaded()
    }

    /// The load of its code, to run in the background, if it waits for
    /// its first use ([`CodeSource::Deferred`]); `None` once loaded.
    pub fn warm_up(&self) -> Option<WarmUp> {
        (!self.runtime.is_loaded()).then(|| WarmUp {
            runtime: self.runtime.clone(),
            schemas: self
                .specs
                .iter()
                .map(|(_, schemas)| schemas.clone())
                .collect(),
        })
    }

    /// The plugin as an extension named after it: its tools, and for an
    /// extension-plugin its prompt and hooks. Register it with
    /// [`ToolHost::register_extension`](toolhost_core::ToolHost::register_extension).
    pub fn into_extension(self) -> Arc<dyn Extension> {
        Arc::new(WasmExtension {
            runtime: self.runtime,
            world: self.world,
            specs: self.specs,
        })
    }
}

/// The load of a [lazily](PluginLoad::lazy) loaded plugin's code, ahead
/// of its first use: a host that answers before its plugins' code is
/// loaded (`toolhost serve` lists their tools from the cache) runs it in the
/// background, so that the first call finds the code ready. A call that
/// comes first waits for the same load rather than starting another; a
/// load that fails fails only this, and the plugin's next use tries
/// again, as a first use does (rule W7).
pub struct WarmUp {
    runtime: Arc<LazyRuntime>,
    /// Its tools' schemas, whose validators a list from the cache left to
    /// be built.
    schemas: Vec<Schemas>,
}

impl WarmUp {
    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.runtime.name
    }

    /// Loads the plugin's code, unless a call loaded it first, and beside
    /// that builds its tools' schema validators that the cached list put
    /// off (off the async workers): where the code came from
    /// ([`CodeSource::Cache`] or [`CodeSource::Compiled`]), whichever
    /// loaded it, so that a host counting each plugin's one warm-up counts
    /// each lookup once. The error names the plugin.
    pub async fn run(self) -> Result<Option<CodeSource>, ToolError> {
        let schemas = self.schemas;
        let prepared =
            tokio::task::spawn_blocking(move || schemas.iter().for_each(Schemas::prepare));
        let (source, _) = tokio::join!(self.runtime.warm(), prepared);
        // A schema that fails to build is the tool's to report, at its
        // call, with the reason.
        source
    }
}

/// The engine, its epoch ticker, the linker and the compiled-code cache.
/// Create one per process and load every plugin through it; clones share
/// everything.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<SandboxInner>,
}

struct SandboxInner {
    /// The engine, linker and deadline clock, perhaps still being made.
    parts: EngineCell,
    cache: CodeCache,
    descriptors: Arc<Budget>,
    instances: Arc<Budget>,
    protected: Mutex<Vec<ProtectedPath>>,
}

impl Sandbox {
    /// Starts a sandbox. With `cache_dir`, compiled code is kept there
    /// between runs: the directory is created private to the user if
    /// missing, its authentication key is kept beside it (`<dir>.key`), and
    /// a directory or key that another user can write is refused (rule C5).
    /// Both become protected paths. The process's soft descriptor limit is
    /// raised to its hard limit, and plugins share what the host does not
    /// keep for itself (rule C4).
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, LoadError> {
        let live = engine::MAX_LIVE_INSTANCES;
        let (cache, protected) = open_cache(cache_dir)?;
        let parts = EngineParts::make(cache.function_store(), live)?;
        Ok(Self::with(cache, protected, EngineCell::ready(parts), live))
    }

    /// [`new`](Self::new), but the engine and what takes it (its linker,
    /// its deadline clock; about a millisecond of work) are made on a
    /// thread of their own, beside whatever the caller does next: the
    /// cache is opened (and its errors returned) now. What needs no engine
    /// goes on meanwhile — registering a plugin from its cached tool list,
    /// protecting paths; the first thing that needs it (compiling, loading
    /// or calling a plugin) waits for it, and fails with the engine's error
    /// if it could not be made. [`ready`](Self::ready) waits for it, to
    /// learn of such an error before serving anything.
    pub fn starting(cache_dir: Option<PathBuf>) -> Result<Self, LoadError> {
        Self::starting_for(cache_dir, Self::MAX_LIVE_INSTANCES)
    }

    /// The most plugin instances a sandbox lets be alive at once, across
    /// all its plugins: each plugin reserves its `max_instances` of them
    /// at load.
    pub const MAX_LIVE_INSTANCES: usize = engine::MAX_LIVE_INSTANCES as usize;

    /// [`starting`](Self::starting), with room for `live_instances`
    /// instances alive at once (1 to [`MAX_LIVE_INSTANCES`](Self::MAX_LIVE_INSTANCES)):
    /// what a host's plugins' `max_instances` add up to. A plugin whose
    /// `max_instances` no longer fit is refused at load
    /// ([`LoadError::Policy`], naming the free slots). Room for an instance
    /// costs the engine's making a guarded stack, so a sandbox sized for its
    /// plugins starts sooner than one sized for the most (BENCHMARKS.md).
    pub fn starting_for(
        cache_dir: Option<PathBuf>,
        live_instances: usize,
    ) -> Result<Self, LoadError> {
        let live = u32::try_from(live_instances)
            .unwrap_or(u32::MAX)
            .clamp(1, engine::MAX_LIVE_INSTANCES);
        let (cache, protected) = open_cache(cache_dir)?;
        let parts = EngineCell::making(cache.function_store(), live);
        Ok(Self::with(cache, protected, parts, live))
    }

    /// Waits until the engine is made, and says whether it could be: the
    /// error [`new`](Self::new) would have returned. Immediate for a
    /// sandbox from `new`, and after the first wait.
    pub fn ready(&self) -> Result<(), LoadError> {
        self.inner.parts.get().map(|_| ())
    }

    fn with(cache: CodeCache, protected: Vec<ProtectedPath>, parts: EngineCell, live: u32) -> Self {
        Self {
            inner: Arc::new(SandboxInner {
                parts,
                cache,
                descriptors: Budget::from_process(),
                instances: Budget::instances(live),
                protected: Mutex::new(protected),
            }),
        }
    }

    /// Adds a path of the host's own (a configuration file, an artifact
    /// store, a plugin's wasm) that no plugin loaded from now on may be
    /// granted, nor a directory that contains it or lies inside it (rule
    /// C5). The cache, its key and every wasm file loaded through
    /// [`Sandbox::plugin_file`] are protected already.
    pub fn protect(&self, path: impl Into<PathBuf>, what: impl Into<String>) {
        let p = ProtectedPath::new(path, what);
        let mut list = self.lock_protected();
        if !list.contains(&p) {
            list.push(p);
        }
    }

    /// Where the key of a cache in `cache_dir` is kept: beside it, as
    /// `<dir>.key`.
    pub fn cache_key_path(cache_dir: &Path) -> PathBuf {
        cache::key_path(cache_dir)
    }

    /// Every protected path, in the order added.
    pub fn protected(&self) -> Vec<ProtectedPath> {
        self.lock_protected().clone()
    }

    fn lock_protected(&self) -> std::sync::MutexGuard<'_, Vec<ProtectedPath>> {
        self.inner
            .protected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The default cache directory: `$XDG_CACHE_HOME/toolhost` or
    /// `~/.cache/toolhost`.
    pub fn default_cache_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|d| d.join("toolhost"))
    }

    /// Loads `bytes` now, for [`PluginLoad::load`]: the policy checked and
    /// reserved, the code compiled or read from the cache, its tool list
    /// read and checked; `digest` is the pin to check or the digest known.
    async fn load_checked(
        &self,
        name: &str,
        wasm: WasmSource,
        policy: PluginPolicy,
        digest: Digest,
    ) -> Result<LoadedPlugin, LoadError> {
        let reserved = self.reserve(name, &policy)?;
        let (bytes, component, digest, code_source) =
            self.read_and_compile(name, wasm, digest).await?;
        self.check_settings(name, &bytes, &digest, &policy)?;
        let (runtime, info) = self.prepare(name, &component, policy)?;
        let tools_error = |source: ToolListError| LoadError::Tools {
            plugin: name.to_owned(),
            source,
        };
        let descriptors = runtime
            .list_tools()
            .await
            .map_err(|e| tools_error(ToolListError::Call(e)))?;
        let specs =
            specs_from_descriptors(descriptors, &runtime.policy.granted.bounds, Checked::Now)
                .map_err(tools_error)?;
        Ok(LoadedPlugin {
            runtime: Arc::new(LazyRuntime::ready(runtime, reserved)),
            world: info.world,
            version: info.version,
            wit: info.wit,
            specs,
            digest,
            code_source,
        })
    }

    /// Loads `wasm` for [`PluginLoad::lazy`]: registered from the tool
    /// list the cache holds for it under `policy`, its code loaded by the
    /// first call that needs it; or, with no such list, loaded now like
    /// [`load_checked`](Self::load_checked), its list kept for the next
    /// time.
    async fn load_deferred(
        &self,
        name: &str,
        wasm: WasmSource,
        policy: PluginPolicy,
        pin: Option<&str>,
    ) -> Result<LoadedPlugin, LoadError> {
        // The list is cached under what it can depend on (rule W6).
        let listing = self.inner.cache.listing_key(&policy);
        // The file's read, its hash and the cached list's read, in one
        // blocking task: no file is read on an async worker, and a load
        // wakes one other thread, not two. The digest keys the list,
        // checks the pin, and is handed to whatever loads the code, now or
        // on first use.
        let (inner, owned, wanted) = (self.inner.clone(), name.to_owned(), listing.clone());
        let (bytes, digest, cached) = spawn_cpu(move || {
            let bytes = match wasm {
                WasmSource::Bytes(bytes) => bytes,
                WasmSource::File(path) => {
                    std::fs::read(&path).map_err(|e| read_error(&owned, &path, e))?
                }
            };
            let digest = cache::sha256_hex(&bytes);
            let cached = wanted
                .as_ref()
                .and_then(|listing| inner.cache.read_tools(&digest, listing));
            Ok::<_, LoadError>((bytes, digest, cached))
        })
        .await??;
        check_pin(name, pin, &digest)?;
        self.check_settings(name, &bytes, &digest, &policy)?;
        let cached = cached
            .and_then(|payload| serde_json::from_slice::<lazy::ToolsEntry>(&payload).ok())
            .and_then(lazy::ToolsEntry::into_parts);
        let Some((world, version, wit, descriptors)) = cached else {
            let loaded = self
                .load_checked(
                    name,
                    WasmSource::Bytes(bytes),
                    policy,
                    Digest::Known(digest),
                )
                .await?;
            let entry =
                lazy::ToolsEntry::new(loaded.world, &loaded.version, loaded.wit, &loaded.tools());
            if let (Some(listing), Ok(payload)) = (&listing, serde_json::to_vec(&entry)) {
                self.inner
                    .cache
                    .write_tools(&loaded.digest, listing, &payload);
            }
            return Ok(loaded);
        };
        let reserved = self.reserve(name, &policy)?;
        let specs = specs_from_descriptors(descriptors, &policy.bounds, Checked::Before).map_err(
            |source| LoadError::Tools {
                plugin: name.to_owned(),
                source,
            },
        )?;
        let pending = lazy::Pending {
            sandbox: self.clone(),
            // Taken over, not copied.
            bytes: Bytes::from(bytes),
            digest: digest.clone(),
            world,
            wit,
        };
        Ok(LoadedPlugin {
            runtime: Arc::new(LazyRuntime::pending(name, policy, pending, reserved)),
            world,
            version,
            wit,
            specs,
            digest,
            code_source: CodeSource::Deferred,
        })
    }

    /// Checks `policy`'s settings for the plugin `name`, whose wasm is
    /// `bytes` with sha256 `digest` (rule O1), against their schema if
    /// they have one, unless the cache records that the same settings
    /// passed for the same wasm (looked up first: finding the schema the
    /// component declares means reading through it); settings that pass
    /// a schema are recorded. (Without a schema there is nothing to check,
    /// and nothing is recorded.)
    fn check_settings(
        &self,
        name: &str,
        bytes: &[u8],
        digest: &str,
        policy: &PluginPolicy,
    ) -> Result<(), LoadError> {
        let cache = &self.inner.cache;
        if cache.settings_passed(digest, policy) {
            return Ok(());
        }
        let refused = |source| LoadError::Settings {
            plugin: name.to_owned(),
            source,
        };
        let Some(schema) = settings::schema_for(bytes, policy).map_err(refused)? else {
            return Ok(());
        };
        settings::check_against(&schema, policy).map_err(refused)?;
        cache.remember_settings_passed(digest, policy);
        Ok(())
    }

    /// Checks `policy` for the plugin `name` and reserves what its limits
    /// may hold of the process's descriptors and the engine's instances.
    fn reserve(&self, name: &str, policy: &PluginPolicy) -> Result<lazy::Reserved, LoadError> {
        let refuse = |source: PolicyRefusal| LoadError::Policy {
            plugin: name.to_owned(),
            source,
        };
        policy.validate().map_err(|e| refuse(e.into()))?;
        protect::check_grants(&policy.dirs, &self.protected()).map_err(|e| refuse(e.into()))?;
        let descriptors = self
            .inner
            .descriptors
            .reserve(
                policy
                    .bounds
                    .descriptors(policy.max_instances, policy.dirs.len()),
            )
            .map_err(|over| refuse(over.into()))?;
        let instances = self
            .inner
            .instances
            .reserve(policy.max_instances)
            .map_err(|over| refuse(over.into()))?;
        Ok(lazy::Reserved {
            descriptors,
            instances,
        })
    }

    /// A compiled component's running form: its world and version read,
    /// linked, and its exports found in the bindings of its version.
    fn prepare(
        &self,
        name: &str,
        component: &Component,
        policy: PluginPolicy,
    ) -> Result<(Arc<PluginRuntime>, ComponentInfo), LoadError> {
        let parts = self.inner.parts.get()?;
        let info =
            inspect::inspect(&parts.engine, component).map_err(|error| LoadError::World {
                plugin: name.to_owned(),
                source: error,
            })?;
        let link = |e: wasmtime::Error| LoadError::Link {
            plugin: name.to_owned(),
            source: Cause::new(e),
        };
        let pre = parts.linker.instantiate_pre(component).map_err(link)?;
        let exports = Exports::new(&pre, info.world, info.wit).map_err(link)?;
        let name: Arc<str> = name.into();
        let slots = plugin::Slots::new(policy.max_instances, policy.shared_by_tenants);
        let policy = ResolvedPolicy::new(policy, &name);
        let runtime = Arc::new(PluginRuntime {
            grant: policy.http_grant(name.clone()),
            name,
            engine: parts.engine.clone(),
            clock: parts.clock.clone(),
            pre,
            exports,
            slots,
            policy,
        });
        Ok((runtime, info))
    }

    /// Compiles (or reads from the cache) and prepares `bytes`, for a
    /// plugin registered from its cached tool list: see
    /// [`LazyRuntime::get`].
    pub(crate) async fn runtime(
        &self,
        name: &str,
        bytes: Bytes,
        digest: String,
        policy: PluginPolicy,
    ) -> Result<(Arc<PluginRuntime>, PluginWorld, WitVersion, CodeSource), LoadError> {
        let (component, _, source) = self.compile(name, bytes, Digest::Known(digest)).await?;
        let (runtime, info) = self.prepare(name, &component, policy)?;
        Ok((runtime, info.world, info.wit, source))
    }

    /// Reads a component's world, version and imported capabilities without
    /// running it.
    pub async fn inspect(&self, bytes: Vec<u8>) -> Result<ComponentInfo, LoadError> {
        let (component, _, _) = self
            .compile("(inspected)", bytes, Digest::Pin(None))
            .await?;
        inspect::inspect(&self.inner.parts.get()?.engine, &component).map_err(|error| {
            LoadError::World {
                plugin: "(inspected)".into(),
                source: error,
            }
        })
    }

    /// Makes `path`, the wasm of plugin `name`, a protected path, so that
    /// neither this plugin nor a later one may be granted it.
    fn protect_wasm(&self, name: &str, path: &Path) {
        self.protect(path, format!("the wasm of plugin `{name}`"));
    }

    /// [`compile`](Self::compile) of `wasm`, read first when it is a file:
    /// on the same blocking thread as the hashing and compiling, so that a
    /// load wakes one other thread rather than two. The bytes come back.
    async fn read_and_compile(
        &self,
        name: &str,
        wasm: WasmSource,
        digest: Digest,
    ) -> Result<(Vec<u8>, Component, String, CodeSource), LoadError> {
        let inner = self.inner.clone();
        let name = name.to_owned();
        spawn_cpu(move || {
            let bytes = match wasm {
                WasmSource::Bytes(bytes) => bytes,
                WasmSource::File(path) => {
                    std::fs::read(&path).map_err(|e| read_error(&name, &path, e))?
                }
            };
            let (component, digest, source) = compile_now(&inner, name, &bytes, digest)?;
            Ok((bytes, component, digest, source))
        })
        .await?
    }

    async fn compile<B: AsRef<[u8]> + Send + 'static>(
        &self,
        name: &str,
        bytes: B,
        digest: Digest,
    ) -> Result<(Component, String, CodeSource), LoadError> {
        let inner = self.inner.clone();
        let name = name.to_owned();
        spawn_cpu(move || compile_now(&inner, name, bytes.as_ref(), digest)).await?
    }
}

/// Where a load's wasm comes from.
pub(crate) enum WasmSource {
    /// Bytes the loader holds.
    Bytes(Vec<u8>),
    /// A file, read on the thread that compiles it.
    File(PathBuf),
}

/// The error of reading plugin `name`'s wasm at `path`.
fn read_error(name: &str, path: &Path, e: std::io::Error) -> LoadError {
    LoadError::Read {
        plugin: name.into(),
        path: path.into(),
        source: Cause::new(e),
    }
}

/// The compiled-code cache in `cache_dir` (none without), and the paths it
/// makes protected: the directory and its key.
fn open_cache(cache_dir: Option<PathBuf>) -> Result<(CodeCache, Vec<ProtectedPath>), LoadError> {
    let Some(dir) = cache_dir else {
        return Ok((CodeCache::none(), Vec::new()));
    };
    let cache = CodeCache::open(dir.clone())?;
    let protected = vec![
        ProtectedPath::new(cache::key_path(&dir), "the compiled-code cache's key"),
        ProtectedPath::new(dir, "the compiled-code cache"),
    ];
    Ok((cache, protected))
}

/// Hashes `bytes` (unless their digest is known) and checks the pin, then
/// loads their code from the cache or compiles it, on the calling thread.
fn compile_now(
    inner: &SandboxInner,
    name: String,
    bytes: &[u8],
    digest: Digest,
) -> Result<(Component, String, CodeSource), LoadError> {
    let digest = match digest {
        Digest::Known(digest) => digest,
        Digest::Pin(pin) => {
            let digest = cache::sha256_hex(bytes);
            check_pin(&name, pin.as_deref(), &digest)?;
            digest
        }
    };
    let mut progress = progress::Compile::new(&name, bytes.len());
    let engine = &inner.parts.get()?.engine;
    let compiled = inner
        .cache
        .load_or_compile_with(engine, bytes, &digest, || progress.start());
    progress.done(compiled.is_ok());
    let (component, source) = compiled.map_err(|e| LoadError::Compile {
        plugin: name,
        source: Cause::new(e),
    })?;
    Ok((component, digest, source))
}

/// Directory listings that hold bounded host memory (rule C11), in place
/// of wasmtime-wasi's, which hold a whole directory per stream.
#[cfg(target_os = "linux")]
pub(crate) fn bounded_listings(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    dirstream::add_to_linker(linker)
}

/// Elsewhere wasmtime-wasi's listing stays (see `dirstream`).
#[cfg(not(target_os = "linux"))]
pub(crate) fn bounded_listings(_: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    Ok(())
}

/// A wasm's sha256 as a load has it: to compute and check against a pin,
/// or computed already (from bytes held since).
enum Digest {
    Pin(Option<String>),
    Known(String),
}

/// Runs CPU-bound work (hashing, compiling) off the async workers.
async fn spawn_cpu<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, LoadError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| LoadError::Engine {
            what: "a compiler thread",
            source: Cause::new(e),
        })
}

/// Refuses a wasm whose sha256, `digest`, is not the `pin` (any case).
fn check_pin(plugin: &str, pin: Option<&str>, digest: &str) -> Result<(), LoadError> {
    match pin.map(str::to_ascii_lowercase) {
        Some(expected) if expected != digest => Err(LoadError::DigestMismatch {
            plugin: plugin.to_owned(),
            expected,
            actual: digest.to_owned(),
        }),
        _ => Ok(()),
    }
}
