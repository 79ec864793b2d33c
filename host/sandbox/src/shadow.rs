//! Replacing host functions of the linker with bounded ones (the modules
//! `dirstream` and `request_head` do).

use wasmtime::component::Linker;

use super::state::StoreState;

/// Runs `define` with shadowing allowed on `linker`, so that its
/// definitions replace the ones already there. Shadowing is turned off
/// again whatever `define` returns, so that no later definition replaces
/// one by mistake.
pub(crate) fn shadowing(
    linker: &mut Linker<StoreState>,
    define: impl FnOnce(&mut Linker<StoreState>) -> wasmtime::Result<()>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = define(linker);
    linker.allow_shadowing(false);
    result
}
