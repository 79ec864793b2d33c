mod agent;
mod builtin;
mod common;
mod foundation;
mod hostile;
mod run_code;
mod sandbox;
