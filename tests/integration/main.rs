mod agent;
mod builtin;
mod common;
mod foundation;
mod hostile;
mod mcp;
mod run_code;
mod sandbox;
