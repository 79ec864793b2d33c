//! `toolhost serve`: every tool of the configuration, offered to MCP clients
//! over stdio or streamable HTTP.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolhost::Metrics;
use toolhost::config::ApprovalsEntry;
use toolhost::config::{BuildOptions, BuiltHost};
use toolhost::mcp::{
    HttpOptions, MCP_PATH, McpServer, MemoryTaskStore, ProtocolStdio, RedisTaskStore, TaskSettings,
    TaskStore, serve_http, serve_stdio,
};
use toolhost::mcp::{MetricsAccess, MetricsEndpoint};
use toolhost::otlp::TraceExport;
use toolhost::sandbox::{CodeSource, WarmUp};

use crate::Failure;
use crate::output::errln;
use crate::token;

/// What `toolhost serve` was asked to do.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The configuration file.
    #[arg(long, short, default_value = "toolhost.toml")]
    config: PathBuf,
    /// Hold every plugin to toolhost.lock: refuse one that resolves to
    /// another digest, and take what the plugin store has without asking a
    /// registry.
    #[arg(long)]
    locked: bool,
    /// Serve streamable HTTP on ADDR instead of stdio: HOST:PORT with an IP
    /// address, or just PORT to bind 127.0.0.1 (port 0 picks a free one; the
    /// address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// A file holding the token every HTTP request must present as
    /// `Authorization: Bearer TOKEN` (wrong or missing: 401). Required to
    /// serve an address other machines can reach, unless
    /// --insecure-no-auth is given. The token must carry at least 128 bits
    /// (e.g. `openssl rand -base64 32 > FILE`); a weaker one is refused.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Serve an address other machines can reach (e.g. 0.0.0.0) without a
    /// token: anyone who can reach the port can call every tool.
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    insecure_no_auth: bool,
    /// A browser origin to allow besides localhost ones, as
    /// scheme://host[:port] or scheme://host:* (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// A Host header value to allow besides the loopback names and the bound
    /// address, e.g. this machine's DNS name when binding 0.0.0.0
    /// (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// The largest HTTP request body accepted, in KiB (larger: 413).
    #[arg(long, value_name = "KIB", default_value_t = 4096)]
    max_request_kb: usize,
    /// How many MCP sessions may be open at once over HTTP; a client that
    /// would open one more gets 503 until one closes (by DELETE, or after
    /// five idle minutes).
    #[arg(long, value_name = "N", default_value_t = toolhost::mcp::DEFAULT_MAX_SESSIONS)]
    max_sessions: usize,
    /// Serve every HTTP request on its own (MCP's stateless mode): no
    /// sessions, so replicas behind a load balancer need no stickiness.
    /// Gives up notifications outside a request (tools/list_changed).
    #[arg(long, requires = "http")]
    stateless: bool,
    /// Answer a request served without a session (every request with
    /// --stateless, every request of a 2026-07-28 client) with one JSON
    /// body when the answer is its only message, instead of an SSE stream.
    /// The response's headers then wait for the answer: a proxy that cuts
    /// responses silent for too long may cut a slow call.
    #[arg(long, requires = "http")]
    json_response: bool,
    /// A file holding the key that seals the approval questions put to MCP
    /// clients of protocol 2026-07-28 (asked by multi round-trip: the
    /// client calls again with the answer), so that any replica holding the
    /// same key can finish a call another one asked about. One line of at
    /// least 32 characters and 128 bits (e.g. `openssl rand -base64 32 >
    /// FILE`); keep it secret. Without it, a random key of this process.
    #[arg(long, value_name = "FILE")]
    approval_key_file: Option<PathBuf>,
    /// Where the tasks of long calls are kept (MCP's tasks extension, for
    /// clients of protocol 2026-07-28 that declare it): `memory` (this
    /// process; the default) or a Redis URL (`redis://[user:password@]HOST:PORT[/DB]`,
    /// `rediss://` for TLS) shared by every replica, so that any of them
    /// answers for any task. `off` offers no tasks.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    task_store: String,
    /// A call still running after this long becomes a task, for clients
    /// that declared tasks (seconds; 0: every such call does).
    #[arg(long, value_name = "SECONDS", default_value_t = toolhost::mcp::DEFAULT_TASK_AFTER.as_secs_f64())]
    task_after: f64,
    /// How long a task and its result are kept after it was created; a
    /// task still running then is stopped and reported failed (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = toolhost::mcp::DEFAULT_TASK_TTL.as_secs_f64())]
    task_ttl: f64,
    /// After SIGTERM or Ctrl-C, how long calls in flight get to finish
    /// before the server exits (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = toolhost::mcp::DEFAULT_GRACE.as_secs_f64())]
    grace: f64,
    /// After SIGTERM or Ctrl-C, how long the server, already unready on
    /// /readyz, keeps accepting requests so that a load balancer stops
    /// sending first (seconds; at most --grace).
    #[arg(long, value_name = "SECONDS", default_value_t = toolhost::mcp::DEFAULT_DRAIN_DELAY.as_secs_f64())]
    drain_delay: f64,
    /// Reload when the configuration, a plugin's wasm file or toolhost.lock
    /// changes (SIGHUP reloads with or without it). The new configuration
    /// is checked and built whole first and then replaces the old one at
    /// once; calls in flight finish on the old one, and one that does not
    /// build is logged and leaves the old one serving.
    #[arg(long)]
    watch: bool,
}

/// How long the spans still queued at the end may take to send.
const TRACE_FLUSH: Duration = Duration::from_secs(5);

pub(crate) async fn run(args: ServeArgs) -> Result<(), Failure> {
    // Over stdio, stdout belongs to the protocol from the very start:
    // nothing that loading the configuration does may write to it.
    let stdio = match args.http {
        None => Some(
            ProtocolStdio::take()
                .map_err(|e| Failure(format!("cannot take stdin and stdout: {e}")))?,
        ),
        Some(_) => None,
    };
    let http = match &args.http {
        Some(addr) => {
            let (addr, options) = (parse_addr(addr)?, http_options(&args)?);
            // Before anything is loaded or bound. `[auth]` guards the
            // address too, so when nothing else does the file is read
            // (only read); one that cannot be is no guard.
            let oauth =
                || toolhost::config::Config::load(&args.config).is_ok_and(|c| c.auth.is_some());
            refuse_open_exposure(addr, &options, oauth, args.insecure_no_auth)?;
            Some((addr, options))
        }
        None => None,
    };
    let approval_key = match args.approval_key_file.as_deref() {
        Some(path) => Some((path, token::read("--approval-key-file", path)?)),
        None => None,
    };
    // Before anything is loaded: a store that cannot be reached stops the
    // server from starting, rather than leaving it without tasks.
    let tasks = task_store(&args).await?;
    let config = crate::load_config(&args.config)?;
    if !config.mcp.is_empty() {
        // Remote servers' tools have their schemas compiled as they are
        // listed, at start: the meta-schema's validator that needs is
        // built beside the rest of the start. (Plugins listed from the
        // cache and built-in tools need none by then.)
        crate::prepare_meta_schema_beside();
    }
    let http = match http {
        Some((addr, options)) => Some((addr, oauth(&config, options).await?)),
        None => {
            if config.auth.is_some() {
                tracing::info!("[auth] applies to --http only; on stdio the one client is local");
            }
            None
        }
    };
    // Metrics (rule X1), served over HTTP and kept across reloads.
    let (http, metrics) = with_metrics(&config, http)?;
    // Traces (rule X2), exported for the whole run and kept across reloads.
    let export = match config.trace_settings()? {
        Some(settings) => Some(
            TraceExport::start(&settings)
                .map_err(|e| Failure(format!("[tracing]: {}", toolhost::error::report(&e))))?,
        ),
        None => None,
    };
    // Plugins whose tool lists the cache holds are listed from them, and
    // their code is loaded in the background: the server answers sooner
    // (rule W7).
    let BuiltHost {
        host,
        sandbox,
        warming,
        ..
    } = config
        .build_host_with(
            BuildOptions::new()
                .warm_up(true)
                .locked(args.locked)
                .metrics(metrics.clone())
                .traces(export.as_ref().map(TraceExport::traces)),
        )
        .await?;
    let shutdown = CancellationToken::new();
    let stop_warming = shutdown.child_token();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    // With `approvals = "ask"`, a hook's question goes to the client's user.
    let ask_clients = config.host.approvals == ApprovalsEntry::Ask;
    let mut server = McpServer::with_instructions(host.clone(), Some(host.system_prompt().await))
        .ask_clients(ask_clients);
    // Once a client has the tool list, or a little later if none asks.
    let listed = server.clone();
    let warm_up_when = async move {
        tokio::select! {
            () = listed.tools_listed() => "a client has the tool list",
            () = tokio::time::sleep(WARM_UP_AT_THE_LATEST) => "no client asked for the tool list",
        }
    };
    tokio::spawn(warm_up(
        warm_up_when,
        warming,
        metrics,
        stop_warming.clone(),
    ));
    // Who each caller is for: its tenant's quotas apply (rules A2, A3).
    server.set_tenants(config.tenant_map()?);
    if let Some((path, key)) = approval_key {
        server = server.approval_key(key.as_bytes()).map_err(|e| {
            Failure(format!(
                "--approval-key-file {}: {}",
                path.display(),
                toolhost::error::report(&e)
            ))
        })?;
    }
    server = match tasks {
        Some((store, settings)) => server.tasks(store, settings),
        None => server.without_tasks(),
    };
    // SIGHUP, and with --watch a changed file, reloads (rule O3).
    let reloader = crate::reload::Reloads::new(
        server.clone(),
        args.config.clone(),
        args.locked,
        config,
        sandbox,
    )
    .start(args.watch, &shutdown);
    let served = serve(server.clone(), stdio, http, shutdown).await;
    // Loads still under way are not wanted any more: stopped here, before
    // the runtime's shutdown cancels their threads' work.
    stop_warming.cancel();
    let _sandbox = reloader.stop().await;
    // The host serving at the end, which a reload may have replaced.
    server.host().shutdown().await;
    // The spans still queued go to the collector, within a bound.
    if let Some(export) = export {
        export.shutdown(TRACE_FLUSH).await;
    }
    served
}

async fn serve(
    server: McpServer,
    stdio: Option<ProtocolStdio>,
    http: Option<(SocketAddr, HttpOptions)>,
    shutdown: CancellationToken,
) -> Result<(), Failure> {
    let tools = server.host().tool_names().len();
    match (stdio, http) {
        (Some(stdio), _) => {
            tracing::info!("serving {tools} tools over MCP on stdio");
            let reason = serve_stdio(server, stdio, shutdown)
                .await
                .map_err(|e| Failure(toolhost::error::report(&e)))?;
            tracing::info!("MCP client gone ({reason:?})");
            Ok(())
        }
        (None, Some((addr, options))) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure(format!("cannot listen on {addr}: {e}")))?;
            let local = listener.local_addr()?;
            if !is_loopback(local) && options.bearer_token.is_none() && options.oauth.is_none() {
                tracing::warn!(
                    "serving on {local} without a token (--insecure-no-auth): anyone who can \
                     reach it can call every tool"
                );
            }
            // Always printed (on stderr): it says where to connect, and with
            // port 0 it is the only way to learn the port.
            errln!("toolhost: serving {tools} tools over MCP at http://{local}{MCP_PATH}");
            serve_http(server, listener, options, shutdown)
                .await
                .map_err(|e| {
                    Failure(format!(
                        "serving HTTP on {local}: {}",
                        toolhost::error::report(&e)
                    ))
                })
        }
        (None, None) => unreachable!("serve has a transport"),
    }
}

/// `options` with the OAuth resource server of `[auth]`, if the
/// configuration has the table (rule A1): its settings checked, the
/// authorization server's metadata read if need be (a failure stops the
/// server: nothing starts half-configured) and its keys fetched.
async fn oauth(
    config: &toolhost::config::Config,
    mut options: HttpOptions,
) -> Result<HttpOptions, Failure> {
    let Some(settings) = config.auth_settings()? else {
        return Ok(options);
    };
    if options.bearer_token.is_some() {
        return Err(Failure(
            "--token-file and [auth] exclude each other: a request could pass by either. Keep \
             the static token for one user, or [auth] for a team"
                .into(),
        ));
    }
    let issuer = settings.issuer.clone();
    let server = toolhost::mcp::auth::ResourceServer::start(settings)
        .await
        .map_err(|e| Failure(format!("auth: {issuer}: {}", toolhost::error::report(&e))))?;
    tracing::info!(
        "OAuth: tokens of {issuer} for {}, keys from {}",
        server.resource(),
        server.jwks_uri()
    );
    options.oauth = Some(Arc::new(server));
    Ok(options)
}

/// `HOST:PORT`, `:PORT` or `PORT` (on 127.0.0.1).
fn parse_addr(addr: &str) -> Result<SocketAddr, Failure> {
    let port_only = addr.strip_prefix(':').unwrap_or(addr);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    addr.parse().map_err(|_| {
        Failure(format!(
            "--http {addr}: expected HOST:PORT with an IP address (e.g. 127.0.0.1:8000), :PORT or PORT"
        ))
    })
}

fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// Refuses to serve `addr` open: an address other machines can reach needs
/// a token or `[auth]` (`oauth` says whether the configuration has it;
/// asked last), unless the user said `--insecure-no-auth`.
fn refuse_open_exposure(
    addr: SocketAddr,
    options: &HttpOptions,
    oauth: impl FnOnce() -> bool,
    insecure_no_auth: bool,
) -> Result<(), Failure> {
    if is_loopback(addr) || options.bearer_token.is_some() || insecure_no_auth || oauth() {
        return Ok(());
    }
    Err(Failure(format!(
        "--http {addr}: refusing to serve an address other machines can reach without a \
         token (anyone who can reach it could call every tool). Give --token-file FILE to \
         require a bearer token, an [auth] table to require OAuth access tokens, or \
         --insecure-no-auth to serve it open anyway"
    )))
}

fn http_options(args: &ServeArgs) -> Result<HttpOptions, Failure> {
    let bearer_token = args
        .token_file
        .as_deref()
        .map(|path| token::read("--token-file", path))
        .transpose()?;
    let options = HttpOptions {
        bearer_token,
        oauth: None,
        allowed_origins: args.allow_origins.clone(),
        allowed_hosts: args.allow_hosts.clone(),
        max_request_bytes: args.max_request_kb.saturating_mul(1024),
        max_sessions: args.max_sessions,
        stateless: args.stateless,
        json_response: args.json_response,
        drain_delay: seconds("--drain-delay", args.drain_delay)?,
        grace: seconds("--grace", args.grace)?,
        metrics: None,
    };
    options.validate()?;
    Ok(options)
}

/// `--http`'s address and options, when serving HTTP.
type Http = Option<(SocketAddr, HttpOptions)>;

/// How long after the start the plugins' code is loaded in the background
/// if no client has listed the tools by then.
const WARM_UP_AT_THE_LATEST: Duration = Duration::from_secs(2);

/// Once `when` resolves, saying why (a client has listed the tools: the
/// background loads would otherwise compete with its start for the cores),
/// loads, one after another, the code of the plugins registered from their
/// cached tool lists, counting each one's cache lookup in `metrics` (also
/// when a call that needed the plugin first loaded it, or is loading it:
/// then this waits for that load). A load that fails here is logged, and
/// the plugin's next use tries again. Once `stop` is cancelled (the server
/// is ending) no load starts, and one cut short is no failure: nothing is
/// logged.
async fn warm_up(
    when: impl Future<Output = &'static str>,
    warming: Vec<WarmUp>,
    metrics: Option<Metrics>,
    stop: CancellationToken,
) {
    let why = tokio::select! {
        biased;
        () = stop.cancelled() => return,
        why = when => why,
    };
    if !warming.is_empty() {
        tracing::debug!(
            plugins = warming.len(),
            "loading code in the background: {why}"
        );
    }
    for warm_up in warming {
        let plugin = warm_up.plugin().to_owned();
        let loaded = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            loaded = warm_up.run() => loaded,
        };
        // Checked again: the runtime's shutdown may cancel a load's thread
        // while this task runs, without it ever waiting on `stop`.
        if stop.is_cancelled() {
            return;
        }
        match loaded {
            Ok(Some(source)) => {
                tracing::debug!(plugin, "code loaded in the background ({source:?})");
                if let Some(metrics) = &metrics {
                    metrics.code_cache(source == CodeSource::Cache);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                plugin,
                "its code did not load in the background: {}; its next call tries again",
                toolhost::error::report(&e)
            ),
        }
    }
}

/// The metrics `[metrics]` asks for (rule X1), and `http` with them
/// served at `/metrics` to whom the table says: the holders of its token,
/// anyone (`open`, on a loopback address only), or whoever may call
/// `/mcp`. Nothing without the table, or without HTTP.
fn with_metrics(
    config: &toolhost::config::Config,
    http: Http,
) -> Result<(Http, Option<Metrics>), Failure> {
    let section = &config.metrics;
    let token = config.metrics_token()?;
    if !section.enabled {
        return Ok((http, None));
    }
    let Some((addr, mut options)) = http else {
        tracing::info!("[metrics] applies to --http only: nothing is recorded on stdio");
        return Ok((None, None));
    };
    let access = match token {
        Some(token) => MetricsAccess::Token(token.expose().into()),
        None if section.open && !is_loopback(addr) => {
            return Err(Failure(format!(
                "[metrics] open = true: --http {addr} can be reached from other machines, and \
                 anyone there could read the metrics. Give [metrics] token = \"SECRET\" (a \
                 [secrets.SECRET] table) instead"
            )));
        }
        None if section.open => MetricsAccess::Open,
        None => MetricsAccess::AsMcp,
    };
    let metrics = Metrics::with_tool_labels(section.max_tool_labels);
    options.metrics = Some(MetricsEndpoint {
        metrics: metrics.clone(),
        access,
    });
    Ok((Some((addr, options)), Some(metrics)))
}

/// The task store and settings `--task-store`, `--task-after` and
/// `--task-ttl` ask for (`None`: no tasks), the store connected.
async fn task_store(
    args: &ServeArgs,
) -> Result<Option<(Arc<dyn TaskStore>, TaskSettings)>, Failure> {
    let ttl = seconds("--task-ttl", args.task_ttl)?;
    if ttl.is_zero() {
        return Err(Failure(
            "--task-ttl 0: a task must be kept for some time (give seconds, more than 0)".into(),
        ));
    }
    let settings = TaskSettings::new()
        .after(seconds("--task-after", args.task_after)?)
        .ttl(ttl);
    let store: Arc<dyn TaskStore> = match args.task_store.as_str() {
        "off" => return Ok(None),
        "memory" => Arc::new(MemoryTaskStore::new()),
        url if url.starts_with("redis://") || url.starts_with("rediss://") => {
            Arc::new(RedisTaskStore::connect(url).await.map_err(|e| {
                Failure(format!(
                    "--task-store {}: {}",
                    redacted(url),
                    toolhost::error::report(&e)
                ))
            })?)
        }
        other => {
            return Err(Failure(format!(
                "--task-store {}: expected `memory`, `off`, or a redis:// or rediss:// URL",
                redacted(other)
            )));
        }
    };
    Ok(Some((store, settings)))
}

/// `url` without the password it may carry (it goes into error messages).
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// A duration given in seconds on the command line.
fn seconds(flag: &str, value: f64) -> Result<Duration, Failure> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        Failure(format!(
            "{flag} {value}: expected a number of seconds, 0 or more"
        ))
    })
}

/// Cancels `token` on Ctrl-C or SIGTERM.
async fn cancel_on_signal(token: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
    token.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(parse_addr("8000").unwrap().to_string(), "127.0.0.1:8000");
        assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(parse_addr("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        let err = parse_addr("localhost:80").unwrap_err();
        assert!(err.0.contains("expected HOST:PORT"), "{}", err.0);
    }

    #[test]
    fn c8_reachable_addresses_need_a_token_or_an_explicit_opt_out() {
        let open = HttpOptions::default();
        let guarded = HttpOptions {
            bearer_token: Some("secret".into()),
            ..HttpOptions::default()
        };
        for addr in [
            "127.0.0.1:80",
            "[::1]:80",
            "[::ffff:127.0.0.1]:80",
            "127.1.2.3:0",
        ] {
            let addr = parse_addr(addr).unwrap();
            assert!(
                refuse_open_exposure(addr, &open, || false, false).is_ok(),
                "{addr}"
            );
        }
        for addr in [
            "0.0.0.0:0",
            "[::]:8000",
            "192.168.1.2:80",
            "[::ffff:10.0.0.1]:80",
        ] {
            let addr = parse_addr(addr).unwrap();
            let err = refuse_open_exposure(addr, &open, || false, false).unwrap_err();
            for needle in [
                addr.to_string().as_str(),
                "--token-file",
                "--insecure-no-auth",
                "[auth]",
            ] {
                assert!(err.0.contains(needle), "{needle}: {}", err.0);
            }
            assert!(
                refuse_open_exposure(addr, &guarded, || false, false).is_ok(),
                "{addr}"
            );
            assert!(
                refuse_open_exposure(addr, &open, || false, true).is_ok(),
                "{addr}"
            );
            assert!(
                refuse_open_exposure(addr, &open, || true, false).is_ok(),
                "{addr}"
            );
        }
    }
}
