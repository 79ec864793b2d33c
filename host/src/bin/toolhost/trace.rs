//! `toolhost call --trace`: where one call's time went, for a person at a
//! terminal. The stages the sandbox and a remote server report (the wait
//! for an instance slot, instantiation, the guest, a remote server's
//! answer) are timed by the call's observer; what is left of the call's
//! whole time is the rest of the pipeline: loading the plugin if this is
//! its first call, validation, hooks, rules and the approval wait.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolhost::observe::{Observer, Stage};

/// Records each stage of one call, in the order they are reported.
#[derive(Default)]
pub(crate) struct CallTrace {
    stages: Mutex<Vec<(String, Stage, Duration)>>,
    memory: Mutex<Option<u64>>,
}

impl Observer for CallTrace {
    fn stage(&self, plugin: &str, stage: Stage, took: Duration) {
        self.stages.lock().unwrap_or_else(|e| e.into_inner()).push((
            plugin.to_owned(),
            stage,
            took,
        ));
    }

    fn memory_high_water(&self, _plugin: &str, bytes: u64) {
        *self.memory.lock().unwrap_or_else(|e| e.into_inner()) = Some(bytes);
    }
}

impl CallTrace {
    /// A trace to hand the call.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The table of `tool`'s call, which took `total` in all: one line per
    /// stage reported, then the rest and the total.
    pub(crate) fn render(&self, tool: &str, total: Duration) -> String {
        let stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = format!("trace of `{tool}`:\n");
        let mut measured = Duration::ZERO;
        for (plugin, stage, took) in stages.iter() {
            measured += *took;
            let whose = if plugin.is_empty() {
                String::new()
            } else {
                format!("  ({plugin})")
            };
            out.push_str(&format!(
                "  {:<14} {:>10}{whose}\n",
                stage.as_str(),
                ms(*took)
            ));
        }
        out.push_str(&format!(
            "  {:<14} {:>10}  (loading the plugin on its first call, validation, hooks, rules, approval)\n",
            "the rest",
            ms(total.saturating_sub(measured))
        ));
        out.push_str(&format!("  {:<14} {:>10}\n", "total", ms(total)));
        if let Some(bytes) = *self.memory.lock().unwrap_or_else(|e| e.into_inner()) {
            out.push_str(&format!(
                "  guest memory at its largest: {:.1} MiB\n",
                bytes as f64 / (1024.0 * 1024.0)
            ));
        }
        out
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x1_a_trace_lists_each_stage_and_the_rest() {
        let trace = CallTrace::new();
        trace.stage("calc", Stage::Instantiate, Duration::from_micros(300));
        trace.stage("calc", Stage::Guest, Duration::from_micros(200));
        let text = trace.render("calc", Duration::from_millis(2));
        assert!(text.contains("instantiate"), "{text}");
        assert!(text.contains("0.200 ms  (calc)"), "{text}");
        assert!(text.contains("the rest"), "{text}");
        assert!(text.contains("1.500 ms"), "{text}");
        assert!(text.contains("2.000 ms"), "{text}");
    }
}
