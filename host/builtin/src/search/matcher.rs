//! Searching one file in process, shared by the native and fd backends:
//! line numbers on, BOM sniffing and memory maps off, and binary detection
//! that quits at the first NUL byte — after which the file's matches are
//! dropped, as the ripgrep backend drops those of a file whose search
//! reports a binary offset.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::sync::atomic::{AtomicUsize, Ordering};

use cap_std::fs::Dir;

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::RawMatch;

/// A searcher configured like every backend's.
pub(crate) fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .bom_sniffing(false)
        .memory_map(MmapChoice::never())
        .build()
}

/// The matching lines of the file at `rel` under `dir` as (line number,
/// line bytes), or `None` if the file is binary or cannot be read. The file
/// is opened through the capability `dir`, so a path that was swapped for
/// a symlink leading out after the walk saw it is refused.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    dir: &Dir,
    rel: &[u8],
) -> Option<Vec<(u64, Vec<u8>)>> {
    let file = dir.open(OsStr::from_bytes(rel)).ok()?.into_std();
    let mut sink = Collect::default();
    searcher.search_file(matcher, &file, &mut sink).ok()?;
    (!sink.binary).then_some(sink.lines)
}

/// The matches of the file `rel` as [`RawMatch`]es (none for a binary or
/// unreadable file), added to `count`; `None` once `count` passes `max`.
pub(crate) fn file_matches(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    dir: &Dir,
    rel: &[u8],
    count: &AtomicUsize,
    max: usize,
) -> Option<Vec<RawMatch>> {
    let lines = search_file(searcher, matcher, dir, rel).unwrap_or_default();
    if count.fetch_add(lines.len(), Ordering::Relaxed) + lines.len() > max {
        return None;
    }
    Some(
        lines
            .into_iter()
            .map(|(line, text)| RawMatch {
                path: rel.to_vec(),
                line,
                text,
            })
            .collect(),
    )
}

#[derive(Default)]
struct Collect {
    lines: Vec<(u64, Vec<u8>)>,
    binary: bool,
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.lines
            .push((m.line_number().unwrap_or(0), m.bytes().to_vec()));
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}
