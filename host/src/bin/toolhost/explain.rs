//! `toolhost explain`: how the configuration's `[[rules]]` judge a call,
//! and why (rule O4). Nothing is called and no hook runs.

use std::path::Path;

use serde_json::json;
use toolhost::Arguments;
use toolhost::config::{BuildOptions, BuiltHost};
use toolhost::rules::{Explanation, RuleMiss};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(
    config: &Path,
    tool: &str,
    args: Option<&str>,
    as_json: bool,
    locked: bool,
) -> Result<(), Failure> {
    let args =
        Arguments::parse(args.unwrap_or("{}")).map_err(|e| Failure(format!("{tool}: {e}")))?;
    let config = crate::load_config(config)?;
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config
        .build_host_with(BuildOptions::new().lazy(true).locked(locked))
        .await?;
    let explained = host.explain(tool, &args);
    let rules = host.rules().clone();
    host.shutdown().await;
    let Some(Explanation {
        judgement,
        rules: traces,
        ..
    }) = explained
    else {
        return Err(Failure(format!("{tool}: unknown tool `{tool}`")));
    };
    let lines: Vec<(String, Option<String>)> = rules
        .rules()
        .iter()
        .zip(&traces)
        .map(|(rule, trace)| {
            let why = match trace {
                Ok(()) => None,
                Err(RuleMiss::Tool) => Some("the tool pattern does not match".to_owned()),
                Err(RuleMiss::Condition { index, miss }) => Some(format!(
                    "`{}` fails: {miss}",
                    rule.conditions()
                        .get(*index)
                        .map_or_else(String::new, ToString::to_string)
                )),
                Err(other) => Some(format!("{other:?}")),
            };
            (rule.to_string(), why)
        })
        .collect();
    if as_json {
        let doc = json!({
            "tool": tool,
            "decision": judgement.decision.as_str(),
            "by": judgement.by.label(),
            "reason": judgement.reason,
            "rules": lines.iter().enumerate().map(|(i, (rule, why))| json!({
                "key": format!("rules[{i}]"),
                "rule": rule,
                "matches": why.is_none(),
                "why_not": why,
            })).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    outln!(
        "{}: {} by {}: {}",
        tool,
        judgement.decision,
        judgement.by.label(),
        judgement.reason
    )?;
    let decider = judgement.by.label();
    for (i, (rule, why)) in lines.iter().enumerate() {
        let key = format!("rules[{i}]");
        let verdict = match why {
            None if key == decider => "matches, and decides".to_owned(),
            None => "matches".to_owned(),
            Some(why) => format!("does not match: {why}"),
        };
        outln!("  {key} {rule}: {verdict}")?;
    }
    if lines.is_empty() {
        outln!("  (no [[rules]] in the configuration)")?;
    }
    outln!(
        "(judged on these arguments; in a call, before hooks run first and the rules judge \
         what they leave)"
    )?;
    Ok(())
}
