//! A minimal `console`: `log`, `info` and `debug` write to the output
//! stream, `error` and `warn` to the error stream, and everything is kept in
//! one buffer (in call order) for the tool's result. Nothing reaches the
//! host's stdout or stderr.

use std::cell::RefCell;

use boa_engine::object::ObjectInitializer;
use boa_engine::property::Attribute;
use boa_engine::{Context, JsResult, JsValue, NativeFunction, js_string};

/// Bytes of console text kept per run; later writes are counted, not kept.
pub const MAX_CONSOLE_BYTES: usize = 1 << 20;

/// Which stream a console line went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `console.log`, `console.info`, `console.debug`.
    Out,
    /// `console.error`, `console.warn`.
    Err,
}

/// One call of a console method: its stream and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Where it went.
    pub stream: Stream,
    /// The arguments, formatted and joined by spaces.
    pub text: String,
}

/// What the console captured during one run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The lines kept, in order.
    pub lines: Vec<Line>,
    /// Bytes of text kept.
    pub kept_bytes: usize,
    /// Bytes written past [`MAX_CONSOLE_BYTES`] and dropped.
    pub dropped_bytes: usize,
}

impl Captured {
    fn push(&mut self, stream: Stream, text: String) {
        if self.kept_bytes + text.len() > MAX_CONSOLE_BYTES {
            self.dropped_bytes += text.len();
        } else {
            self.kept_bytes += text.len();
            self.lines.push(Line { stream, text });
        }
    }
}

thread_local! {
    // Each call runs in a fresh instance, so this starts empty; `take`
    // empties it anyway.
    static BUFFER: RefCell<Captured> = RefCell::default();
}

/// Defines the global `console` object in `context`.
pub fn install(context: &mut Context) -> JsResult<()> {
    let console = ObjectInitializer::new(context)
        .function(NativeFunction::from_fn_ptr(out), js_string!("log"), 0)
        .function(NativeFunction::from_fn_ptr(out), js_string!("info"), 0)
        .function(NativeFunction::from_fn_ptr(out), js_string!("debug"), 0)
        .function(NativeFunction::from_fn_ptr(err), js_string!("error"), 0)
        .function(NativeFunction::from_fn_ptr(err), js_string!("warn"), 0)
        .build();
    context.register_global_property(js_string!("console"), console, Attribute::all())
}

/// Everything captured since the last `take`, leaving the buffer empty.
pub fn take() -> Captured {
    BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()))
}

fn out(_this: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    record(Stream::Out, args, ctx);
    Ok(JsValue::undefined())
}

fn err(_this: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    record(Stream::Err, args, ctx);
    Ok(JsValue::undefined())
}

/// Strings as they are, everything else rendered on one line, joined by
/// spaces.
fn record(stream: Stream, args: &[JsValue], ctx: &mut Context) {
    let text = args
        .iter()
        .map(|value| match value.as_string() {
            Some(s) => s.to_std_string_lossy(),
            None => crate::inspect::render(value, ctx),
        })
        .collect::<Vec<_>>()
        .join(" ");
    BUFFER.with(|b| b.borrow_mut().push(stream, text));
}
