mod builtin;
mod common;
mod foundation;
mod hostile;
mod mcp;
mod sandbox;
