//! What a front end may show while a component is compiled: a compile
//! takes seconds (an interpreter's component, 10 to 20 MB, 10 to 20 s),
//! and a person waiting on it should know why.
//!
//! The sandbox emits two `tracing` events at `info` level under
//! [`TARGET`] around every compile that does not come from the
//! compiled-code cache (a cache hit emits nothing):
//!
//! - `phase = "start"`, with `plugin` (its name) and `bytes` (the wasm's
//!   size), when compiling begins;
//! - `phase = "done"`, with the same fields, `ms` (how long it took) and
//!   `ok` (whether it compiled), when it ends.
//!
//! Nothing else is emitted under [`TARGET`], so a subscriber may render
//! these as it likes (the `toolhost` command draws a progress line on a
//! terminal) without parsing log text.

use std::time::Instant;

/// The `tracing` target of the compile progress events.
pub const TARGET: &str = "toolhost::progress";

/// One compile, reported when it starts and when it ends.
pub(crate) struct Compile<'a> {
    plugin: &'a str,
    bytes: u64,
    started: Option<Instant>,
}

impl<'a> Compile<'a> {
    /// A compile of `bytes` of wasm for the plugin `plugin`, not started.
    pub(crate) fn new(plugin: &'a str, bytes: usize) -> Self {
        Self {
            plugin,
            bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
            started: None,
        }
    }

    /// Compiling begins (the cache did not have the code).
    pub(crate) fn start(&mut self) {
        self.started = Some(Instant::now());
        tracing::info!(target: TARGET, phase = "start", plugin = self.plugin, bytes = self.bytes, "compiling");
    }

    /// The compile ended, `ok` or not; nothing if it never started.
    pub(crate) fn done(&self, ok: bool) {
        if let Some(started) = self.started {
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::info!(target: TARGET, phase = "done", plugin = self.plugin, bytes = self.bytes, ms, ok, "compiled");
        }
    }
}
