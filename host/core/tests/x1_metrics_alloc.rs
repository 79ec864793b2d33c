//! Rule X1: metrics cost a call no allocation once its labels exist, so a
//! host without them pays nothing for their being there.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use serde_json::json;
use toolhost_core::{Arguments, CallContext, FnTool, Metrics, ToolHost, ToolOutput, ToolSpec};

/// Counts the allocations made on the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// count is a thread-local cell, which allocates nothing.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn host(metrics: Option<Metrics>) -> ToolHost {
    let mut builder = ToolHost::builder().validate_arguments(true);
    if let Some(metrics) = metrics {
        builder = builder.metrics(metrics);
    }
    let host = builder.build();
    host.register_tool(FnTool::arc(
        ToolSpec::new("echo", "echoes", json!({"type": "object"})),
        |_ctx, args: Arguments| async move { Ok(ToolOutput::text(args.as_str())) },
    ))
    .unwrap();
    host
}

/// Allocations made on this thread by one call of `echo`, after three to
/// warm up (labels made, lazy statics set).
fn allocations_per_call(rt: &tokio::runtime::Runtime, host: &ToolHost) -> u64 {
    let args = Arguments::parse(r#"{"text":"hi"}"#).unwrap();
    let call = || async {
        host.invoke_tool(CallContext::new(), "echo", args.clone())
            .await
            .unwrap()
    };
    for _ in 0..3 {
        rt.block_on(call());
    }
    let before = ALLOCATIONS.with(Cell::get);
    rt.block_on(call());
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn x1_metrics_add_no_allocation_to_a_call() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let metrics = Metrics::new();
    let off = allocations_per_call(&rt, &host(None));
    let on = allocations_per_call(&rt, &host(Some(metrics.clone())));
    assert!(
        metrics.encode_text().contains(
            r#"toolhost_calls_total{tool="echo",plugin="",outcome="ok",tenant="default"} 4"#
        ),
        "{}",
        metrics.encode_text()
    );
    eprintln!("allocations in one call: {off} without metrics, {on} with");
    assert!(
        on <= off,
        "with metrics a call allocates {on} times, without {off}"
    );
}
