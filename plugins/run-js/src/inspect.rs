//! One-line rendering of values for the console and the result, in the
//! manner of Node's `util.inspect`: primitives as the engine displays them
//! (strings quoted), arrays and plain objects (class instances included)
//! spelled out to a depth and a length, cycles marked, and other objects
//! (maps, dates, errors, functions, …) as the engine displays them.

use boa_engine::object::JsObject;
use boa_engine::{Context, JsResult, JsValue, js_string};

/// Levels of nested arrays and objects spelled out.
const MAX_DEPTH: usize = 4;
/// Elements or properties shown per array or object.
const MAX_ITEMS: u64 = 100;

/// `value` on one line. If rendering fails (a getter that throws, say),
/// the engine's display.
pub fn render(value: &JsValue, context: &mut Context) -> String {
    let mut out = String::new();
    match write(&mut out, value, 0, &mut Vec::new(), context) {
        Ok(()) => out,
        Err(_) => value.display().to_string(),
    }
}

fn write(
    out: &mut String,
    value: &JsValue,
    depth: usize,
    seen: &mut Vec<JsObject>,
    context: &mut Context,
) -> JsResult<()> {
    let object = match value.as_object() {
        Some(o) if o.is_array() || o.is_ordinary() => o,
        _ => {
            out.push_str(&value.display().to_string());
            return Ok(());
        }
    };
    let is_array = object.is_array();
    if seen.iter().any(|s| JsObject::equals(s, &object)) {
        out.push_str("[Circular]");
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        out.push_str(if is_array { "[Array]" } else { "[Object]" });
        return Ok(());
    }
    seen.push(object.clone());
    let keys = if is_array {
        None
    } else {
        Some(own_keys(&object, context)?)
    };
    let count = match &keys {
        Some(keys) => keys.len() as u64,
        None => object
            .get(js_string!("length"), context)?
            .to_length(context)?,
    };
    if !is_array {
        out.push_str(&class_prefix(&object, context)?);
    }
    out.push_str(if is_array { "[" } else { "{" });
    for i in 0..count.min(MAX_ITEMS) {
        out.push_str(if i == 0 { " " } else { ", " });
        let item = match &keys {
            Some(keys) => {
                let key = &keys[i as usize];
                out.push_str(&key_text(key));
                out.push_str(": ");
                object.get(js_string!(key.as_str()), context)?
            }
            None => object.get(i, context)?,
        };
        write(out, &item, depth + 1, seen, context)?;
    }
    if count > MAX_ITEMS {
        out.push_str(&format!(", ... {} more", count - MAX_ITEMS));
    }
    out.push_str(match (count, is_array) {
        (0, true) => "]",
        (0, false) => "}",
        (_, true) => " ]",
        (_, false) => " }",
    });
    seen.pop();
    Ok(())
}

/// The object's own enumerable string keys, as `Object.keys` gives them.
fn own_keys(object: &JsObject, context: &mut Context) -> JsResult<Vec<String>> {
    let object_constructor = context.intrinsics().constructors().object().constructor();
    let keys = object_constructor
        .get(js_string!("keys"), context)?
        .as_callable()
        .map(|f| {
            f.call(
                &object_constructor.into(),
                &[object.clone().into()],
                context,
            )
        })
        .transpose()?
        .and_then(|v| v.as_object());
    let Some(keys) = keys else {
        return Ok(Vec::new());
    };
    let length = keys
        .get(js_string!("length"), context)?
        .to_length(context)?;
    (0..length)
        .map(|i| {
            Ok(keys
                .get(i, context)?
                .to_string(context)?
                .to_std_string_lossy())
        })
        .collect()
}

/// `"Name "` for an instance of a class, `""` for a plain object.
fn class_prefix(object: &JsObject, context: &mut Context) -> JsResult<String> {
    let object_prototype = context.intrinsics().constructors().object().prototype();
    let Some(prototype) = object.prototype() else {
        return Ok(String::new());
    };
    if JsObject::equals(&prototype, &object_prototype) {
        return Ok(String::new());
    }
    let constructor = prototype.get(js_string!("constructor"), context)?;
    let name = match constructor.as_object() {
        Some(c) => c.get(js_string!("name"), context)?,
        None => return Ok(String::new()),
    };
    Ok(match name.as_string() {
        Some(n) if !n.is_empty() => format!("{} ", n.to_std_string_lossy()),
        _ => String::new(),
    })
}

/// A key as written in an object literal: bare if it is an identifier,
/// quoted otherwise.
fn key_text(key: &str) -> String {
    let mut chars = key.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}
