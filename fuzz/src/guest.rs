//! What a guest hands the host across the WIT boundary: its tool list, its
//! outputs, its errors and the URIs of its outgoing requests (the properties are stated with the hooks in
//! `toolhost_sandbox::fuzzing`).

use arbitrary::Unstructured;

use toolhost_sandbox::fuzzing;

/// See [`fuzzing::guest_output`].
pub fn output(data: &[u8]) {
    let _ = fuzzing::guest_output(&mut Unstructured::new(data));
}

/// See [`fuzzing::guest_error`].
pub fn error(data: &[u8]) {
    let _ = fuzzing::guest_error(&mut Unstructured::new(data));
}

/// See [`fuzzing::guest_descriptors`].
pub fn descriptors(data: &[u8]) {
    let _ = fuzzing::guest_descriptors(&mut Unstructured::new(data));
}

/// See [`fuzzing::request_destination`].
pub fn request_uri(data: &[u8]) {
    let _ = fuzzing::request_destination(&mut Unstructured::new(data));
}
