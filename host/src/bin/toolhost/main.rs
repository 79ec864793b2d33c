//! The `toolhost` command: inspect plugins, check a configuration, call a
//! tool, serve tools over MCP.

mod agent;
mod approve;
mod call;
mod check;
mod elicit;
mod explain;
mod inspect;
mod keygen;
mod lock;
mod new;
mod output;
mod progress;
mod pull;
mod push;
mod reload;
mod serve;
mod sign;
mod token;
mod tools;
mod trace;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use toolhost::config::Config;

use crate::output::errln;

/// mimalloc rather than glibc's malloc. Under 64 MCP clients glibc's
/// allocator was 13 % of the server's CPU, and with traces on, where a
/// call's spans are made on its thread and finished on another, its
/// cross-thread frees made a traced echo call 1.18–1.22× the untraced one;
/// with mimalloc 1.11–1.12× (BENCHMARKS.md, "Metrics and traces").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// toolhost runs AI-agent tools — native ones and sandboxed WebAssembly
/// plugins — behind one pipeline of validation, hooks, timeouts and
/// policies.
///
/// Start with `toolhost check` on your toolhost.toml to see what each plugin
/// is granted, then `toolhost call TOOL '{...}'` to try a tool, and
/// `toolhost agent "PROMPT"` to let a model use them, or `toolhost serve`
/// to offer every tool to an MCP client.
#[derive(Parser)]
#[command(name = "toolhost", version, about, long_about)]
struct Cli {
    /// How much to log on stderr: error, warn, info, debug or trace (or a
    /// tracing filter such as `toolhost=debug`). Defaults to $RUST_LOG, else
    /// error (warn for `serve`). Colours only on a terminal, never with
    /// $NO_COLOR set.
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what a plugin is: its world and version, each tool with its
    /// description and schema, and the capabilities it imports (what it would
    /// ask to be granted). The plugin runs with nothing granted.
    Inspect {
        /// The component file (`.wasm`).
        plugin: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate the configuration and print, per plugin, exactly what it is
    /// granted. Exits 1 with the first error's key and reason.
    ///
    /// Each plugin's source is shown with its digest, its state in
    /// toolhost.lock, and its signature; a plugin from a registry by tag is
    /// checked against what the tag names now. With --locked, anything not
    /// as locked is an error.
    Check {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Hold every plugin to toolhost.lock: refuse one that resolves to
        /// another digest, and take what the plugin store has without asking
        /// a registry.
        #[arg(long)]
        locked: bool,
    },
    /// Write toolhost.lock: the digest every plugin resolves to now. A
    /// plugin from a registry is resolved by asking the registry (and
    /// pulled into the plugin store); a file is hashed.
    Lock {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
    },
    /// Pull a component from an OCI registry into the plugin store and
    /// print its digests: REF is oci://HOST[:PORT]/REPO:TAG or
    /// oci://HOST[:PORT]/REPO@sha256:DIGEST. Credentials come from
    /// $TOOLHOST_REGISTRY_USERNAME and $TOOLHOST_REGISTRY_PASSWORD, else the
    /// Docker config file.
    Pull {
        /// The reference.
        reference: String,
        /// The configuration whose cache directory holds the store (the
        /// default cache directory if the file does not exist).
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// Use plain HTTP for a registry that is not on loopback.
        #[arg(long)]
        insecure: bool,
        /// A host besides the registry that its redirects may reach, as
        /// [scheme://]host[:port] (repeatable); a redirect anywhere else
        /// fails the pull.
        #[arg(long = "registry-host", value_name = "HOST")]
        registry_hosts: Vec<String>,
    },
    /// Make a key pair for signing plugins: NAME.key, the secret key
    /// (mode 0600; keep it private), and NAME.public, the public key to
    /// name in [trust] keys. Neither file may exist yet. The files are
    /// wasmsign2's, which its command line also reads.
    Keygen {
        /// The files' name without extension: `release` makes release.key
        /// and release.public.
        #[arg(long, short, value_name = "NAME")]
        out: PathBuf,
    },
    /// Sign a component with a secret key: the signature (wasmsign2's, with
    /// the key's identifier) goes in a custom section at the component's
    /// front and covers every byte after it, so it travels with the file
    /// through any copy or registry. Signatures by other keys are kept.
    Sign {
        /// The secret key (from `toolhost keygen` or `wasmsign2 keygen`;
        /// PEM, DER and OpenSSH ed25519 keys too).
        #[arg(long, short, value_name = "FILE")]
        key: PathBuf,
        /// The component to sign.
        input: PathBuf,
        /// Where to write the signed component (written whole or not at
        /// all; may be the input).
        #[arg(long, short, value_name = "FILE")]
        output: PathBuf,
    },
    /// Push a component to an OCI registry as a CNCF wasm artifact (what
    /// `wkg oci push` writes, and `toolhost pull` and a plugin's
    /// `wasm = "oci://…"` read) and print the manifest's digest. REFERENCE is
    /// oci://HOST[:PORT]/REPO:TAG. Credentials come from
    /// $TOOLHOST_REGISTRY_USERNAME and $TOOLHOST_REGISTRY_PASSWORD, else the
    /// Docker config file.
    Push {
        /// The component file.
        file: PathBuf,
        /// The reference to push to.
        reference: String,
        /// Use plain HTTP for a registry that is not on loopback.
        #[arg(long)]
        insecure: bool,
    },
    /// List every tool the configuration registers — plugins', built-in
    /// ones and remote MCP servers' — with where it comes from and its
    /// argument and result schemas.
    Tools {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Hold every plugin to toolhost.lock: refuse one that resolves to
        /// another digest, and take what the plugin store has without asking
        /// a registry.
        #[arg(long)]
        locked: bool,
    },
    /// Make one call through the whole pipeline and print the model-facing
    /// text. Exits 1 with a one-line reason if the call fails.
    Call {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// The tool to call.
        tool: String,
        /// The arguments as JSON, or `-` to read them from stdin. Default `{}`.
        args: Option<String>,
        /// Print the typed result (or error) as JSON.
        #[arg(long)]
        json: bool,
        /// Hold every plugin to toolhost.lock: refuse one that resolves to
        /// another digest, and take what the plugin store has without asking
        /// a registry.
        #[arg(long)]
        locked: bool,
        /// Print on stderr where the call's time went: waiting for an
        /// instance, instantiating, the guest, a remote server, and the
        /// rest of the pipeline.
        #[arg(long)]
        trace: bool,
    },
    /// Show how the configuration's [[rules]] judge a call of TOOL with
    /// ARGS: the decision (allow, ask or deny), which rule decided and
    /// why, and for every rule whether it matches and, if not, why not.
    /// Nothing is called and no hook runs: in a call, before hooks run
    /// first and the rules judge the arguments they leave.
    Explain {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// The tool.
        tool: String,
        /// The arguments as JSON. Default `{}`.
        args: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Hold every plugin to toolhost.lock.
        #[arg(long)]
        locked: bool,
    },
    /// Run an agent on a prompt: the model in the configuration's [agent]
    /// table, with every configured tool. Tool activity is printed to stderr
    /// as it happens, the final answer to stdout.
    Agent {
        /// The configuration file.
        #[arg(long, short, default_value = "toolhost.toml")]
        config: PathBuf,
        /// What to ask.
        prompt: String,
        /// Hold every plugin to toolhost.lock: refuse one that resolves to
        /// another digest, and take what the plugin store has without asking
        /// a registry.
        #[arg(long)]
        locked: bool,
    },
    /// Offer every tool of the configuration to MCP clients: over stdin and
    /// stdout (the default: an MCP client starts `toolhost serve` as its
    /// server), or over streamable HTTP at http://ADDR/mcp with --http.
    /// Every call goes through the same pipeline as `toolhost call`.
    ///
    /// Over stdio, stdout carries nothing but the protocol; logs go to
    /// stderr. Over HTTP, requests with a browser Origin other than
    /// localhost (or one given with --allow-origin) are refused, so a web
    /// page cannot drive the tools; use --token-file whenever anyone else
    /// can reach the port: an address other machines can reach is refused
    /// without it, unless --insecure-no-auth is given. Stops on end of input
    /// (stdio), Ctrl-C or SIGTERM.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(serve::ServeArgs),
    /// Start a plugin project: NAME/ with a tool that echoes its text, in
    /// Rust (with toolhost's SDK), Python (componentize-py) or JavaScript
    /// (ComponentizeJS), that builds outside this repository with the one
    /// command it prints. Its `toolhost.toml` table is printed, or added to
    /// the file given with --config.
    New {
        #[arg(help = new::NAME_HELP)]
        name: String,
        /// Its language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: new::Lang,
        /// Where to create it (default: ./NAME); must not exist.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A toolhost.toml to add the plugin's table to (created if
        /// missing).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Print a completion script for SHELL on stdout, e.g.
    /// `toolhost completions bash > ~/.local/share/bash-completion/completions/toolhost`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

const SERVE_EXAMPLES: &str = "\
Examples:
  toolhost serve                                 # stdio, for an MCP client to start
  toolhost serve --http 8000                     # http://127.0.0.1:8000/mcp
  toolhost serve --http 0.0.0.0:8000 --token-file token.txt --allow-host box.lan
  toolhost serve --http 8000 --watch             # reload when toolhost.toml, a plugin or the lock changes

An MCP client's configuration for the stdio form:
  {\"mcpServers\": {\"toolhost\": {\"command\": \"toolhost\",
     \"args\": [\"serve\", \"--config\", \"/path/to/toolhost.toml\"]}}}";

/// Logs go to stderr at `filter`, else $RUST_LOG, else `quiet`: a command
/// that fails says so in its one `error:` line, not in log records before
/// it. Colours only when stderr is a terminal and $NO_COLOR is unset or
/// empty (https://no-color.org). On a terminal, a plugin being compiled
/// shows a progress line whatever the filter (see [`progress`]).
fn init_logging(filter: Option<&str>, quiet: &str) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _, filter};
    let filter = match filter {
        Some(f) => EnvFilter::new(f),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(quiet)),
    };
    let terminal = std::io::stderr().is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    // Logs go to stderr: stdout carries results (and, when serving over
    // stdio, nothing but protocol).
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_filter(log_filter(filter));
    let progress = terminal.then(|| {
        progress::ProgressLine::default().with_filter(
            filter::filter_fn(|m| progress::ProgressLine::wants(m.target()))
                // The compile events are `info`; see `log_filter` for why
                // a filter says how verbose it can be.
                .with_max_level_hint(LevelFilter::INFO),
        )
    });
    tracing_subscriber::registry()
        .with(logs)
        .with(progress)
        .init();
}

/// The log's filter: `filter`, and never wasmtime-wasi's debug records,
/// which quote the bytes a guest writes to its stdout and stderr,
/// unredacted (the guest's output reaches the log through
/// `toolhost::guest` instead, redacted of every secret: rule O2), whatever
/// `filter` asks for.
///
/// Both parts are decided from a callsite's metadata alone, and each says
/// how verbose it can be, so the filter has a most verbose level:
/// `filter`'s (`warn` when serving). The subscriber then turns away
/// records past it where they are made, before it sees them: a
/// dependency's debug spans and `log` records, which are many per request.
/// A bare `filter_fn` has no such level, and with it every one of them was
/// made and offered to the subscriber (about 6 % of `serve --http`'s CPU
/// under load).
fn log_filter<S>(
    filter: tracing_subscriber::EnvFilter,
) -> impl tracing_subscriber::layer::Filter<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::filter::{self, FilterExt as _, LevelFilter};
    let no_guest_bytes = filter::filter_fn(|m| {
        !(m.target().starts_with("wasmtime_wasi") && *m.level() > tracing::Level::INFO)
    })
    .with_max_level_hint(LevelFilter::TRACE);
    filter.and(no_guest_bytes)
}

/// Loads the configuration at `path`; when there is none, says how to make
/// one.
pub(crate) fn load_config(path: &Path) -> Result<Config, Failure> {
    if !path.exists() {
        return Err(Failure(format!(
            "{}: there is no configuration file here; `toolhost new NAME --config {0}` starts \
             a plugin project and writes one with its table, or write one yourself (README.md, \
             \"Plugins and the sandbox\", lists the keys; the repository's toolhost.toml is a \
             working example), or name yours with --config FILE",
            path.display()
        )));
    }
    Ok(Config::load(path)?)
}

/// A failure that ends the command: printed as one line, exit status 1.
#[derive(Debug)]
pub(crate) struct Failure(pub String);

impl Failure {
    /// A failure the command has already reported in its output (`call
    /// --json` prints the error as JSON): exit status 1, nothing more
    /// printed.
    pub(crate) fn reported() -> Self {
        Self(String::new())
    }
}

/// An error becomes its whole chain of causes on one line.
impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        Self(toolhost::error::report(&e))
    }
}

impl Command {
    /// Whether the command loads a configuration's plugins or checks it,
    /// and so compiles JSON Schemas (settings, tools' parameters) before
    /// it is done. Not `serve`: a start whose plugins' tool lists and
    /// settings the cache vouches for compiles none before its first
    /// answer (their validators are built in the background, after it),
    /// and the preparation's thread would only compete with that answer
    /// for the cores; `serve` starts it itself when its configuration has
    /// tools whose schemas are compiled at start.
    fn compiles_schemas(&self) -> bool {
        matches!(
            self,
            Command::Check { .. }
                | Command::Tools { .. }
                | Command::Call { .. }
                | Command::Explain { .. }
                | Command::Agent { .. }
        )
    }
}

/// Builds the JSON Schema meta-schema's validator, which the first schema
/// compile needs, on a thread of its own; a compile that comes first
/// waits for it or builds it itself.
pub(crate) fn prepare_meta_schema_beside() {
    let _ = std::thread::Builder::new()
        .name("toolhost-schemas".into())
        .spawn(toolhost::schema::prepare_meta_schema);
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout, usage errors to stderr; a
            // reader that went away is no reason to panic.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    if cli.command.compiles_schemas() {
        // Overlaps the runtime's start and the configuration's load, which
        // do not need it, with the first schema compile's own preparation.
        prepare_meta_schema_beside();
    }
    let quiet = if matches!(cli.command, Command::Serve(_)) {
        "warn"
    } else {
        "error"
    };
    init_logging(cli.log.as_deref(), quiet);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Inspect { plugin, json } => inspect::run(&plugin, json).await,
            Command::Check {
                config,
                json,
                locked,
            } => check::run(&config, json, locked).await,
            Command::Lock { config } => lock::run(&config).await,
            Command::Pull {
                reference,
                config,
                insecure,
                registry_hosts,
            } => pull::run(&reference, &config, insecure, &registry_hosts).await,
            Command::Keygen { out } => keygen::run(&out),
            Command::Sign { key, input, output } => sign::run(&key, &input, &output),
            Command::Push {
                file,
                reference,
                insecure,
            } => push::run(&file, &reference, insecure).await,
            Command::Tools {
                config,
                json,
                locked,
            } => tools::run(&config, json, locked).await,
            Command::Completions { shell } => {
                use clap::CommandFactory as _;
                let mut out = Vec::new();
                clap_complete::generate(shell, &mut Cli::command(), "toolhost", &mut out);
                output::write_out(format_args!("{}", String::from_utf8_lossy(&out)))
            }
            Command::Call {
                config,
                tool,
                args,
                json,
                locked,
                trace,
            } => call::run(&config, &tool, args.as_deref(), json, locked, trace).await,
            Command::Explain {
                config,
                tool,
                args,
                json,
                locked,
            } => explain::run(&config, &tool, args.as_deref(), json, locked).await,
            Command::Agent {
                config,
                prompt,
                locked,
            } => agent::run(&config, &prompt, locked).await,
            Command::New {
                name,
                lang,
                dir,
                config,
            } => new::run(&name, lang, dir.as_deref(), config.as_deref()),
            Command::Serve(args) => serve::run(args).await,
        }
    });
    // A read of a terminal's stdin cannot be interrupted: do not wait on it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Nobody reads the output any more (`toolhost … | head`): stop
        // quietly.
        Err(_) if output::stdout_closed() => ExitCode::SUCCESS,
        Err(Failure(reason)) if reason.is_empty() => ExitCode::FAILURE,
        Err(Failure(reason)) => {
            errln!("error: {reason}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::Filter as _;
    use tracing_subscriber::{EnvFilter, Registry};

    use super::log_filter;

    #[test]
    fn the_logs_filter_is_no_more_verbose_than_asked() {
        for (asked, level) in [
            ("warn", LevelFilter::WARN),
            ("error", LevelFilter::ERROR),
            ("warn,toolhost::call=info", LevelFilter::INFO),
            ("debug", LevelFilter::DEBUG),
        ] {
            let filter = log_filter::<Registry>(EnvFilter::new(asked));
            assert_eq!(filter.max_level_hint(), Some(level), "{asked}");
        }
    }
}
