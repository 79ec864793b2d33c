//! Fuzz targets for every boundary where outside bytes enter toolhost.
//!
//! Each target is a function from bytes to nothing that panics when a rule
//! is broken; its doc comment says what must hold. [`TARGETS`] lists them
//! all. Two harnesses drive them:
//!
//! - `fuzz/targets/` wraps each in a libFuzzer entry point for
//!   coverage-guided fuzzing (`make fuzz`, see `FUZZING.md`);
//! - `tests/corpus.rs` replays every input kept in `fuzz/corpus/<target>/`
//!   and `fuzz/regressions/<target>/` (`make test`), so that a crash seen
//!   once is caught again on every run.

mod call;
mod config;
mod guest;
mod mcp;
mod net;
mod readers;
mod shell;
mod supply;

/// One fuzz target: its name (the corpus directory's and the libFuzzer
/// binary's) and its entry point.
pub struct Target {
    /// The name.
    pub name: &'static str,
    /// Runs one input; panics when a rule is broken.
    pub run: fn(&[u8]),
}

/// Every target, in the order `make fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "arguments",
        run: call::arguments,
    },
    Target {
        name: "artifact_read",
        run: call::artifact_read,
    },
    Target {
        name: "mcp_stdio",
        run: mcp::stdio,
    },
    Target {
        name: "mcp_http",
        run: mcp::http,
    },
    Target {
        name: "config",
        run: config::config,
    },
    Target {
        name: "host_rule",
        run: net::host_rule,
    },
    Target {
        name: "net_policy",
        run: net::net_policy,
    },
    Target {
        name: "request_uri",
        run: guest::request_uri,
    },
    Target {
        name: "guest_output",
        run: guest::output,
    },
    Target {
        name: "guest_error",
        run: guest::error,
    },
    Target {
        name: "guest_descriptors",
        run: guest::descriptors,
    },
    Target {
        name: "shell_line",
        run: shell::shell_line,
    },
    Target {
        name: "sse",
        run: readers::sse,
    },
    Target {
        name: "openai_response",
        run: readers::openai_response,
    },
    Target {
        name: "anthropic_response",
        run: readers::anthropic_response,
    },
    Target {
        name: "cdp",
        run: readers::cdp,
    },
    Target {
        name: "skill_front_matter",
        run: readers::skill_front_matter,
    },
    Target {
        name: "oci_reference",
        run: supply::oci_reference,
    },
    Target {
        name: "lock_file",
        run: supply::lock_file,
    },
    Target {
        name: "signature",
        run: supply::signature,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Runs `f` on a single-threaded Tokio runtime kept for the thread (a
/// fuzzer calls a target millions of times; building a runtime each time
/// would be most of the cost).
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime starts");
    }
    RUNTIME.with(|rt| rt.block_on(f))
}
