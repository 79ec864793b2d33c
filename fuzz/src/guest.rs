//! What a guest hands the host across the WIT boundary: its tool list, its
//! outputs, its errors and the URIs of its outgoing requests (the properties are stated with the hooks in
//! `toolhost_sandbox::fuzzing`).

use arbitrary::Unstructured;

use toolhost_sandbox::fuzzing;

/// See [`fuzzing::guest_output`].
pub fn output(data: &[u8]) {
    let _ = fuzzing::guest_output(&mut Unstructured::new(data));
}

/// See [`fuzzing::guest_error`].
pub fn error(data: &[u8]) {
    let _ = fuzzing::guest_error(&mut Unstructured::new(data));
}

/// See [`fuzzing::guest_descriptors`].
pub fn descriptors(data: &[u8]) {
    let _ = fuzzing::guest_descriptors(&mut Unstructured::new(data));
}

/// A guest's outgoing request URI, read the way the sandbox reads it
/// ([`fuzzing::request_destination`]), checked under fuzzed grants.
///
/// Must hold: no panic; a URI whose destination a policy grants names, in
/// its host, what one granted rule names (the same name, a name under a
/// `*.` suffix, or an address), so that no spelling of a URI (user info,
/// a port, brackets, case, a trailing dot) reaches a host the policy's text
/// does not name.
pub fn request_uri(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((grants, uri)) = (|| -> arbitrary::Result<_> {
        let mut grants = Vec::new();
        for _ in 0..u.int_in_range(1..=3)? {
            grants.push(u.arbitrary::<String>()?);
        }
        Ok((grants, u.arbitrary::<String>()?))
    })() else {
        return;
    };
    let Some((scheme, host, port)) = fuzzing::request_destination(&uri) else {
        return;
    };
    let none: &[String] = &[];
    let Ok(policy) = toolhost_net::NetPolicy::new(&grants, none) else {
        return;
    };
    if policy.check_host(scheme, &host, port).is_ok() {
        assert!(
            grants.iter().any(|rule| crate::net::names(rule, &host)),
            "{uri} reached `{host}`, which no grant of {grants:?} names"
        );
    }
}
