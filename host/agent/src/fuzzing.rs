//! Entry points for the fuzz targets: bytes a model
//! server or a skill folder hands the agent. Not part of the API.

use crate::extensions::skills::front_matter::{self, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// A server-sent event stream, decoded whole and again cut into chunks at
/// the points the first bytes choose.
///
/// Must hold: no panic; where a chunk ends never changes the events (a cut
/// inside a line, a `\r\n` pair or a UTF-8 character included).
#[cfg(feature = "http")]
pub fn sse(data: &[u8]) {
    use crate::providers::sse::SseDecoder;
    let (cuts, stream) = data.split_at(data.len().min(4));
    let decode = |chunks: &[&[u8]]| {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in chunks {
            match decoder.push(chunk) {
                Ok(more) => events.extend(more),
                Err(_) => return None,
            }
        }
        events.extend(decoder.finish());
        Some(events)
    };
    let whole = decode(&[stream]);
    let mut chunks = Vec::new();
    let mut rest = stream;
    for &cut in cuts {
        let (head, tail) = rest.split_at(usize::from(cut).min(rest.len()));
        chunks.push(head);
        rest = tail;
    }
    chunks.push(rest);
    assert_eq!(whole, decode(&chunks), "the events depend on the chunking");
}

/// The front matter of a `SKILL.md`.
///
/// Must hold: no panic; an accepted front matter has a name of lower-case
/// letters, digits and inner single hyphens within its bound, and a
/// non-empty description within its bound.
pub fn skill_front_matter(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(found) = front_matter::parse(&text) else {
        return;
    };
    let name = &found.name;
    assert!(!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS);
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );
    assert!(!name.starts_with('-') && !name.ends_with('-') && !name.contains("--"));
    assert!(!found.description.trim().is_empty());
    assert!(found.description.chars().count() <= MAX_DESCRIPTION_CHARS);
}

/// A model server's answer to the OpenAI-compatible API: a whole body, and
/// the same bytes as the `data` lines of a stream.
///
/// Must hold: see [`stream_fidelity`].
#[cfg(feature = "openai")]
pub fn openai_response(data: &[u8]) {
    use crate::providers::openai::parse::{StreamAssembler, parse_response};
    let _ = parse_response(data);
    stream_fidelity::<StreamAssembler>(data);
}

/// A model server's answer to the Anthropic Messages API, as
/// [`openai_response`].
#[cfg(feature = "anthropic")]
pub fn anthropic_response(data: &[u8]) {
    use crate::providers::anthropic::parse::{StreamAssembler, parse_response};
    let _ = parse_response(data);
    stream_fidelity::<StreamAssembler>(data);
}

/// Feeds each line of `data` to a stream assembler as one event's data.
///
/// Must hold: no panic; when the stream makes a response, what was streamed
/// is what was answered: the text deltas joined are the response's text,
/// one start per tool call, and each call's argument deltas joined are its
/// arguments (nothing glued, lost or doubled between the live view and the
/// final answer).
#[cfg(feature = "http")]
fn stream_fidelity<A: crate::providers::assembly::Assemble>(data: &[u8]) {
    use std::sync::Mutex;

    use toolhost_core::model::StreamEvent;

    let text = String::from_utf8_lossy(data);
    let seen: Mutex<(String, usize, Vec<String>)> = Mutex::default();
    let sink = |event: &StreamEvent| {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            StreamEvent::TextDelta { text } => seen.0.push_str(text),
            StreamEvent::ToolCallStart { index, .. } => {
                assert_eq!(*index, seen.1, "tool calls start in order");
                seen.1 += 1;
                seen.2.push(String::new());
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                seen.2
                    .get_mut(*index)
                    .expect("arguments for a call that started")
                    .push_str(arguments);
            }
        }
    };
    let mut assembler = A::default();
    let mut complete = false;
    for line in text.split('\n') {
        match assembler.push(line, &sink) {
            Ok(true) => {
                complete = true;
                break;
            }
            Ok(false) => {}
            Err(_) => return,
        }
    }
    let Ok(response) = assembler.finish(complete) else {
        return;
    };
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    assert_eq!(response.text.as_deref().unwrap_or_default(), seen.0);
    assert_eq!(response.tool_calls.len(), seen.1);
    for (call, streamed) in response.tool_calls.iter().zip(&seen.2) {
        assert_eq!(
            &call.arguments, streamed,
            "the arguments of `{}`",
            call.name
        );
    }
}
