//! A decoder for server-sent events (the `text/event-stream` format both
//! providers stream in), fed with bytes as they arrive.
//!
//! Lines may end in `\n`, `\r\n` or `\r`; a chunk may end anywhere — inside a
//! line, a `\r\n` pair, or a UTF-8 character — because a line is decoded only
//! once it is complete. Comment lines (`:`) and the `id` and `retry` fields are
//! ignored; `data` lines of one event are joined with `\n`.

use futures::StreamExt as _;

use toolhost_core::model::ModelError;

/// The longest line accepted; a longer one means the server is not speaking
/// SSE (or is hostile), and decoding stops with an error.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if the server sent one.
    pub(crate) event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
}

/// Turns a byte stream into events.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds a chunk; returns the events it completed, in order.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, ModelError> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + pos;
            let next = match self.buf[end] {
                b'\r' if end + 1 == self.buf.len() => break, // maybe half a `\r\n`
                b'\r' if self.buf[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            start = next;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.buf.drain(..start);
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(ModelError::Malformed(format!(
                "a server-sent event line is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        Ok(events)
    }

    /// Ends the stream: a last event that lacked its closing blank line is
    /// still delivered.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        let rest = std::mem::take(&mut self.buf);
        let line = String::from_utf8_lossy(&rest).into_owned();
        let trimmed = line.trim_end_matches('\r');
        if !trimmed.is_empty() {
            // A non-empty line only sets a field; the dispatch below sends
            // the event it belongs to.
            self.line(trimmed);
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = self.data.take()?;
        Some(SseEvent { event, data })
    }
}

/// What the caller wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The response is complete; stop reading.
    Stop,
}

/// Reads `response`'s body as server-sent events, handing each to `on_event`
/// until it returns [`Flow::Stop`] or the body ends. Returns whether the
/// handler stopped (`false`: the body ended first). A body that breaks off
/// is a [`ModelError::Transport`].
pub(crate) async fn read_events(
    response: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
) -> Result<bool, ModelError> {
    let mut decoder = SseDecoder::default();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk =
            chunk.map_err(|e| ModelError::Transport(format!("the stream broke off: {e}")))?;
        for event in decoder.push(&chunk)? {
            if on_event(event)? == Flow::Stop {
                return Ok(true);
            }
        }
    }
    if let Some(event) = decoder.finish() {
        return Ok(on_event(event)? == Flow::Stop);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        let mut last = 0;
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            out.extend(d.push(&bytes[last..cut]).unwrap());
            last = cut;
        }
        out.extend(d.finish());
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn e2_sse_events_survive_every_split_point() {
        // CRLF, CR and LF line ends, a comment, a multi-line data field, a
        // field without a space and multi-byte characters.
        let text = ": keep-alive\r\nevent: delta\r\ndata: {\"t\":\"h\u{e9}\u{1F600}\"}\r\n\r\n\
                    data:first\rdata: second\r\rid: 7\nretry: 10\ndata: \u{4e16}\u{754c}\n\n";
        let bytes = text.as_bytes();
        let expected = vec![
            ev(Some("delta"), "{\"t\":\"h\u{e9}\u{1F600}\"}"),
            ev(None, "first\nsecond"),
            ev(None, "\u{4e16}\u{754c}"),
        ];
        assert_eq!(decode_in_pieces(bytes, &[]), expected);
        for cut in 0..=bytes.len() {
            assert_eq!(decode_in_pieces(bytes, &[cut]), expected, "cut at {cut}");
        }
        let every_byte: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(decode_in_pieces(bytes, &every_byte), expected);
    }

    #[test]
    fn e2_sse_a_last_event_without_blank_line_is_delivered() {
        assert_eq!(
            decode_in_pieces(b"data: [DONE]", &[]),
            vec![ev(None, "[DONE]")]
        );
        assert_eq!(decode_in_pieces(b"event: x\n\n", &[]), vec![]);
    }

    #[test]
    fn e2_sse_an_endless_line_is_an_error() {
        let mut d = SseDecoder::default();
        let chunk = vec![b'a'; 1024 * 1024];
        let mut result = Ok(Vec::new());
        for _ in 0..17 {
            result = d.push(&chunk);
            if result.is_err() {
                break;
            }
        }
        assert!(
            matches!(result, Err(ModelError::Malformed(_))),
            "{result:?}"
        );
    }
}
