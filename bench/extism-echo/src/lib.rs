//! Extism's side of the peer benchmark: `echo` returns its input; `spin`
//! never returns, for the deadline overshoot.

use extism_pdk::*;

/// Returns its input unchanged.
#[plugin_fn]
pub fn echo(input: String) -> FnResult<String> {
    Ok(input)
}

/// Never returns.
#[plugin_fn]
pub fn spin(_input: String) -> FnResult<String> {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}
