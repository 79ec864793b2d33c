//! The one wasmtime engine and its configuration. Its epoch is driven by
//! the deadline clock (`deadline.rs`).

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
};

/// The largest linear memory any plugin may be granted.
pub const MAX_PLUGIN_MEMORY: u64 = 1 << 30;

/// How many instances may be alive at once across all plugins.
pub(crate) const MAX_LIVE_INSTANCES: u32 = 256;

/// Builds the engine from [`engine_config`]; with `functions`, Cranelift
/// reuses the code of functions it compiled before (`cache/functions.rs`).
pub(crate) fn new_engine(
    functions: Option<std::sync::Arc<dyn wasmtime::CacheStore>>,
) -> wasmtime::Result<Engine> {
    let mut config = engine_config();
    if let Some(store) = functions {
        config.enable_incremental_compilation(store)?;
    }
    Engine::new(&config)
}

/// The configuration of the engine every [`Sandbox`](crate::Sandbox) runs
/// plugins on: component model, async, epoch interruption, the pooling
/// allocator sized for 256 live instances (warm slots reset in place, see
/// BENCHMARKS.md), and component-model async off (unused; it adds call
/// overhead). Public so that a comparison with bare wasmtime, or a program
/// running its own engine beside toolhost, uses the very same settings.
pub fn engine_config() -> Config {
    let n = MAX_LIVE_INSTANCES;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(n)
        .total_core_instances(n * 8)
        .total_memories(n * 2)
        .total_tables(n * 4)
        .total_stacks(n)
        .max_memory_size(MAX_PLUGIN_MEMORY as usize)
        .max_memories_per_component(4)
        .max_tables_per_component(16)
        .max_core_instances_per_component(32)
        // A fresh instance per call reuses a warm slot. Resetting it with
        // madvise would cost a TLB shootdown now and a page fault for every
        // page the next call touches; instead the pages the last call
        // dirtied (found with PAGEMAP_SCAN where the kernel has it) are
        // reset in place and stay resident. Measured in BENCHMARKS.md.
        .max_unused_warm_slots(32)
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(2 << 20)
        .table_keep_resident(64 << 10)
        .async_stack_keep_resident(128 << 10);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .concurrency_support(false)
        .epoch_interruption(true)
        .max_wasm_stack(512 * 1024)
        .cranelift_opt_level(OptLevel::Speed)
        .parallel_compilation(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}
