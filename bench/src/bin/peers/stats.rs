//! Samples, their median and 99th percentile, and the table they go in.

use std::fmt::Write as _;
use std::time::Duration;

/// Timings of one case: one duration per sample.
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn new(mut d: Vec<Duration>) -> Self {
        assert!(!d.is_empty(), "a case without samples");
        d.sort();
        Self(d)
    }

    fn at(&self, q: f64) -> Duration {
        let i = ((self.0.len() - 1) as f64 * q).round() as usize;
        self.0[i]
    }

    pub fn median(&self) -> Duration {
        self.at(0.5)
    }

    pub fn p99(&self) -> Duration {
        self.at(0.99)
    }

    pub fn clone_samples(&self) -> Self {
        Self(self.0.clone())
    }
}

/// One line of the table: toolhost's figure beside a peer's.
pub struct Row {
    pub measure: String,
    pub toolhost: Samples,
    pub peer: String,
    /// `None`: there is no peer figure for this measure.
    pub peer_samples: Option<Samples>,
    /// The aim, if the issue set one: toolhost/peer at most this.
    pub goal: Option<f64>,
    /// Whether the two run the same wasm (a ratio of different code would
    /// mean nothing).
    pub comparable: bool,
}

/// A duration in the unit that suits it.
pub fn show(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// The rows as one Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| measure | toolhost median | toolhost p99 | peer | peer median | peer p99 | toolhost / peer | goal |\n\
         |---|---:|---:|---|---:|---:|---:|---|\n",
    );
    for r in rows {
        let (pm, pp, ratio, verdict) = match (&r.peer_samples, r.comparable) {
            (Some(p), true) => {
                let ratio = r.toolhost.median().as_secs_f64() / p.median().as_secs_f64();
                let verdict = match r.goal {
                    Some(g) if ratio <= g => format!("≤ {g} — met"),
                    Some(g) => format!("≤ {g} — missed by {:.0} %", (ratio / g - 1.0) * 100.0),
                    None => String::new(),
                };
                (
                    show(p.median()),
                    show(p.p99()),
                    format!("{ratio:.2}×"),
                    verdict,
                )
            }
            (Some(p), false) => (show(p.median()), show(p.p99()), "—".into(), String::new()),
            (None, _) => ("—".into(), "—".into(), "—".into(), String::new()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {pm} | {pp} | {ratio} | {verdict} |",
            r.measure,
            show(r.toolhost.median()),
            show(r.toolhost.p99()),
            r.peer,
        );
    }
    out
}
