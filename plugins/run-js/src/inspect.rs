//! One-line rendering of values for the console and the result (see
//! `inspect.js`): arrays and plain objects spelled out to a depth, strings
//! quoted, everything else as the engine displays it.

use boa_engine::object::JsObject;
use boa_engine::{Context, JsNativeError, JsResult, JsValue, NativeFunction, Source, js_string};

/// The renderer, written in JavaScript; evaluates to a function taking the
/// engine's display function and returning `inspect(value)`.
const INSPECT_JS: &str = include_str!("inspect.js");

/// Builds the `inspect` function in `context`.
pub fn build(context: &mut Context) -> JsResult<JsObject> {
    let factory = context.eval(Source::from_bytes(INSPECT_JS))?;
    let display = NativeFunction::from_fn_ptr(|_, args, _| {
        let value = args.first().cloned().unwrap_or_default();
        Ok(js_string!(value.display().to_string()).into())
    })
    .to_js_function(context.realm());
    let not_a_function = || JsNativeError::typ().with_message("inspect.js is not a function");
    let inspect = factory.as_callable().ok_or_else(not_a_function)?.call(
        &JsValue::undefined(),
        &[display.into()],
        context,
    )?;
    Ok(inspect.as_callable().ok_or_else(not_a_function)?)
}

/// `value` rendered by `inspect`, or as the engine displays it if that
/// fails (a getter that throws, say).
pub fn render(inspect: &JsObject, value: &JsValue, context: &mut Context) -> String {
    inspect
        .call(&JsValue::undefined(), std::slice::from_ref(value), context)
        .ok()
        .and_then(|text| text.as_string().map(|s| s.to_std_string_lossy()))
        .unwrap_or_else(|| value.display().to_string())
}
