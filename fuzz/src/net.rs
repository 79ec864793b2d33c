//! The network policy: host rules as written in `toolhost.toml`, and the
//! check of a destination a guest asks for.

use std::net::IpAddr;

use arbitrary::Unstructured;

use toolhost_net::{HostRule, NetPolicy};

/// A host rule through parse → print → parse.
///
/// Must hold: no panic; a rule that parses prints as text that parses to
/// the same rule.
pub fn host_rule(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(rule) = text.parse::<HostRule>() else {
        return;
    };
    let printed = rule.to_string();
    let again: HostRule = printed
        .parse()
        .unwrap_or_else(|e| panic!("`{text}` printed as `{printed}`, which does not parse: {e}"));
    assert_eq!(again, rule, "`{text}` printed as `{printed}`");
}

/// Fuzzed grants and denials, and a fuzzed destination by name.
///
/// Must hold: no panic; a policy never grants what its text does not name:
/// nothing is granted by an empty policy; whatever is granted is granted by
/// one rule of the list on its own, whose text names the host (the same
/// name, or a name under a `*.` suffix, or an address); and a destination
/// a rule grants is refused once that rule is also denied.
pub fn net_policy(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((allow, deny, https, host, port)) = (|| -> arbitrary::Result<_> {
        let mut allow = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            allow.push(u.arbitrary::<String>()?);
        }
        let mut deny = Vec::new();
        for _ in 0..u.int_in_range(0..=2)? {
            deny.push(u.arbitrary::<String>()?);
        }
        Ok((
            allow,
            deny,
            u.arbitrary::<bool>()?,
            u.arbitrary::<String>()?,
            u.arbitrary::<u16>()?,
        ))
    })() else {
        return;
    };
    let scheme = if https { "https" } else { "http" };
    assert!(
        NetPolicy::deny_all()
            .check_host(scheme, &host, port)
            .is_err(),
        "the empty policy granted {scheme}://{host}:{port}"
    );
    let Ok(policy) = NetPolicy::new(&allow, &deny) else {
        return;
    };
    if policy.check_host(scheme, &host, port).is_err() {
        return;
    }
    let none: &[String] = &[];
    let granting: Vec<&String> = allow
        .iter()
        .filter(|r| {
            NetPolicy::new(std::slice::from_ref(*r), none)
                .is_ok_and(|p| p.check_host(scheme, &host, port).is_ok())
        })
        .collect();
    assert!(
        !granting.is_empty(),
        "{scheme}://{host}:{port} granted by {allow:?} but by no rule alone"
    );
    for rule in &granting {
        assert!(names(rule, &host), "`{rule}` granted `{host}`");
        let denied = NetPolicy::new(&allow, std::slice::from_ref(*rule)).expect("the rule parses");
        assert!(
            denied.check_host(scheme, &host, port).is_err(),
            "`{rule}` denied still grants `{host}`"
        );
    }
}

/// Whether the text of `rule` names `host`: written independently of the
/// policy's own matching, from the rule's text alone.
pub(crate) fn names(rule: &str, host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if host.parse::<IpAddr>().is_ok() {
        // Address grants are judged by network arithmetic; the property
        // here is about names.
        return true;
    }
    let rule = rule
        .split_once("://")
        .map_or(rule, |(_, r)| r)
        .to_ascii_lowercase();
    let target = match rule.rsplit_once(':') {
        Some((t, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => t,
        _ => rule.as_str(),
    };
    let target = target.trim_end_matches('.');
    match target.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")) && host.len() > suffix.len() + 1,
        None => host == target,
    }
}
