//! `Array.prototype.fill` with a direct path for ordinary arrays.
//!
//! Boa 0.22 writes every element of `fill` through the generic `[[Set]]`
//! (an own-property lookup, the prototype chain, the array's
//! `[[DefineOwnProperty]]`, which looks `length` up by name, and the cell
//! borrows around them): about half a microsecond per element in the
//! component. A snippet that fills arrays until the sandbox's memory limit
//! stops it made some six million such writes and took four seconds of CPU
//! to reach the limit. Written here because the engine offers no hook into
//! its own `fill`, and the direct path is where the time goes.
//!
//! The direct path stores each value straight into the array's element
//! storage, which is what `[[Set]]` ends with when nothing on the way can
//! observe or refuse the write. It is taken only when that holds:
//!
//! - `this` is an array exotic object (not a proxy, not an array-like);
//! - its elements are plain writable data properties (its storage is not
//!   the sparse kind that keeps full descriptors: no accessor, no frozen or
//!   non-writable element);
//! - it is extensible, so a missing element may be created;
//! - its prototype chain is exactly `Array.prototype`, then
//!   `Object.prototype`, and neither has an element of its own (an indexed
//!   setter or read-only element there would change what `[[Set]]` does);
//! - `start` and `end` are absent or numbers, so converting them calls no
//!   script code.
//!
//! Anything else goes to the engine's own `fill`, unchanged. `fill` never
//! writes past `length`, so the array's `length` is never touched.

use boa_engine::object::builtins::{JsArray, JsFunction};
use boa_engine::object::{FunctionObjectBuilder, IndexProperties};
use boa_engine::property::PropertyDescriptor;
use boa_engine::value::IntegerOrInfinity;
use boa_engine::{Context, JsObject, JsResult, JsValue, NativeFunction, js_string};

/// Replaces `Array.prototype.fill` with one that takes the direct path
/// where it is unobservable and otherwise calls the engine's own.
pub fn install(context: &mut Context) -> JsResult<()> {
    let prototype = context.intrinsics().constructors().array().prototype();
    let original = prototype
        .get(js_string!("fill"), context)?
        .as_callable()
        .and_then(JsFunction::from_object)
        .expect("Array.prototype.fill is a function");
    let fill = FunctionObjectBuilder::new(
        context.realm(),
        NativeFunction::from_copy_closure_with_captures(fill, original),
    )
    .name(js_string!("fill"))
    .length(1)
    .constructor(false)
    .build();
    prototype.define_property_or_throw(
        js_string!("fill"),
        PropertyDescriptor::builder()
            .value(fill)
            .writable(true)
            .enumerable(false)
            .configurable(true),
        context,
    )?;
    Ok(())
}

/// `Array.prototype.fill(value, start, end)`.
fn fill(
    this: &JsValue,
    args: &[JsValue],
    original: &JsFunction,
    context: &mut Context,
) -> JsResult<JsValue> {
    let Some((array, range)) = direct(this, args, context)? else {
        return original.call(this, args, context);
    };
    let value = args.first().cloned().unwrap_or_default();
    for index in range {
        array.insert_property(
            index,
            PropertyDescriptor::builder()
                .value(value.clone())
                .writable(true)
                .enumerable(true)
                .configurable(true),
        );
    }
    Ok(this.clone())
}

/// The array and the indices to fill, when the direct path gives the same
/// result as the engine's `fill`; `None` otherwise. Calls no script code.
fn direct(
    this: &JsValue,
    args: &[JsValue],
    context: &mut Context,
) -> JsResult<Option<(JsObject, std::ops::Range<u32>)>> {
    let Some(array) = this.as_object() else {
        return Ok(None);
    };
    if !array.is_array() || !plain_elements(&array) || !array.is_extensible(context)? {
        return Ok(None);
    }
    let constructors = context.intrinsics().constructors();
    let (array_prototype, object_prototype) = (
        constructors.array().prototype(),
        constructors.object().prototype(),
    );
    let chain_is_standard = array
        .prototype()
        .is_some_and(|p| JsObject::equals(&p, &array_prototype))
        && array_prototype
            .prototype()
            .is_some_and(|p| JsObject::equals(&p, &object_prototype))
        && object_prototype.prototype().is_none();
    if !chain_is_standard || has_elements(&array_prototype) || has_elements(&object_prototype) {
        return Ok(None);
    }
    let bound = |arg: Option<&JsValue>| arg.is_none_or(|v| v.is_undefined() || v.is_number());
    if !bound(args.get(1)) || !bound(args.get(2)) {
        return Ok(None);
    }
    // An array's length is an own data property below 2^32: reading it
    // runs nothing.
    let len = JsArray::from_object(array.clone())?.length(context)?;
    let start = relative(args.get(1), len, 0, context)?;
    let end = relative(args.get(2), len, len, context)?;
    // Both are at most `len`, which is below 2^32.
    let (start, end) = (start as u32, end as u32);
    Ok(Some((array, start..end.max(start))))
}

/// Whether the object's elements are all plain writable data properties.
fn plain_elements(object: &JsObject) -> bool {
    !matches!(
        object.borrow().properties().index_properties(),
        IndexProperties::SparseProperty(_)
    )
}

/// Whether the object has any element of its own.
fn has_elements(object: &JsObject) -> bool {
    object
        .borrow()
        .properties()
        .index_property_keys()
        .next()
        .is_some()
}

/// A `start` or `end` argument as an index in `0..=len`, as the
/// specification's steps for `fill` compute it; `absent` when undefined.
fn relative(arg: Option<&JsValue>, len: u64, absent: u64, context: &mut Context) -> JsResult<u64> {
    let Some(arg) = arg.filter(|v| !v.is_undefined()) else {
        return Ok(absent);
    };
    Ok(match arg.to_integer_or_infinity(context)? {
        IntegerOrInfinity::NegativeInfinity => 0,
        IntegerOrInfinity::Integer(i) if i < 0 => len.checked_add_signed(i).unwrap_or(0),
        IntegerOrInfinity::Integer(i) => (i as u64).min(len),
        IntegerOrInfinity::PositiveInfinity => len,
    })
}
