//! Turning a fetched body into readable text.

use toolhost_core::error::ToolError;

/// Whether a response is HTML, by its content type or, without one, by
/// sniffing the start of the body.
pub(crate) fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => {
            let ct = ct.to_ascii_lowercase();
            ct.starts_with("text/html") || ct.starts_with("application/xhtml")
        }
        None => {
            let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
            let start = start.trim_start();
            start.starts_with("<!doctype html") || start.starts_with("<html")
        }
    }
}

/// Whether a content type is text a model can read as is.
fn is_text(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|ct| {
        let ct = ct.to_ascii_lowercase();
        ct.starts_with("text/")
            || ct.contains("json")
            || ct.contains("xml")
            || ct.contains("javascript")
            || ct.contains("yaml")
            || ct.contains("toml")
    })
}

/// The body as readable text: HTML rendered as plain text with light
/// Markdown marks (`#` headings, `**bold**`, links as numbered footnotes), other text decoded as UTF-8 (invalid bytes replaced).
/// Binary content is an error naming its type.
pub(crate) fn readable(content_type: Option<&str>, body: &[u8]) -> Result<String, ToolError> {
    if is_html(content_type, body) {
        return html2text::from_read(body, 100)
            .map_err(|e| ToolError::failed(format!("cannot render the HTML page: {e}")));
    }
    if !is_text(content_type) || body.contains(&0) {
        return Err(ToolError::failed(format!(
            "the response is binary ({}, {} bytes); web_fetch returns text only",
            content_type.unwrap_or("no content type"),
            body.len()
        )));
    }
    Ok(String::from_utf8_lossy(body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b6_html_becomes_readable_text() {
        let html = b"<html><head><title>T</title><script>var x = 1;</script></head>\
            <body><h1>Hello</h1><p>Some <b>bold</b> text and <a href=\"/next\">a link</a>.</p></body></html>";
        let text = readable(Some("text/html; charset=utf-8"), html).unwrap();
        assert!(text.contains("Hello"), "{text}");
        assert!(
            text.contains("Some **bold** text and [a link][1]."),
            "{text}"
        );
        assert!(text.contains("[1]: /next"), "{text}");
        assert!(!text.contains("var x"), "{text}");
        assert!(!text.contains("<p>"), "{text}");
        assert!(is_html(None, b"  <!DOCTYPE html><p>x"));
    }

    #[test]
    fn b6_binary_bodies_are_refused() {
        let err = readable(Some("image/png"), b"\x89PNG\0").unwrap_err();
        assert!(
            err.to_string().contains("binary (image/png, 5 bytes)"),
            "{err}"
        );
        assert_eq!(
            readable(Some("application/json"), b"{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
    }
}
