//! What measuring a call's CPU time costs (for CPU quotas, rule A3), on the
//! echo call, three ways: wasmtime's fuel (every guest instruction
//! counted, on an engine compiled for it), the thread's CPU clock read
//! around each poll of the guest's future (what toolhost does), and epoch
//! slices (counted by the epoch callback toolhost already runs: no work per
//! call, but wall time in steps of a slice, waits included).

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use toolhost::quota::{QuotaLimits, Quotas};
use toolhost::sandbox::{PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ToolHost};
use toolhost_bench::bare::{self, Bare};
use toolhost_bench::{cache_dir, load_into, wasm};
use wasmtime::{Engine, Store};

use crate::stats::{Row, Samples};
use crate::{ARGS, Sizes};

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// `fut`, with the thread's CPU clock read around each poll, as the
/// sandbox does.
async fn metered<F: Future>(total: &mut Duration, fut: F) -> F::Output {
    let mut fut = pin!(fut);
    std::future::poll_fn(|cx| {
        let from = thread_cpu();
        let polled = fut.as_mut().poll(cx);
        *total += thread_cpu().saturating_sub(from);
        match polled {
            Poll::Ready(out) => Poll::Ready(out),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Bare wasmtime with fuel: the engine compiles fuel checks into the code,
/// and each store starts with all the fuel there is.
async fn fueled_echo(bare: &Bare) {
    let mut store = Store::new(&bare.engine, bare::State::fresh());
    store.set_epoch_deadline(u64::MAX / 2);
    store.set_fuel(u64::MAX).expect("fuel is on");
    let instance = bare
        .pre
        .instantiate_async(&mut store)
        .await
        .expect("instantiates");
    let plugin = bare::ToolPlugin::new(&mut store, &instance).expect("exports");
    bare::echo(&mut store, &plugin, ARGS).await;
}

async fn host(sandbox: &Sandbox, quotas: Option<Quotas>) -> ToolHost {
    let mut builder = ToolHost::builder().validate_arguments(true);
    if let Some(q) = quotas {
        builder = builder.quotas(std::sync::Arc::new(q));
    }
    let host = builder.build();
    load_into(&host, sandbox, "template", PluginPolicy::default()).await;
    host
}

/// The rows: each way of measuring against the same call without it,
/// interleaved round by round.
pub fn rows(local: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let plain = local.block_on(host(&sandbox, None));
    // A CPU quota no call reaches: every call is admitted, metered and
    // charged.
    let quota = Quotas::new()
        .every_tenant(QuotaLimits::NONE.cpu_per_minute(Duration::from_secs(1_000_000_000)));
    let quoted = local.block_on(host(&sandbox, Some(quota)));
    // A quota that counts calls only: admitted and counted, not measured.
    let counted = local.block_on(host(
        &sandbox,
        Some(Quotas::new().every_tenant(QuotaLimits::NONE.calls_per_minute(u32::MAX))),
    ));
    let args = Arguments::parse(ARGS).expect("JSON");
    let bare = Bare::new(&bare::engine(), &wasm("template"));
    let mut config = toolhost::sandbox::engine_config();
    config.consume_fuel(true);
    let fuel = Bare::new(&Engine::new(&config).expect("an engine"), &wasm("template"));

    let n = sizes.per_round;
    let mut t: [Vec<Duration>; 6] = Default::default();
    let mut cpu = Duration::ZERO;
    for round in 0..=sizes.rounds {
        let keep = round > 0;
        local.block_on(async {
            for (i, host) in [(0, &plain), (1, &quoted), (5, &counted)] {
                for _ in 0..n {
                    let s = Instant::now();
                    host.invoke_tool(CallContext::new(), "echo", args.clone())
                        .await
                        .expect("echo");
                    if keep {
                        t[i].push(s.elapsed());
                    }
                }
            }
            for _ in 0..n {
                let s = Instant::now();
                let (mut store, plugin) = bare.instance().await;
                bare::echo(&mut store, &plugin, ARGS).await;
                if keep {
                    t[2].push(s.elapsed());
                }
            }
            for _ in 0..n {
                let s = Instant::now();
                let (mut store, plugin) = bare.instance().await;
                metered(&mut cpu, bare::echo(&mut store, &plugin, ARGS)).await;
                if keep {
                    t[3].push(s.elapsed());
                }
            }
            for _ in 0..n {
                let s = Instant::now();
                fueled_echo(&fuel).await;
                if keep {
                    t[4].push(s.elapsed());
                }
            }
        });
    }
    assert!(cpu > Duration::ZERO, "the clock measured nothing");
    let [plain, quoted, bare_plain, bare_clock, bare_fuel, counted] = t.map(Samples::new);
    vec![
        Row {
            measure: "echo call with a calls-per-minute quota, whole pipeline".into(),
            toolhost: counted,
            peer: "toolhost without quotas".into(),
            peer_samples: Some(plain.clone_samples()),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "echo call with a CPU quota (thread CPU clock), whole pipeline".into(),
            toolhost: quoted,
            peer: "toolhost without quotas".into(),
            peer_samples: Some(plain),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "CPU accounting: thread CPU clock around each poll".into(),
            toolhost: bare_clock,
            peer: "bare wasmtime 48, fresh instance, no accounting".into(),
            peer_samples: Some(bare_plain.clone_samples()),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "CPU accounting: wasmtime fuel (engine compiled for it)".into(),
            toolhost: bare_fuel,
            peer: "bare wasmtime 48, fresh instance, no accounting".into(),
            peer_samples: Some(bare_plain),
            goal: None,
            comparable: true,
        },
    ]
}
