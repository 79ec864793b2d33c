//! `wasi:io/poll`'s `poll` with a bounded list (rules C3, C11).
//!
//! wasmtime-wasi 48 lifts the whole list a guest hands `poll` into host
//! vectors before it looks at it: each entry, four bytes of the guest's
//! memory, becomes a resource handle, an index in a per-pollable list and,
//! once ready, an index in the answer, several times its size in host
//! memory, and as many steps of host work the call's deadline cannot cut
//! short. Listing one pollable millions of times costs the guest nothing
//! more. A guest cannot hold more distinct pollables than its handle limit
//! (`max_handles`), so no real poll names more entries than that: this
//! module replaces `poll` (linker shadowing, as `dirstream` does for
//! listings) with one that reads the list where it lies, refuses one
//! longer than the limit before taking anything from it, and otherwise
//! leaves the work to wasmtime-wasi.

use wasmtime::component::{Linker, Resource, WasmList};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::io::poll::Host as _;

use super::shadow::within;
use super::state::StoreState;

/// The instance wasmtime-wasi defines `wasi:io/poll` under; the shadowing
/// below must use the very same name.
const POLL: &str = "wasi:io/poll@0.2.12";

/// Replaces `poll` in `linker` (which must already hold wasmtime-wasi's
/// `wasi:io/poll`) with the bounded one.
pub(crate) fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    crate::shadow::shadowing(linker, shadow)
}

fn shadow(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    linker.instance(POLL)?.func_wrap_async(
        "poll",
        |mut store, (list,): (WasmList<Resource<DynPollable>>,)| {
            Box::new(async move {
                within(list.len(), store.data().max_handles, |len, limit| {
                    format!(
                        "poll of {len} pollables, more than the {limit} handles an instance \
                         may hold (max_handles)"
                    )
                })?;
                let pollables = list
                    .iter(&mut store)?
                    .collect::<wasmtime::Result<Vec<_>>>()?;
                let ready = store.data_mut().table().poll(pollables).await?;
                Ok((ready,))
            })
        },
    )?;
    Ok(())
}
