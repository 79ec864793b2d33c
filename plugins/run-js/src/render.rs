//! The tool's result: a compact text for the model (console output and the
//! value, each cut to a budget, head and tail kept) and the full transcript
//! for the user.

use std::fmt::Write as _;

use crate::console::{Captured, Stream};

/// Bytes of console output the model sees.
const LLM_CONSOLE_BYTES: usize = 8 << 10;
/// Bytes of the value the model sees.
const LLM_VALUE_BYTES: usize = 4 << 10;
/// Bytes of the value the user sees.
const USER_VALUE_BYTES: usize = 1 << 20;

/// `(for_llm, for_user)` for a run that logged `console` and ended with
/// `value` (already displayed).
pub fn render(console: &Captured, value: &str) -> (String, String) {
    let transcript = transcript(console);
    let mut for_llm = String::new();
    if !transcript.is_empty() {
        let _ = writeln!(
            for_llm,
            "console:\n{}",
            cut(&transcript, LLM_CONSOLE_BYTES).trim_end()
        );
    }
    let _ = write!(for_llm, "result: {}", cut(value, LLM_VALUE_BYTES));
    let for_user = format!("{transcript}=> {}", cut(value, USER_VALUE_BYTES));
    (for_llm, for_user)
}

/// The console lines in order, one per call, error-stream lines marked
/// `[error]`, and a note if some output was not kept.
pub fn transcript(console: &Captured) -> String {
    let mut transcript = String::new();
    for line in &console.lines {
        if line.stream == Stream::Err {
            transcript.push_str("[error] ");
        }
        transcript.push_str(&line.text);
        transcript.push('\n');
    }
    if console.dropped_bytes > 0 {
        let _ = writeln!(
            transcript,
            "[console output cut: {} more bytes not kept]",
            console.dropped_bytes
        );
    }
    transcript
}

/// `text` if it fits in `max` bytes; otherwise its head and tail with a
/// marker saying how many bytes were left out between them.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let head = text.floor_char_boundary(max / 2);
    let tail = text.ceil_char_boundary(text.len() - max / 2);
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
