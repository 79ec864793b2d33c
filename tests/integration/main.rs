mod builtin;
mod foundation;
