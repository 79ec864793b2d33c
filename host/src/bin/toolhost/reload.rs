//! Reloading `toolhost serve` (rule O3): on SIGHUP, and with `--watch` when
//! the configuration, a plugin's wasm file or `toolhost.lock` changes.
//!
//! A reload builds a whole new host from the file, off to the side, by the
//! same path as startup (`Config::build_host_with`, held to the lock when
//! the server was started `--locked`), so everything startup checks is
//! checked: the file, pins, the lock, signatures, grants, the host's own
//! paths, settings against their schemas. Only a host that built is served,
//! in place of the old one at once (`McpServer::replace_host`): calls in
//! flight finish on the old host, which is shut down when its last call
//! ends, and the new host's quotas count on from the old one's usage (calls
//! in flight, and the minute's calls and CPU time: rule A3). A change that
//! does not build is logged, naming the key, and the old host keeps
//! serving; the next change (or SIGHUP) tries again.
//!
//! Changes come in bursts (an editor writes a file in several steps, or
//! replaces it by a rename): a reload waits until the watched files have
//! been quiet for [`QUIET`], and changes that arrive while a host is being
//! built make one more build after it, never a queue of them. Once the
//! server is told to stop, nothing is reloaded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolhost::config::{ApprovalsEntry, BuildOptions, BuiltHost, Config};
use toolhost::mcp::McpServer;
use toolhost::sandbox::Sandbox;
use toolhost::supply::Source;

use crate::output::errln;

/// How long the watched files must be quiet before a reload.
const QUIET: Duration = Duration::from_millis(300);

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// A watched file changed.
    File,
    /// SIGHUP: reload even if no file seems changed.
    Signal,
}

/// What the reloads need to know, and the host serving now.
pub(crate) struct Reloads {
    server: McpServer,
    path: PathBuf,
    locked: bool,
    /// The configuration of the host serving now.
    config: Config,
    /// The sandbox of the host serving now: kept while it serves.
    sandbox: Sandbox,
    /// The files it was built from, as they were then.
    files: Files,
    /// Replaced hosts waiting for their last calls, then shut down.
    retiring: Vec<JoinHandle<()>>,
    /// Cancelled when the server has finished serving: a replaced host
    /// still held (by a task's call) is shut down then, as the current one
    /// is.
    end: CancellationToken,
}

/// The running reloader: stop it before the server's host is shut down.
pub(crate) struct Reloader {
    stop: CancellationToken,
    end: CancellationToken,
    task: JoinHandle<Reloads>,
}

impl Reloads {
    pub(crate) fn new(
        server: McpServer,
        path: PathBuf,
        locked: bool,
        config: Config,
        sandbox: Sandbox,
    ) -> Self {
        let files = Files::of(&path, &config);
        Self {
            server,
            path,
            locked,
            config,
            sandbox,
            files,
            retiring: Vec::new(),
            end: CancellationToken::new(),
        }
    }

    /// Reloads on SIGHUP, and with `watch` when a watched file changes,
    /// until `shutdown` (or [`Reloader::stop`]).
    pub(crate) fn start(self, watch: bool, shutdown: &CancellationToken) -> Reloader {
        let stop = shutdown.child_token();
        // One pending trigger is enough: changes that arrive while one is
        // pending are part of the same reload.
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(forward_sighup(tx.clone(), stop.clone()));
        let watcher = if watch {
            match FileWatcher::new(tx, &self.files) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::error!(
                        "--watch: cannot watch {}: {e}; reload with SIGHUP",
                        self.path.display()
                    );
                    None
                }
            }
        } else {
            None
        };
        let end = self.end.clone();
        let task = tokio::spawn(self.run(rx, watcher, stop.clone()));
        Reloader { stop, end, task }
    }

    async fn run(
        mut self,
        mut triggers: mpsc::Receiver<Trigger>,
        mut watcher: Option<FileWatcher>,
        stop: CancellationToken,
    ) -> Self {
        loop {
            let first = tokio::select! {
                t = triggers.recv() => t,
                () = stop.cancelled() => None,
            };
            let Some(first) = first else { break };
            let mut forced = first == Trigger::Signal;
            // Until the files have been quiet for a while.
            loop {
                tokio::select! {
                    t = triggers.recv() => match t {
                        Some(t) => forced |= t == Trigger::Signal,
                        None => break,
                    },
                    () = tokio::time::sleep(QUIET) => break,
                    () = stop.cancelled() => break,
                }
            }
            if stop.is_cancelled() {
                break;
            }
            self.reload(forced, watcher.as_mut(), &stop).await;
        }
        self
    }

    /// One reload: the file read, checked and built whole, then served.
    async fn reload(
        &mut self,
        forced: bool,
        watcher: Option<&mut FileWatcher>,
        stop: &CancellationToken,
    ) {
        let path = self.path.display().to_string();
        let config = match Config::load(&self.path) {
            Ok(config) => config,
            Err(e) => return self.refuse(&path, &toolhost::error::report(&e)),
        };
        let files = Files::of(&self.path, &config);
        // Watch what the new file names, whether or not it builds: a
        // plugin file that is missing now may be written next.
        if let Some(watcher) = watcher {
            watcher.follow(&files);
        }
        if !forced && files == self.files && config == self.config {
            tracing::debug!("{path}: nothing changed; not reloaded");
            return;
        }
        // Who may sign in and read /metrics is fixed when the server
        // starts; a reload that would seem to change it (a scope's tools
        // narrowed, a scraper's token replaced) while the old settings go
        // on deciding is refused, so that nobody takes it as applied.
        if config.auth != self.config.auth {
            return self.refuse(
                &path,
                "[auth] changed: who may sign in, and to which tools, changes only on a \
                 restart; restart the server to apply it",
            );
        }
        if config.metrics != self.config.metrics {
            return self.refuse(
                &path,
                "[metrics] changed: what is recorded and who may read /metrics change only on \
                 a restart; restart the server to apply it",
            );
        }
        // The same [metrics] may no longer do with the new file's tenants
        // (each tenant's calls readable by the others' callers).
        if let Err(e) = config.metrics_token() {
            return self.refuse(&path, &toolhost::error::report(&e));
        }
        let built = config
            .build_host_with(
                BuildOptions::new()
                    .locked(self.locked)
                    .metrics(self.server.host().metrics().cloned())
                    .traces(self.server.host().traces().cloned())
                    .quotas(self.server.host().quotas().cloned()),
            )
            .await;
        let BuiltHost { host, sandbox, .. } = match built {
            Ok(built) => built,
            Err(e) => return self.refuse(&path, &toolhost::error::report(&e)),
        };
        if stop.is_cancelled() {
            // The server is stopping: the old host sees it out.
            host.shutdown().await;
            return;
        }
        let changes = describe(&self.config, &self.files, &config, &files);
        if config.host.approval_timeout_ms != self.config.host.approval_timeout_ms {
            tracing::warn!(
                "{path}: host.approval_timeout_ms changed: the expiry of approvals asked by \
                 multi round-trip changes only on a restart (calls use the new timeout now)"
            );
        }
        if config.tracing != self.config.tracing {
            tracing::warn!("{path}: [tracing] changed: where spans go changes only on a restart");
        }
        let _ = self
            .server
            .clone()
            .ask_clients(config.host.approvals == ApprovalsEntry::Ask);
        let tools = host.tool_names().len();
        let prompt = host.system_prompt().await;
        // Checked with the rest of the configuration as the host was built.
        if let Ok(tenants) = config.tenant_map() {
            self.server.set_tenants(tenants);
        }
        let retired = self.server.replace_host(host, Some(prompt)).await;
        let old_sandbox = std::mem::replace(&mut self.sandbox, sandbox);
        self.retiring.retain(|t| !t.is_finished());
        let end = self.end.clone();
        self.retiring.push(tokio::spawn(async move {
            let host = retired.host().clone();
            tokio::select! {
                _ = retired.finished() => {}
                () = end.cancelled() => {}
            }
            host.shutdown().await;
            drop(old_sandbox);
        }));
        self.config = config;
        self.files = files;
        errln!("toolhost: reloaded {path}: {changes}; serving {tools} tools");
        if let Some(metrics) = self.server.host().metrics() {
            metrics.reload(true);
        }
    }

    fn refuse(&self, path: &str, why: &str) {
        self.server.record_refused_reload();
        if let Some(metrics) = self.server.host().metrics() {
            metrics.reload(false);
        }
        tracing::error!("reloading {path} failed; the previous configuration keeps serving: {why}");
    }
}

impl Reloader {
    /// Stops reloading (a build under way is finished and discarded), shuts
    /// the replaced hosts down, and hands back the sandbox of the host
    /// serving now. For a server that has finished serving.
    pub(crate) async fn stop(self) -> Sandbox {
        self.stop.cancel();
        self.end.cancel();
        let reloads = match self.task.await {
            Ok(reloads) => reloads,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        for task in reloads.retiring {
            let _ = task.await;
        }
        reloads.sandbox
    }
}

/// Sends a trigger on each SIGHUP, until `stop`.
async fn forward_sighup(tx: mpsc::Sender<Trigger>, stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot handle SIGHUP ({e}): reload with --watch");
            return;
        }
    };
    loop {
        tokio::select! {
            got = hangups.recv() => {
                if got.is_none() {
                    return;
                }
                // A full channel already holds a reload.
                let _ = tx.try_send(Trigger::Signal);
            }
            () = stop.cancelled() => return,
        }
    }
}

/// The files a configuration is built from — itself, `toolhost.lock`, each
/// plugin's wasm file — with a digest of each one's contents (`None`: it
/// could not be read).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Files {
    digests: BTreeMap<PathBuf, Option<blake3::Hash>>,
    /// Each plugin's file, by plugin name.
    plugins: BTreeMap<String, PathBuf>,
}

impl Files {
    fn of(path: &Path, config: &Config) -> Self {
        let mut files = Self::default();
        for file in [path.to_path_buf(), config.lock_path()] {
            files.add(canonical(&file));
        }
        for plugin in config.each_plugin() {
            if let Ok(Source::File(wasm)) = plugin.source() {
                let wasm = canonical(&wasm);
                files.add(wasm.clone());
                files.plugins.insert(plugin.name().to_owned(), wasm);
            }
        }
        files
    }

    /// Reads `path` once, however many plugins share it. BLAKE3 rather than
    /// the standard hasher: this runs before the server answers, and
    /// BLAKE3 reads a plugin's file several times faster. To notice a
    /// change, not to authenticate: pins do that.
    fn add(&mut self, path: PathBuf) {
        if self.digests.contains_key(&path) {
            return;
        }
        let digest = std::fs::read(&path).ok().map(|bytes| blake3::hash(&bytes));
        self.digests.insert(path, digest);
    }

    fn plugin_digest(&self, name: &str) -> Option<Option<blake3::Hash>> {
        self.plugins
            .get(name)
            .and_then(|p| self.digests.get(p).copied())
    }
}

/// `path` with its directory made canonical (the file itself may be
/// missing, or about to be replaced): how the watcher names it.
fn canonical(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// What a reload changes, for its log line.
fn describe(old: &Config, old_files: &Files, new: &Config, new_files: &Files) -> String {
    let (before, after): (BTreeSet<&String>, BTreeSet<&String>) =
        (old.plugins.keys().collect(), new.plugins.keys().collect());
    let list = |names: Vec<&String>| {
        names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let added: Vec<&String> = after.difference(&before).copied().collect();
    let removed: Vec<&String> = before.difference(&after).copied().collect();
    let changed: Vec<&String> = after
        .intersection(&before)
        .copied()
        .filter(|n| {
            old.plugins.get(*n) != new.plugins.get(*n)
                || old_files.plugin_digest(n) != new_files.plugin_digest(n)
        })
        .collect();
    let mut parts = Vec::new();
    for (what, names) in [
        ("plugins added", added),
        ("removed", removed),
        ("changed", changed),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what}: {}", list(names)));
        }
    }
    if parts.is_empty() {
        parts.push("no plugin changed".to_owned());
    }
    let mut others = Vec::new();
    if old.host != new.host {
        others.push("[host]");
    }
    if old.builtin != new.builtin {
        others.push("[builtin]");
    }
    if old.mcp != new.mcp {
        others.push("[mcp]");
    }
    if old != new && others.is_empty() && parts == ["no plugin changed"] {
        others.push("other tables");
    }
    if !others.is_empty() {
        parts.push(format!("{} changed", others.join(", ")));
    }
    parts.join("; ")
}

/// Watches the directories of the files a configuration is built from
/// (editors replace a file by renaming another over it, which a watch on
/// the file itself would miss), and sends a trigger when one of the files
/// is written, created, removed or renamed.
struct FileWatcher {
    watcher: notify::RecommendedWatcher,
    /// The files that matter, shared with the watcher's thread.
    files: Arc<Mutex<BTreeSet<PathBuf>>>,
    dirs: BTreeSet<PathBuf>,
}

impl FileWatcher {
    fn new(tx: mpsc::Sender<Trigger>, files: &Files) -> notify::Result<Self> {
        let wanted: Arc<Mutex<BTreeSet<PathBuf>>> = Arc::default();
        let seen = wanted.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if !is_change(&event.kind) {
                return;
            }
            let wanted = seen.lock().unwrap_or_else(|e| e.into_inner());
            if event.paths.iter().any(|p| wanted.contains(p)) {
                // A full channel already holds a reload.
                let _ = tx.try_send(Trigger::File);
            }
        })?;
        let mut this = Self {
            watcher,
            files: wanted,
            dirs: BTreeSet::new(),
        };
        this.follow(files);
        Ok(this)
    }

    /// Watches `files` from now on (and the files of no other
    /// configuration).
    fn follow(&mut self, files: &Files) {
        let dirs: BTreeSet<PathBuf> = files
            .digests
            .keys()
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .collect();
        for gone in self.dirs.difference(&dirs) {
            let _ = self.watcher.unwatch(gone);
        }
        for dir in dirs.difference(&self.dirs) {
            if let Err(e) = self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                tracing::warn!("--watch: cannot watch {}: {e}", dir.display());
            }
        }
        self.dirs = dirs;
        *self.files.lock().unwrap_or_else(|e| e.into_inner()) =
            files.digests.keys().cloned().collect();
    }
}

/// Whether an event may have changed a file's contents: reads (the build's
/// own, among them) and attribute changes do not.
fn is_change(kind: &EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, ModifyKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        EventKind::Any | EventKind::Other => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o3_reads_and_attribute_changes_do_not_reload() {
        use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, MetadataKind};
        use notify::event::{ModifyKind, RenameMode};
        assert!(!is_change(&EventKind::Access(AccessKind::Open(
            AccessMode::Read
        ))));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!is_change(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::Any
        ))));
        assert!(is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Data(
            DataChange::Any
        ))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Name(
            RenameMode::To
        ))));
        assert!(is_change(&EventKind::Create(CreateKind::File)));
    }
}
