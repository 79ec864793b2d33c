//! Bounds on the head of an outgoing request the host holds for the guest
//! (rule C11).
//!
//! wasmtime-wasi-http 48 keeps an `outgoing-request`'s method and authority
//! as the guest's own strings: `set-authority` checks the text's syntax but
//! not its length (only the path and query are bounded, by `http`'s URI
//! limit), and `set-method` accepts an extension method of any length. A
//! guest could park one long string in each of its handles and hold many
//! times its own memory limit in the host. This module replaces both setters
//! (linker shadowing, as `dirstream` does for listings) with ones that
//! refuse, through the interface's own error, a value longer than any real
//! request's, and otherwise leave the work to wasmtime-wasi-http.
//!
//! The lists a guest hands `fields.from-list` and `fields.set` are lifted
//! whole into host vectors before wasmtime-wasi-http counts their size: an
//! entry of 16 bytes in the guest (8 for a value of `set`) becomes a
//! `String` and a `Vec` in the host, and a million empty entries cost the
//! host tens of megabytes before the header limit refuses the first
//! thousand. Every entry counts at least one byte against
//! [`MAX_FIELDS_BYTES`] (wasmtime-wasi-http counts the size of a value's
//! own type besides its bytes), so a list with more entries than that could
//! never be accepted: both are shadowed too, reading the list where it lies
//! and failing the call as over the limit before anything is taken from it.

use wasmtime::component::{Linker, Resource, WasmList};
use wasmtime_wasi_http::p2::HeaderResult;
use wasmtime_wasi_http::p2::bindings::http::types::{
    self as http_types, HostFields, HostOutgoingRequest as Setters, Method,
};
use wasmtime_wasi_http::p2::types::HostOutgoingRequest;
use wasmtime_wasi_http::{FieldMap, WasiHttpCtxView, WasiHttpView};

use super::shadow::within;
use super::state::StoreState;

/// The instance wasmtime-wasi-http defines `wasi:http/types` under; the
/// shadowing below must use the very same name.
const TYPES: &str = "wasi:http/types@0.2.12";

/// The longest authority (`user:password@host:port`) a request may name:
/// a DNS name is at most 253 bytes, so this leaves room for credentials.
pub(crate) const MAX_AUTHORITY_BYTES: usize = 4 << 10;

/// The longest extension method a request may use (the standard ones are
/// at most 7 bytes; WebDAV's longest, `VERSION-CONTROL`, 15).
pub(crate) const MAX_METHOD_BYTES: usize = 64;

/// The longest header map the guest may build, in wasmtime-wasi-http's
/// count (names and values): servers refuse far smaller heads (8–16 KiB is
/// usual), and each request or `fields` handle holds at most this.
pub(crate) const MAX_FIELDS_BYTES: usize = 64 << 10;

/// Refuses a header list of `len` entries for `function` if it could never
/// fit in a header map.
fn fits(function: &str, len: usize) -> wasmtime::Result<()> {
    within(len, MAX_FIELDS_BYTES, |len, limit| {
        format!(
            "fields.{function} of {len} entries, more than a header map of at most {limit} \
             bytes can hold"
        )
    })
}

/// wasmtime-wasi-http's answer to a `fields` function, its header error
/// made the interface's (or a trap) as its own bindings do.
fn answer<T>(
    http: &mut WasiHttpCtxView<'_>,
    result: HeaderResult<T>,
) -> wasmtime::Result<(Result<T, http_types::HeaderError>,)> {
    match result {
        Ok(value) => Ok((Ok(value),)),
        Err(e) => Ok((Err(http_types::Host::convert_header_error(http, e)?),)),
    }
}

/// Replaces `set-authority` and `set-method` of `outgoing-request`, and
/// `from-list` and `set` of `fields`, in `linker` (which must already hold
/// wasmtime-wasi-http's `wasi:http/types`) with the bounded ones.
pub(crate) fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    crate::shadow::shadowing(linker, shadow)
}

fn shadow(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    types.func_wrap(
        "[method]outgoing-request.set-authority",
        |mut store, (request, authority): (Resource<HostOutgoingRequest>, Option<String>)| {
            if authority
                .as_ref()
                .is_some_and(|a| a.len() > MAX_AUTHORITY_BYTES)
            {
                return Ok((Err(()),));
            }
            Setters::set_authority(&mut store.data_mut().http(), request, authority).map(|r| (r,))
        },
    )?;
    types.func_wrap(
        "[method]outgoing-request.set-method",
        |mut store, (request, method): (Resource<HostOutgoingRequest>, Method)| {
            if matches!(&method, Method::Other(m) if m.len() > MAX_METHOD_BYTES) {
                return Ok((Err(()),));
            }
            Setters::set_method(&mut store.data_mut().http(), request, method).map(|r| (r,))
        },
    )?;
    types.func_wrap(
        "[static]fields.from-list",
        |mut store, (entries,): (WasmList<(String, Vec<u8>)>,)| {
            fits("from-list", entries.len())?;
            let entries = entries
                .iter(&mut store)?
                .collect::<wasmtime::Result<Vec<_>>>()?;
            let mut http = store.data_mut().http();
            let result = HostFields::from_list(&mut http, entries);
            answer(&mut http, result)
        },
    )?;
    types.func_wrap(
        "[method]fields.set",
        |mut store, (fields, name, values): (Resource<FieldMap>, String, WasmList<Vec<u8>>)| {
            fits("set", values.len())?;
            let values = values
                .iter(&mut store)?
                .collect::<wasmtime::Result<Vec<_>>>()?;
            let mut http = store.data_mut().http();
            let result = HostFields::set(&mut http, fields, name, values);
            answer(&mut http, result)
        },
    )?;
    Ok(())
}
