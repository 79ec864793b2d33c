//! Entry points for the fuzz targets: what a guest
//! hands the host — its tool list, outputs and errors — built from fuzz
//! input and put through the host's conversions. Not part of the API.
//!
//! The generated WIT types do not implement `Arbitrary`, so each value is
//! built here field by field from the input.

use arbitrary::{Result, Unstructured};

use toolhost_core::ToolSpec;
use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::output::{ContentBlock, ToolOutput};

use crate::bindings::v03::toolhost::plugin::types;
use crate::bindings::{error_from_guest, outcome_to_guest, output_from_guest};
use crate::http::destination;
use crate::plugin::{Checked, specs_from_descriptors};
use crate::policy::GuestBounds;

fn opt_string(u: &mut Unstructured) -> Result<Option<String>> {
    u.arbitrary()
}

fn block(u: &mut Unstructured) -> Result<types::ContentBlock> {
    let media = |u: &mut Unstructured| -> Result<types::Media> {
        Ok(types::Media {
            mime_type: u.arbitrary()?,
            data: u.arbitrary()?,
        })
    };
    let content = match u.int_in_range(0..=4)? {
        0 => types::Content::Text(u.arbitrary()?),
        1 => types::Content::Image(media(u)?),
        2 => types::Content::Media(media(u)?),
        3 => types::Content::ResourceLink(types::ResourceLink {
            uri: u.arbitrary()?,
            name: u.arbitrary()?,
            title: opt_string(u)?,
            description: opt_string(u)?,
            mime_type: opt_string(u)?,
            size: u.arbitrary()?,
        }),
        _ => types::Content::Embedded(types::EmbeddedResource {
            uri: u.arbitrary()?,
            mime_type: opt_string(u)?,
            contents: if u.arbitrary()? {
                types::ResourceContents::Text(u.arbitrary()?)
            } else {
                types::ResourceContents::Blob(u.arbitrary()?)
            },
        }),
    };
    let annotations = if u.arbitrary()? {
        let mut audience = Vec::new();
        u.arbitrary_loop(None, Some(4), |u| {
            audience.push(if u.arbitrary()? {
                types::Audience::User
            } else {
                types::Audience::Assistant
            });
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
        Some(types::Annotations {
            audience,
            priority: u.arbitrary()?,
            last_modified: opt_string(u)?,
        })
    } else {
        None
    };
    Ok(types::ContentBlock {
        content,
        annotations,
    })
}

fn blocks(u: &mut Unstructured) -> Result<Vec<types::ContentBlock>> {
    let mut blocks = Vec::new();
    u.arbitrary_loop(None, Some(64), |u| {
        blocks.push(block(u)?);
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    Ok(blocks)
}

fn output(u: &mut Unstructured) -> Result<types::ToolOutput> {
    Ok(match u.int_in_range(0..=4)? {
        0 => types::ToolOutput::Text(u.arbitrary()?),
        1 => types::ToolOutput::Silent(u.arbitrary()?),
        2 => types::ToolOutput::Dual(types::DualOutput {
            for_llm: u.arbitrary()?,
            for_user: u.arbitrary()?,
        }),
        3 => types::ToolOutput::Blocks(blocks(u)?),
        _ => types::ToolOutput::Structured(types::StructuredOutput {
            json: u.arbitrary()?,
            blocks: blocks(u)?,
        }),
    })
}

/// A guest's output through [`output_from_guest`].
///
/// Must hold: no panic; an accepted output fits the bound (its bytes plus
/// 32 per block), every image block is `image/*`, every priority is from 0
/// to 1, and the output survives the trip back to the guest and in again
/// unchanged.
pub fn guest_output(u: &mut Unstructured) -> Result<()> {
    let max_bytes = u.int_in_range(0..=4096)?;
    let out = output(u)?;
    let Ok(host) = output_from_guest(out, max_bytes) else {
        return Ok(());
    };
    let blocks = match &host {
        ToolOutput::Blocks { blocks } | ToolOutput::Structured { blocks, .. } => blocks.as_slice(),
        _ => &[],
    };
    let structured = host.structured_value().map_or(0, |v| v.to_string().len());
    // A structured output without blocks gets one holding its JSON text.
    let own_blocks = match &host {
        ToolOutput::Blocks { blocks } => blocks.len(),
        _ => 0,
    };
    if structured == 0 {
        assert!(host.size_bytes() + 32 * own_blocks <= max_bytes);
    }
    for b in blocks {
        if let ContentBlock::Image { mime_type, .. } = b {
            assert!(mime_type.starts_with("image/"), "{mime_type}");
        }
        if let Some(p) = b.annotations().priority {
            assert!((0.0..=1.0).contains(&p), "{p}");
        }
    }
    let types::CallOutcome::Ok(back) = outcome_to_guest(&Ok(host.clone())) else {
        panic!("an output came back as an error");
    };
    assert_eq!(output_from_guest(back, usize::MAX), Ok(host));
    Ok(())
}

/// A guest's error through [`error_from_guest`].
///
/// Must hold: no panic; a message over the bound is a limit fault, and
/// every accepted error is within it.
pub fn guest_error(u: &mut Unstructured) -> Result<()> {
    let max_message = u.int_in_range(0..=1024)?;
    let e = match u.int_in_range(0..=2)? {
        0 => types::ToolError::InvalidArguments(types::InvalidArguments {
            path: u.arbitrary()?,
            message: u.arbitrary()?,
        }),
        1 => types::ToolError::Failed(types::Failure {
            message: u.arbitrary()?,
            retryable: u.arbitrary()?,
        }),
        _ => types::ToolError::UnknownTool(u.arbitrary()?),
    };
    match error_from_guest(e, "fuzzed", max_message) {
        Ok(ToolError::InvalidArguments { path, message }) => {
            assert!(path.len() <= max_message && message.len() <= max_message);
        }
        Ok(ToolError::Failed { message, .. }) => {
            // An unknown tool's message is the host's, naming the tool.
            assert!(message.len() <= max_message || message.starts_with("plugin `fuzzed`"));
        }
        Ok(other) => panic!("a guest error became {other:?}"),
        Err(SandboxFault::LimitExceeded(_)) => {}
        Err(other) => panic!("a guest error became the fault {other:?}"),
    }
    Ok(())
}

/// A guest's tool list through the checks a load makes.
///
/// Must hold: no panic; an accepted list is within every bound, its names
/// are valid and distinct, and each schema compiled.
pub fn guest_descriptors(u: &mut Unstructured) -> Result<()> {
    let bounds = GuestBounds {
        max_tools: u.int_in_range(0..=16)?,
        max_description_bytes: u.int_in_range(0..=256)?,
        max_schema_bytes: u.int_in_range(0..=1024)?,
        ..GuestBounds::default()
    };
    let mut descriptors = Vec::new();
    u.arbitrary_loop(None, Some(32), |u| {
        descriptors.push(types::ToolDescriptor {
            name: u.arbitrary()?,
            description: u.arbitrary()?,
            parameters_schema: u.arbitrary()?,
            concurrency_safe: u.arbitrary()?,
            idempotent: u.arbitrary()?,
            output_schema: u.arbitrary()?,
            hints: types::ToolHints {
                read_only: u.arbitrary()?,
                destructive: u.arbitrary()?,
                open_world: u.arbitrary()?,
            },
        });
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    let count = descriptors.len();
    let Ok(specs) = specs_from_descriptors(descriptors, &bounds, Checked::Now) else {
        return Ok(());
    };
    assert_eq!(specs.len(), count);
    assert!(count <= bounds.max_tools);
    let mut names = std::collections::HashSet::new();
    for (spec, _) in &specs {
        ToolSpec::validate_name(&spec.name).expect("an accepted name is valid");
        assert!(names.insert(spec.name.clone()), "`{}` twice", spec.name);
        assert!(spec.description.len() <= bounds.max_description_bytes);
    }
    Ok(())
}

/// Where a guest's outgoing request to `uri` goes, read the way the
/// sandbox reads it before asking the network policy: scheme, host as the
/// URI writes it, port. `None` for a URI the sandbox refuses.
pub fn request_destination(uri: &str) -> Option<(&'static str, String, u16)> {
    let uri = uri.parse::<http::Uri>().ok()?;
    let (scheme, host, port) = destination(&uri)?;
    Some((scheme, host.to_owned(), port))
}
