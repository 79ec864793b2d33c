//! Readers of byte streams from other programs: a model server's event
//! stream and answers, the browser's DevTools messages, a skill's front matter (the
//! properties are stated with the hooks in each crate's `fuzzing` module).

/// See `toolhost_agent::fuzzing::sse`.
pub fn sse(data: &[u8]) {
    toolhost_agent::fuzzing::sse(data);
}

/// See `toolhost_builtin::fuzzing::cdp`.
pub fn cdp(data: &[u8]) {
    crate::block_on(toolhost_builtin::fuzzing::cdp(data));
}

/// See `toolhost_agent::fuzzing::skill_front_matter`.
pub fn skill_front_matter(data: &[u8]) {
    toolhost_agent::fuzzing::skill_front_matter(data);
}

/// See `toolhost_agent::fuzzing::openai_response`.
pub fn openai_response(data: &[u8]) {
    toolhost_agent::fuzzing::openai_response(data);
}

/// See `toolhost_agent::fuzzing::anthropic_response`.
pub fn anthropic_response(data: &[u8]) {
    toolhost_agent::fuzzing::anthropic_response(data);
}
