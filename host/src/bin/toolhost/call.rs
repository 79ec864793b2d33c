//! `toolhost call`.

use std::io::Read as _;
use std::path::Path;

use serde_json::json;
use toolhost::config::Config;
use toolhost::{Arguments, CallContext};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(
    config: &Path,
    tool: &str,
    args: Option<&str>,
    as_json: bool,
) -> Result<(), Failure> {
    let text = match args {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Failure(format!("cannot read the arguments from stdin: {e}")))?;
            s
        }
        Some(a) => a.to_owned(),
        None => "{}".to_owned(),
    };
    let config = Config::load(config)?;
    let (host, _sandbox) = config.build_host().await?;
    let result = match Arguments::parse(&text) {
        Ok(args) => host.invoke_tool(CallContext::new(), tool, args).await,
        Err(e) => Err(e),
    };
    host.shutdown().await;
    match result {
        Ok(out) if as_json => {
            outln!("{}", serde_json::to_string_pretty(&json!({ "ok": out }))?)?;
            Ok(())
        }
        Ok(out) => {
            outln!("{}", out.llm_text())?;
            Ok(())
        }
        Err(e) if as_json => {
            let doc = json!({ "error": { "kind": e.kind().as_str(), "message": e.to_string() } });
            outln!("{}", serde_json::to_string_pretty(&doc)?)?;
            Err(Failure(format!("{tool}: {e}")))
        }
        Err(e) => Err(Failure(format!("{tool}: {e}"))),
    }
}
