//! `toolhost push`.

use std::io::IsTerminal as _;
use std::path::Path;

use toolhost::supply::{OciRef, PushOptions, PushProgress, push};

use crate::Failure;
use crate::output::{outln, write_err};

pub(crate) async fn run(file: &Path, reference: &str, insecure: bool) -> Result<(), Failure> {
    let reference = OciRef::parse(reference)?;
    let options = PushOptions::default().insecure(insecure);
    // Progress only for a person watching: on a terminal, one line
    // rewritten in place; otherwise nothing.
    let terminal = std::io::stderr().is_terminal();
    let progress = |p: PushProgress| {
        if terminal {
            show(p);
        }
    };
    let pushed = push(file, &reference, &options, &progress).await;
    if terminal {
        // Clear the progress line, whatever happened.
        write_err(format_args!("\r\x1b[2K"));
    }
    let pushed = pushed?;
    outln!("pushed {} to {reference}", file.display())?;
    outln!("  manifest {}", pushed.manifest)?;
    outln!("  wasm     {}", pushed.wasm)?;
    outln!(
        "  pinned   oci://{}/{}@{}",
        reference.registry(),
        reference.repository(),
        pushed.manifest
    )?;
    Ok(())
}

/// One progress line on the terminal, over the previous one.
fn show(progress: PushProgress) {
    let line = match progress {
        PushProgress::Uploading { what, sent, total } => {
            format!("uploading the {what}: {} of {}", size(sent), size(total))
        }
        PushProgress::Present { what } => format!("the registry has the {what} already"),
        PushProgress::Manifest => "writing the manifest".to_owned(),
        _ => return,
    };
    write_err(format_args!("\r\x1b[2K{line}"));
}

/// A byte count for people: `812 B`, `4.2 KiB`, `3.1 MiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
