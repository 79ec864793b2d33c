//! The progress line a person at a terminal sees while a plugin compiles
//! (the first call after each build of a Python or JavaScript plugin takes
//! 10 to 20 s): `compiling plugin `x` (12.3 MB) … 4 s`, redrawn every
//! second, then `compiled plugin `x` (12.3 MB) in 14.2 s`. It renders the
//! sandbox's compile events ([`toolhost::sandbox::progress`]); the command
//! adds it only when stderr is a terminal, so pipes and logs never see it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolhost::sandbox::progress::TARGET;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

/// How often the line's elapsed time is redrawn.
const TICK: Duration = Duration::from_secs(1);

/// Renders compile events on stderr. Clones share the line.
#[derive(Clone, Default)]
pub(crate) struct ProgressLine {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The compiles under way: plugin → (wasm size, start).
    running: BTreeMap<String, (u64, Instant)>,
    /// Whether the redrawing thread runs.
    ticking: bool,
}

/// The fields of one compile event.
#[derive(Default)]
struct Fields {
    phase: String,
    plugin: String,
    bytes: u64,
    ms: u64,
    ok: bool,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "phase" => value.clone_into(&mut self.phase),
            "plugin" => value.clone_into(&mut self.plugin),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "bytes" => self.bytes = value,
            "ms" => self.ms = value,
            _ => {}
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "ok" {
            self.ok = value;
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl ProgressLine {
    /// Whether `target` is the sandbox's compile events' (what this layer
    /// is to be filtered to).
    pub(crate) fn wants(target: &str) -> bool {
        target == TARGET
    }

    fn start(&self, plugin: String, bytes: u64) {
        let mut state = lock(&self.state);
        state.running.insert(plugin, (bytes, Instant::now()));
        draw(&state);
        if !state.ticking {
            state.ticking = true;
            let this = self.clone();
            // A thread, not a task: a compile blocks a runtime thread, and
            // the command's runtime may have few.
            let spawned = std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || this.tick());
            if spawned.is_err() {
                state.ticking = false;
            }
        }
    }

    fn done(&self, plugin: &str, bytes: u64, ms: u64, ok: bool) {
        let mut state = lock(&self.state);
        state.running.remove(plugin);
        let verb = if ok { "compiled" } else { "could not compile" };
        // Milliseconds as seconds with one decimal, without floats.
        let took = format!("{}.{} s", ms / 1000, ms % 1000 / 100);
        write(&format!(
            "\r\x1b[2K{verb} plugin `{plugin}` ({}) in {took}\n",
            megabytes(bytes)
        ));
        if !state.running.is_empty() {
            draw(&state);
        }
    }

    /// Redraws the line every [`TICK`] while anything compiles.
    fn tick(&self) {
        loop {
            std::thread::sleep(TICK);
            let mut state = lock(&self.state);
            if state.running.is_empty() {
                state.ticking = false;
                return;
            }
            draw(&state);
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for ProgressLine {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if !Self::wants(event.metadata().target()) {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        match fields.phase.as_str() {
            "start" => self.start(fields.plugin, fields.bytes),
            "done" => self.done(&fields.plugin, fields.bytes, fields.ms, fields.ok),
            _ => {}
        }
    }
}

/// The line for what compiles now, replacing the one drawn before.
fn draw(state: &State) {
    let Some(since) = state.running.values().map(|(_, at)| *at).min() else {
        return;
    };
    let what: Vec<String> = state
        .running
        .iter()
        .map(|(plugin, (bytes, _))| format!("`{plugin}` ({})", megabytes(*bytes)))
        .collect();
    let plural = if what.len() == 1 { "" } else { "s" };
    let secs = since.elapsed().as_secs();
    let elapsed = if secs == 0 {
        String::new()
    } else {
        format!(" {secs} s")
    };
    write(&format!(
        "\r\x1b[2Kcompiling plugin{plural} {} …{elapsed}",
        what.join(", ")
    ));
}

/// `12.3 MB`.
fn megabytes(bytes: u64) -> String {
    let tenths = bytes.saturating_add(50_000) / 100_000;
    format!("{}.{} MB", tenths / 10, tenths % 10)
}

fn write(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_megabytes_with_one_decimal() {
        assert_eq!(megabytes(0), "0.0 MB");
        assert_eq!(megabytes(12_199_095), "12.2 MB");
        assert_eq!(megabytes(18_515_943), "18.5 MB");
        assert_eq!(megabytes(u64::MAX), "18446744073709.5 MB");
    }
}
