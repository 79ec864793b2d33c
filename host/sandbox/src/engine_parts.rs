//! The parts of a sandbox that take the engine — the engine itself, its
//! linker and the deadline clock that drives its epoch — and the cell that
//! holds them while they are still being made on a thread of their own.
//!
//! Making them takes about a millisecond (the engine maps and guards its
//! instance pool; the linker takes every host function), and much of what a
//! host does at start-up needs none of them: checking a configuration,
//! registering plugins from their cached tool lists. So
//! [`Sandbox::starting`](crate::Sandbox::starting) makes them beside that
//! work, and the first use waits for them.

use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use toolhost_core::Cause;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{CacheStore, Engine};

use crate::bindings;
use crate::deadline::DeadlineClock;
use crate::engine;
use crate::error::LoadError;
use crate::state::StoreState;

/// The engine, its linker and its deadline clock.
pub(crate) struct EngineParts {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreState>,
    pub(crate) clock: Arc<DeadlineClock>,
}

impl EngineParts {
    /// Makes them, for `live` instances at once, with `functions` as the
    /// engine's store of compiled functions (the cache's).
    pub(crate) fn make(
        functions: Option<Arc<dyn CacheStore>>,
        live: u32,
    ) -> Result<Self, LoadError> {
        let engine = engine::new_engine(functions, live).map_err(|e| LoadError::Engine {
            what: "the engine",
            source: Cause::new(e),
        })?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .and_then(|()| crate::bounded_listings(&mut linker))
            .and_then(|()| crate::poll_list::add_to_linker(&mut linker))
            .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker))
            .and_then(|()| crate::request_head::add_to_linker(&mut linker))
            .and_then(|()| {
                wasmtime_wasi_config::add_to_linker(&mut linker, |s: &mut StoreState| {
                    wasmtime_wasi_config::WasiConfig::new(s.config())
                })
            })
            .and_then(|()| {
                bindings::v03::ExtensionPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            })
            .and_then(|()| {
                bindings::v02::ExtensionPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            })
            .and_then(|()| {
                bindings::v01::ExtensionPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            })
            .map_err(|e| LoadError::Engine {
                what: "the linker",
                source: Cause::new(e),
            })?;
        let clock = DeadlineClock::start(&engine).map_err(|e| LoadError::Engine {
            what: "the deadline clock",
            source: Cause::new(e),
        })?;
        Ok(Self {
            engine,
            linker,
            clock: Arc::new(clock),
        })
    }
}

/// [`EngineParts`], made already or being made on a thread of their own.
/// The first [`get`](Self::get) waits for that thread; every caller gets
/// the same parts, or the same error.
pub(crate) struct EngineCell {
    parts: OnceLock<Result<EngineParts, LoadError>>,
    making: Mutex<Option<JoinHandle<Result<EngineParts, LoadError>>>>,
}

impl EngineCell {
    /// A cell holding `parts`, made already.
    pub(crate) fn ready(parts: EngineParts) -> Self {
        Self {
            parts: OnceLock::from(Ok(parts)),
            making: Mutex::new(None),
        }
    }

    /// A cell whose parts are made on a new thread, for `live` instances
    /// at once, with `functions` as the engine's store of compiled
    /// functions; on this thread if no thread can be started.
    pub(crate) fn making(functions: Option<Arc<dyn CacheStore>>, live: u32) -> Self {
        let on_thread = functions.clone();
        let thread = std::thread::Builder::new()
            .name("toolhost-engine".into())
            .spawn(move || EngineParts::make(on_thread, live));
        match thread {
            Ok(thread) => Self {
                parts: OnceLock::new(),
                making: Mutex::new(Some(thread)),
            },
            Err(_) => Self {
                parts: OnceLock::from(EngineParts::make(functions, live)),
                making: Mutex::new(None),
            },
        }
    }

    /// The parts, once made: waits for the thread making them the first
    /// time. A panic there is a bug, and goes on as one here.
    pub(crate) fn get(&self) -> Result<&EngineParts, LoadError> {
        self.parts
            .get_or_init(|| {
                let thread = self
                    .making
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("a cell not made ready has a thread making its parts");
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_waiter_gets_the_one_engine_made_on_its_own_thread() {
        let cell = Arc::new(EngineCell::making(None, 4));
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let cell = cell.clone();
                std::thread::spawn(move || cell.get().unwrap().engine.clone())
            })
            .collect();
        let engines: Vec<Engine> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(engines.iter().all(|e| Engine::same(e, &engines[0])));
        assert!(Engine::same(&cell.get().unwrap().engine, &engines[0]));
    }
}
