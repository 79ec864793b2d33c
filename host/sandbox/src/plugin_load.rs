//! [`PluginLoad`]: the one way to load a plugin into a [`Sandbox`].
//!
//! Contract: a load starts from what it cannot do without, the plugin's
//! name and its wasm ([`Sandbox::plugin_file`] for a file,
//! [`Sandbox::plugin_bytes`] for bytes already in memory), so a load with
//! no source cannot be written. Everything else has a default:
//!
//! | setting | default | set with |
//! |---|---|---|
//! | policy | [`PluginPolicy::default()`]: nothing granted | [`policy`](PluginLoad::policy) |
//! | pin | none: the wasm's sha256 is computed, not checked | [`pin`](PluginLoad::pin) |
//! | when the code loads | now | [`lazy`](PluginLoad::lazy) |
//!
//! Nothing happens until [`load`](PluginLoad::load) is awaited. It then
//! does, in order: protect the file (a file source only), read it, check
//! the pin, check the policy and reserve what its limits allow, compile
//! the code (or read it from the cache) and read the tool list (or, when
//! lazy, take the list the cache holds). Every failure is a
//! [`LoadError`] naming the plugin; a lazy load's later failure to load
//! its code fails the call that needed it instead.

use std::path::PathBuf;

use crate::{Digest, LoadError, LoadedPlugin, PluginPolicy, Sandbox, WasmSource};

/// A plugin to load into a [`Sandbox`], and how: start one with
/// [`Sandbox::plugin_file`] or [`Sandbox::plugin_bytes`], change what the
/// defaults do not suit, then await [`load`](Self::load).
///
/// ```no_run
/// # async fn f(sandbox: &toolhost_sandbox::Sandbox) -> Result<(), toolhost_sandbox::LoadError> {
/// use toolhost_sandbox::PluginPolicy;
///
/// let calc = sandbox.plugin_file("calc", "calc.wasm").load().await?;
/// let pinned = sandbox
///     .plugin_file("calc", "calc.wasm")
///     .policy(PluginPolicy::default())
///     .pin("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
///     .lazy(true)
///     .load()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a PluginLoad loads nothing until `.load()` is awaited"]
pub struct PluginLoad<'a> {
    sandbox: &'a Sandbox,
    name: String,
    wasm: Wasm,
    policy: PluginPolicy,
    pin: Option<String>,
    lazy: bool,
}

/// Where a load's component comes from.
enum Wasm {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl Sandbox {
    /// Starts loading the component in the file at `path` as the plugin
    /// `name`, with the [defaults](PluginLoad) until changed. When loaded,
    /// the file becomes a protected path first (before it is read, whether
    /// or not the load succeeds), so neither this plugin nor a later one
    /// may be granted it (rule C5); a file that cannot be read fails the
    /// load with [`LoadError::Read`].
    pub fn plugin_file(&self, name: impl Into<String>, path: impl Into<PathBuf>) -> PluginLoad<'_> {
        PluginLoad::new(self, name.into(), Wasm::File(path.into()))
    }

    /// Starts loading the component `bytes` (read from a store, or checked
    /// against a signature first) as the plugin `name`, with the
    /// [defaults](PluginLoad) until changed. Nothing becomes a protected
    /// path.
    pub fn plugin_bytes(&self, name: impl Into<String>, bytes: Vec<u8>) -> PluginLoad<'_> {
        PluginLoad::new(self, name.into(), Wasm::Bytes(bytes))
    }
}

impl<'a> PluginLoad<'a> {
    fn new(sandbox: &'a Sandbox, name: String, wasm: Wasm) -> Self {
        Self {
            sandbox,
            name,
            wasm,
            policy: PluginPolicy::default(),
            pin: None,
            lazy: false,
        }
    }

    /// The grants and limits the plugin runs under. Default:
    /// [`PluginPolicy::default()`], which grants nothing. The policy is
    /// checked when loading, lazily or not: one that is invalid, grants a
    /// directory overlapping a protected path, or allows more descriptors
    /// or instances than the process has left for plugins fails the load
    /// with [`LoadError::Policy`].
    pub fn policy(mut self, policy: PluginPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The sha256 the wasm must have, in hex (either case). Default: no
    /// pin, and the digest is only computed (see
    /// [`LoadedPlugin::digest`]). The pin is checked when loading, lazily
    /// or not, before anything is compiled; a wasm with another digest
    /// fails the load with [`LoadError::DigestMismatch`], which names both.
    pub fn pin(mut self, sha256: impl Into<String>) -> Self {
        self.pin = Some(sha256.into());
        self
    }

    /// Whether the plugin's code may wait for its first use. Default:
    /// `false`, the code is compiled (or read from the cache) and the tool
    /// list read from the plugin now. With `true`, when the compiled-code
    /// cache holds the tool list of an earlier load of the same wasm under
    /// what the list can depend on (rule W6), the plugin is registered
    /// from that list and its code is loaded by the first call that needs
    /// it ([`CodeSource::Deferred`](crate::CodeSource::Deferred)); a
    /// failure then fails that call, naming the plugin. Otherwise (no
    /// cache, no list yet) the plugin is loaded now and its list kept for
    /// the next lazy load. The wasm, the pin and the policy are checked now
    /// either way.
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }

    /// Loads the plugin as set up: reads the wasm (a file source), checks
    /// the pin and the policy, then loads its code now or, when
    /// [lazy](Self::lazy) and the cache allows, on first use.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming the plugin: [`Read`](LoadError::Read) (the
    /// file), [`DigestMismatch`](LoadError::DigestMismatch) (the pin),
    /// [`Policy`](LoadError::Policy), [`Compile`](LoadError::Compile) (not
    /// a valid component), [`World`](LoadError::World) (not a toolhost
    /// plugin of a supported version), [`Link`](LoadError::Link),
    /// [`Tools`](LoadError::Tools) (its tool list), or
    /// [`Engine`](LoadError::Engine) (a compiler thread failed).
    pub async fn load(self) -> Result<LoadedPlugin, LoadError> {
        let Self {
            sandbox,
            name,
            wasm,
            policy,
            pin,
            lazy,
        } = self;
        // A file is read on the thread that hashes it, and compiles it or
        // reads its cached tool list.
        let wasm = match wasm {
            Wasm::File(path) => {
                sandbox.protect_wasm(&name, &path);
                WasmSource::File(path)
            }
            Wasm::Bytes(bytes) => WasmSource::Bytes(bytes),
        };
        if lazy {
            sandbox
                .load_deferred(&name, wasm, policy, pin.as_deref())
                .await
        } else {
            sandbox
                .load_checked(&name, wasm, policy, Digest::Pin(pin))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use toolhost_core::error::ToolError;
    use toolhost_core::tool::{Arguments, CallContext};

    use crate::cache::sha256_hex;
    use crate::testing::wasm;
    use crate::{CodeSource, LoadError, PluginPolicy, Sandbox};

    fn digest_of(path: &PathBuf) -> String {
        sha256_hex(&std::fs::read(path).unwrap())
    }

    /// The error a load that must fail fails with.
    async fn refused(load: super::PluginLoad<'_>) -> LoadError {
        load.load().await.err().expect("the load is refused")
    }

    #[tokio::test]
    async fn by_default_it_loads_now_under_the_default_policy_and_checks_no_pin() {
        let sandbox = Sandbox::new(None).unwrap();
        let path = wasm("calc");
        let calc = sandbox.plugin_file("calc", &path).load().await.unwrap();
        assert_eq!(calc.name(), "calc");
        assert_eq!(calc.policy(), &PluginPolicy::default());
        assert!(calc.is_loaded());
        assert_eq!(calc.code_source(), CodeSource::Compiled);
        assert_eq!(calc.digest(), digest_of(&path));
        let from_bytes = sandbox
            .plugin_bytes("calc-bytes", std::fs::read(&path).unwrap())
            .load()
            .await
            .unwrap();
        assert_eq!(from_bytes.name(), "calc-bytes");
        assert_eq!(from_bytes.digest(), calc.digest());
        assert!(from_bytes.is_loaded());
    }

    #[tokio::test]
    async fn w7_a_sandbox_still_starting_lists_from_the_cache_and_loads_once_its_engine_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Some(dir.path().join("cache"));
        // The first sandbox lists calc's tools into the cache.
        let first = Sandbox::new(cache.clone()).unwrap();
        fn calc(sandbox: &Sandbox) -> super::PluginLoad<'_> {
            sandbox.plugin_file("calc", wasm("calc")).lazy(true)
        }
        calc(&first).load().await.unwrap();
        let sandbox = Sandbox::starting(cache).unwrap();
        let listed = calc(&sandbox).load().await.unwrap();
        assert_eq!(listed.code_source(), CodeSource::Deferred);
        // A plugin loaded now waits for the engine.
        let eager = sandbox
            .plugin_file("calc-now", wasm("calc"))
            .load()
            .await
            .unwrap();
        assert!(eager.is_loaded());
        sandbox.ready().unwrap();
        // The cached list's validators wait for the warm-up, not the list.
        let built = || {
            listed
                .specs
                .iter()
                .all(|(_, schemas)| schemas.parameters.is_built())
        };
        assert!(!listed.specs.is_empty() && !built());
        let warm_up = listed.warm_up().unwrap();
        assert_eq!(warm_up.run().await.unwrap(), Some(CodeSource::Cache));
        assert!(built());
    }

    #[tokio::test]
    async fn c4_a_sandbox_made_for_n_instances_refuses_a_plugin_past_them() {
        let sandbox = Sandbox::starting_for(None, 6).unwrap();
        let four = PluginPolicy {
            max_instances: 4,
            ..PluginPolicy::default()
        };
        let load = |name| sandbox.plugin_file(name, wasm("calc")).policy(four.clone());
        // Loaded plugins hold their room while they are kept.
        let _calc = load("calc").load().await.unwrap();
        let err = refused(load("calc-again")).await;
        assert!(
            matches!(&err, LoadError::Policy { plugin, .. } if plugin == "calc-again"),
            "{err:?}"
        );
        let why = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            why.contains("only 2 of the sandbox's 6 instance slots are free"),
            "{why}"
        );
        // Room for none is room for one; room for more than the most a
        // sandbox allows is the most, and nothing overflows on the way.
        let one = Sandbox::starting_for(None, 0).unwrap();
        let err = refused(one.plugin_file("calc", wasm("calc")).policy(four.clone())).await;
        let why = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            why.contains("only 1 of the sandbox's 1 instance slots are free"),
            "{why}"
        );
        let most = Sandbox::starting_for(None, usize::MAX).unwrap();
        let _calc = most.plugin_file("calc", wasm("calc")).policy(four);
        _calc.load().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn c4_every_instance_a_sandbox_has_room_for_can_be_alive_at_once() {
        // Room for two instances, for a plugin that may run two: two calls
        // held in the host until their deadline take both instances (and
        // both of the engine's stacks), round after round, and each ends
        // in its timeout, not in a want of room; a call after them runs.
        let sandbox = Sandbox::starting_for(None, 2).unwrap();
        let policy = PluginPolicy {
            max_instances: 2,
            timeout: Duration::from_millis(300),
            ..PluginPolicy::default()
        };
        let sleeper = sandbox
            .plugin_file("sleeper", wasm("sleeper"))
            .policy(policy)
            .load()
            .await
            .unwrap();
        let args = Arguments::parse("{}").unwrap();
        let call = |tool: &'static str| {
            let (sleeper, args) = (&sleeper, &args);
            async move { sleeper.call_tool(tool, &CallContext::new(), args).await }
        };
        for round in 0..3 {
            let (a, b) = tokio::join!(call("pollable"), call("pollable"));
            for held in [a, b] {
                assert!(
                    matches!(held, Err(ToolError::Timeout { .. })),
                    "round {round}: {held:?}"
                );
            }
            call("fine").await.unwrap();
        }
    }

    #[tokio::test]
    async fn the_policy_set_is_the_one_checked_and_run_under() {
        let sandbox = Sandbox::new(None).unwrap();
        let slow = PluginPolicy {
            timeout: Duration::from_secs(3),
            ..PluginPolicy::default()
        };
        let calc = sandbox
            .plugin_file("calc", wasm("calc"))
            .policy(slow.clone())
            .load()
            .await
            .unwrap();
        assert_eq!(calc.policy(), &slow);
        let too_big = PluginPolicy {
            memory_bytes: 8 << 30,
            ..PluginPolicy::default()
        };
        for lazy in [false, true] {
            let load = sandbox
                .plugin_file("calc", wasm("calc"))
                .policy(too_big.clone());
            let err = refused(load.lazy(lazy)).await;
            assert!(
                matches!(&err, LoadError::Policy { plugin, .. } if plugin == "calc"),
                "lazy {lazy}: {err:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_wrong_pin_is_refused_from_a_file_or_bytes_eagerly_or_lazily() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
        let path = wasm("calc");
        let actual = digest_of(&path);
        let wrong = "0".repeat(64);
        for lazy in [false, true] {
            for from_file in [true, false] {
                let load = if from_file {
                    sandbox.plugin_file("calc", &path)
                } else {
                    sandbox.plugin_bytes("calc", std::fs::read(&path).unwrap())
                };
                let err = refused(load.pin(&wrong).lazy(lazy)).await;
                assert_eq!(
                    err,
                    LoadError::DigestMismatch {
                        plugin: "calc".into(),
                        expected: wrong.clone(),
                        actual: actual.clone(),
                    },
                    "lazy {lazy}, from a file {from_file}"
                );
            }
        }
        // The right pin, in either case, is accepted.
        for pin in [actual.clone(), actual.to_ascii_uppercase()] {
            let ok = sandbox
                .plugin_file("calc", &path)
                .pin(pin)
                .load()
                .await
                .unwrap();
            assert_eq!(ok.digest(), actual);
        }
    }

    #[tokio::test]
    async fn lazy_defers_the_code_to_the_first_call_once_the_cache_holds_the_list() {
        // Without a cache there is no list to register from: lazy loads now.
        let uncached = Sandbox::new(None).unwrap();
        let now = uncached
            .plugin_file("calc", wasm("calc"))
            .lazy(true)
            .load()
            .await
            .unwrap();
        assert!(now.is_loaded());
        assert_eq!(now.code_source(), CodeSource::Compiled);

        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
        // The first lazy load finds no list: it loads now and keeps one.
        let first = sandbox
            .plugin_file("calc", wasm("calc"))
            .lazy(true)
            .load()
            .await
            .unwrap();
        assert!(first.is_loaded());
        assert_eq!(first.code_source(), CodeSource::Compiled);
        // The next registers from the list and compiles nothing yet.
        let second = sandbox
            .plugin_file("calc", wasm("calc"))
            .lazy(true)
            .load()
            .await
            .unwrap();
        assert!(!second.is_loaded());
        assert_eq!(second.code_source(), CodeSource::Deferred);
        assert_eq!(
            second.tools().iter().map(|t| &t.name).collect::<Vec<_>>(),
            ["calc", "stats"]
        );
        // Its first call loads it.
        let out = second
            .call_tool(
                "calc",
                &CallContext::new(),
                &Arguments::parse(r#"{"expression": "6 * 7"}"#).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(out.llm_text(), "42");
        assert!(second.is_loaded());
        // Not lazy, the same wasm is loaded now, from the cached code.
        let eager = sandbox
            .plugin_file("calc", wasm("calc"))
            .lazy(false)
            .load()
            .await
            .unwrap();
        assert!(eager.is_loaded());
        assert_eq!(eager.code_source(), CodeSource::Cache);
    }

    #[tokio::test]
    async fn c1_a_call_waiting_for_its_plugins_deferred_load_ends_at_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        // The first load keeps the plugin's tool list (and its code).
        let sandbox = Sandbox::new(Some(cache.clone())).unwrap();
        sandbox
            .plugin_file("calc", wasm("calc"))
            .lazy(true)
            .load()
            .await
            .unwrap();
        drop(sandbox);
        // Its compiled code is thrown away and its list kept: the deferred
        // load compiles the plugin, far longer than the call's millisecond.
        for entry in std::fs::read_dir(&cache).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() && !name.starts_with("tools-") {
                std::fs::remove_dir_all(&path).unwrap();
            }
        }
        let sandbox = Sandbox::new(Some(cache)).unwrap();
        let deferred = sandbox
            .plugin_file("calc", wasm("calc"))
            .lazy(true)
            .load()
            .await
            .unwrap();
        assert_eq!(deferred.code_source(), CodeSource::Deferred);
        let runtime = deferred.runtime.clone();
        let tool = deferred.into_extension().tools().remove(0);
        // The sandbox's tools are not timed by the pipeline, so the wait
        // for the load is theirs to end.
        assert!(tool.ends_by_deadline());
        let args = Arguments::parse(r#"{"expression": "6 * 7"}"#).unwrap();
        let ctx = CallContext::new().with_timeout(Duration::from_millis(1));
        let err = tool.call(ctx, args.clone()).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Timeout { plugin: Some(p), .. } if p == "calc"),
            "{err:?}"
        );
        // It gave up the load at the deadline rather than wait for it (a
        // call that waited would find its deadline passed too, but would
        // leave the plugin loaded).
        assert!(!runtime.is_loaded());
        // The next call, under the plugin's own timeout, loads it.
        let out = tool.call(CallContext::new(), args).await.unwrap();
        assert_eq!(out.llm_text(), "42");
        assert!(runtime.is_loaded());
    }

    #[tokio::test]
    async fn a_file_is_protected_before_it_is_read_and_an_unreadable_one_is_a_read_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.wasm");
        // Loaded now or lazily (read on the thread that hashes it), alike.
        for lazy in [false, true] {
            let sandbox = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
            let err = refused(sandbox.plugin_file("gone", &missing).lazy(lazy)).await;
            assert!(
                matches!(&err, LoadError::Read { plugin, path, .. } if plugin == "gone" && path == &missing),
                "lazy {lazy}: {err:?}"
            );
            assert!(
                sandbox.protected().iter().any(|p| p.path == missing),
                "lazy {lazy}: {:?}",
                sandbox.protected()
            );
        }
        let sandbox = Sandbox::new(None).unwrap();
        // Bytes have no path to protect.
        let before = sandbox.protected();
        sandbox
            .plugin_bytes("calc", std::fs::read(wasm("calc")).unwrap())
            .load()
            .await
            .unwrap();
        assert_eq!(sandbox.protected(), before);
    }
}
