//! Replacing host functions of the linker with bounded ones (the modules
//! `dirstream`, `request_head` and `poll_list` do), and the refusal those
//! give a list too long to read.

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

/// A list a guest handed a shadowed host function, refused unread: longer
/// than any that function could take. The call fails as over a limit (see
/// `classify_fault`), with this message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ListTooLong(String);

/// Refuses a list of `len` entries when it has more than `limit`, saying
/// why with `describe` (given `len` and `limit`).
pub(crate) fn within(
    len: usize,
    limit: usize,
    describe: impl FnOnce(usize, usize) -> String,
) -> wasmtime::Result<()> {
    if len > limit {
        return Err(ListTooLong(describe(len, limit)).into());
    }
    Ok(())
}
