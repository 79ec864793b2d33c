#![no_main]

// The property is stated on the target in fuzz/src.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (toolhost_fuzz::target("signature").expect("a target").run)(data)
});
