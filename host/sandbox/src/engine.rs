//! The one wasmtime engine and its configuration. Its epoch is driven by
//! the deadline clock (`deadline.rs`).

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
};

/// The largest linear memory any plugin may be granted.
pub const MAX_PLUGIN_MEMORY: u64 = 1 << 30;

/// How many instances may be alive at once across all plugins, at most.
pub(crate) const MAX_LIVE_INSTANCES: u32 = 256;

/// Builds the engine from [`engine_config_for`] `live` instances; with
/// `functions`, Cranelift reuses the code of functions it compiled before
/// (`cache/functions.rs`).
pub(crate) fn new_engine(
    functions: Option<std::sync::Arc<dyn wasmtime::CacheStore>>,
    live: u32,
) -> wasmtime::Result<Engine> {
    let mut config = engine_config_for(live);
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
    engine_config_for(MAX_LIVE_INSTANCES)
}

/// [`engine_config`], with fiber stacks for `live` instances at once (1 to
/// [`MAX_LIVE_INSTANCES`]: the caller's bound, see
/// [`Sandbox::starting_for`](crate::Sandbox::starting_for)). A call runs on a stack of its own while its
/// store lives, and the pool guards each stack's lowest page when the
/// engine is made, one `mprotect` each: for 256 stacks, 0.36–0.40 ms of a
/// start with one plugin (BENCHMARKS.md). The rest of the pool stays sized
/// for the most instances: reserving its address space costs the same at
/// any size, and a pool of memories or tables sized for a few instances
/// could run out under a few components that each have many.
pub(crate) fn engine_config_for(live: u32) -> Config {
    let n = MAX_LIVE_INSTANCES;
    debug_assert!((1..=n).contains(&live), "{live} live instances");
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(n)
        .total_core_instances(n * 8)
        .total_memories(n * 2)
        .total_tables(n * 4)
        .total_stacks(live)
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

#[cfg(test)]
mod tests {
    use std::hash::{DefaultHasher, Hash, Hasher};

    use super::*;

    fn compatibility(live: u32) -> u64 {
        let engine = Engine::new(&engine_config_for(live)).unwrap();
        let mut h = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        h.finish()
    }

    #[test]
    fn c5_an_engine_sized_for_fewer_instances_reads_the_same_cached_code() {
        // The compiled-code cache is keyed by this hash: hosts of every
        // size share their entries.
        assert_eq!(compatibility(4), compatibility(MAX_LIVE_INSTANCES));
    }
}
