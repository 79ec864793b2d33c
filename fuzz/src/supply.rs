//! Where plugins come from: OCI references, `toolhost.lock`, and the
//! signature section of a component.

use std::io::Write as _;
use std::sync::OnceLock;

use toolhost::supply::{LockFile, OciRef, SignatureError, TrustedKeys};

/// A `wasm = "oci://…"` value or `toolhost pull` argument through
/// [`OciRef::parse`].
///
/// Must hold: no panic; an accepted reference prints as text that parses
/// to the same reference; an error's text is at most 300 characters of the
/// input.
pub fn oci_reference(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match OciRef::parse(text) {
        Ok(reference) => {
            let printed = reference.to_string();
            assert_eq!(
                OciRef::parse(&printed).as_ref(),
                Ok(&reference),
                "{printed}"
            );
        }
        Err(e) => assert!(e.text.chars().count() <= 300),
    }
}

/// `toolhost.lock`'s text through [`LockFile::parse`].
///
/// Must hold: no panic; an accepted lock file written out and read back
/// is the same lock file.
pub fn lock_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(lock) = LockFile::parse(text) {
        let written = lock.to_text();
        assert_eq!(LockFile::parse(&written).as_ref(), Ok(&lock), "{written}");
    }
}

/// A component's bytes through [`TrustedKeys::verify`] against one trusted
/// key whose secret nobody holds.
///
/// Must hold: no panic; nothing is accepted (no signature by that key can
/// be forged); every refusal names the plugin.
pub fn signature(data: &[u8]) {
    let keys = trusted();
    match keys.verify("fuzzed", data, &["release".to_owned()]) {
        Ok(signer) => panic!("a forged signature by `{signer}` was accepted"),
        Err(e) => {
            assert!(e.to_string().contains("`fuzzed`"), "{e}");
            let _: &SignatureError = &e;
        }
    }
}

/// One trusted key, `release`: a fixed ed25519 public key in wasmsign2's
/// format, written once to a file of this process's.
fn trusted() -> &'static TrustedKeys {
    static KEYS: OnceLock<TrustedKeys> = OnceLock::new();
    KEYS.get_or_init(|| {
        const PUBLIC: [u8; 33] = [
            0x01, 0x7b, 0x2d, 0x78, 0x47, 0x89, 0x52, 0x42, 0x16, 0x42, 0x62, 0x1a, 0x5d, 0xd3,
            0x1e, 0x2e, 0x0b, 0x65, 0x4a, 0x20, 0x4f, 0x64, 0x0f, 0xf7, 0x9b, 0x5f, 0x38, 0x91,
            0xbf, 0x41, 0x18, 0xaa, 0xbb,
        ];
        let path =
            std::env::temp_dir().join(format!("toolhost-fuzz-key-{}.public", std::process::id()));
        let mut file = std::fs::File::create(&path).expect("a temporary file");
        file.write_all(&PUBLIC).expect("the key is written");
        let keys =
            TrustedKeys::load([("release".to_owned(), path.clone())]).expect("the fixed key loads");
        let _ = std::fs::remove_file(&path);
        keys
    })
}
