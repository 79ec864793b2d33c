//! Attacks on confinement: files outside the grants, writes to read-only
//! grants, environment variables not granted, sockets, and HTTP to places
//! not granted. Each tool reports what it managed to do, so the tests can
//! check that nothing leaked.

use std::io::{Read, Write};

use toolhost_sdk::http;
use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct PathArg {
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct WriteArg {
    path: String,
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct NameArg {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddrArg {
    addr: String,
}

#[derive(Deserialize, JsonSchema)]
struct UrlArg {
    url: String,
}

fn read(a: PathArg, _: &CallInfo) -> Result<Output, ToolError> {
    let mut text = String::new();
    std::fs::File::open(&a.path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| ToolError::failed(format!("read {}: {e}", a.path)))?;
    Ok(Output::text(text))
}

fn write(a: WriteArg, _: &CallInfo) -> Result<Output, ToolError> {
    std::fs::File::create(&a.path)
        .and_then(|mut f| f.write_all(a.text.as_bytes()))
        .map_err(|e| ToolError::failed(format!("write {}: {e}", a.path)))?;
    Ok(Output::text("written"))
}

fn env(a: NameArg, _: &CallInfo) -> Result<Output, ToolError> {
    std::env::var(&a.name)
        .map(Output::text)
        .map_err(|e| ToolError::failed(format!("env {}: {e}", a.name)))
}

fn tcp(a: AddrArg, _: &CallInfo) -> Result<Output, ToolError> {
    std::net::TcpStream::connect(&a.addr)
        .map(|_| Output::text("connected"))
        .map_err(|e| ToolError::failed(format!("tcp {}: {e}", a.addr)))
}

fn get(a: UrlArg, _: &CallInfo) -> Result<Output, ToolError> {
    let r = http::get(&a.url, 1 << 20)?;
    Ok(Output::text(format!("{} {}", r.status, r.text())))
}

fn register(tools: &mut Tools) {
    tools.add("read", "reads a file", read);
    tools.add("write", "writes a file", write);
    tools.add("env", "reads an environment variable", env);
    tools.add("tcp", "opens a TCP connection", tcp);
    tools.add("get", "fetches a URL", get);
}

toolhost_sdk::tool_plugin!(register);
