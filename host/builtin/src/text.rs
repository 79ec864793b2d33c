//! Cutting text to a size, with a marker that says what was cut — shared
//! by every tool that shows long text.

use std::borrow::Cow;

/// `text` up to its `max`-th character, if it is longer.
fn head(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(cut, _)| &text[..cut])
}

/// A line cut to `max` characters: `head… [line cut: N chars]`.
pub(crate) fn cut_line(line: &str, max: usize) -> Cow<'_, str> {
    match head(line, max) {
        Some(h) => Cow::Owned(format!("{h}… [line cut: {} chars]", line.chars().count())),
        None => Cow::Borrowed(line),
    }
}

/// A text cut to `max` characters, with a last line saying how much of it
/// is shown.
#[cfg_attr(not(any(feature = "web", feature = "browser")), allow(dead_code))]
pub(crate) fn cut_text(text: &str, max: usize) -> Cow<'_, str> {
    match head(text, max) {
        Some(h) => Cow::Owned(format!(
            "{h}\n[… text cut: {max} of {} characters shown]",
            text.chars().count()
        )),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b1_cuts_count_characters_not_bytes() {
        assert_eq!(cut_line("ééé", 3), "ééé");
        assert_eq!(cut_line("éééé", 2), "éé… [line cut: 4 chars]");
        assert_eq!(
            cut_text("abcdef", 4),
            "abcd\n[… text cut: 4 of 6 characters shown]"
        );
    }
}
