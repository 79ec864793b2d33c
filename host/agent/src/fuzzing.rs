//! Entry points for the fuzz targets (feature `fuzzing`): bytes a model
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
