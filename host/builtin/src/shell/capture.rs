//! Capped capture of a process's output: the head and the tail are kept,
//! the middle is counted and replaced by a marker saying how much was cut.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// One output stream after capping.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapturedOutput {
    /// The kept text (lossily decoded), with a marker where bytes were cut.
    pub text: String,
    /// Bytes the stream produced in all.
    pub total_bytes: u64,
    /// Bytes left out of `text`.
    pub cut_bytes: u64,
}

/// Keeps the first and last `cap / 2` bytes of what is pushed.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: u64,
}

impl Capture {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half: cap / 2,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        let (h, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(h);
        bytes = rest;
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    pub(crate) fn finish(self) -> CapturedOutput {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let cut = self.total - kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if cut > 0 {
            text.push_str(&cut_marker(cut));
        }
        let tail: Vec<u8> = self.tail.into();
        text.push_str(&String::from_utf8_lossy(&tail));
        CapturedOutput {
            text,
            total_bytes: self.total,
            cut_bytes: cut,
        }
    }
}

fn cut_marker(bytes: u64) -> String {
    format!("\n[… {bytes} bytes cut …]\n")
}

/// Reads `stream` to its end, keeping at most `cap` bytes.
pub(crate) async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> CapturedOutput {
    let mut cap = Capture::new(cap);
    if let Some(mut stream) = stream {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            cap.push(&buf[..n]);
        }
    }
    cap.finish()
}

/// `text` cut to about `cap` bytes in the same way (head and tail kept, at
/// character boundaries), for a more compact view of a captured stream.
pub(crate) fn shorten(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let half = cap / 2;
    let head_end = text.floor_char_boundary(half);
    let tail_start = text.ceil_char_boundary(text.len() - half);
    format!(
        "{}{}{}",
        &text[..head_end],
        cut_marker((tail_start - head_end) as u64),
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b5_output_cap_keeps_head_and_tail_and_says_how_much_was_cut() {
        let mut c = Capture::new(8);
        for chunk in [&b"0123"[..], b"456789", b"abcdefgh", b"XYZ"] {
            c.push(chunk);
        }
        let out = c.finish();
        assert_eq!(out.total_bytes, 21);
        assert_eq!(out.cut_bytes, 13);
        assert_eq!(out.text, "0123\n[… 13 bytes cut …]\nhXYZ");
        let mut small = Capture::new(100);
        small.push(b"hello");
        assert_eq!(
            small.finish(),
            CapturedOutput {
                text: "hello".into(),
                total_bytes: 5,
                cut_bytes: 0
            }
        );
    }

    #[test]
    fn b5_shorten_cuts_at_character_boundaries() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("ééééé", 4), "é\n[… 6 bytes cut …]\né");
    }
}
