//! `toolhost keygen`.

use std::path::Path;

use toolhost::supply::SigningKey;

use crate::Failure;
use crate::output::outln;

pub(crate) fn run(out: &Path) -> Result<(), Failure> {
    let key = SigningKey::generate();
    let files = key.write_pair(out)?;
    outln!(
        "secret key {} (mode 0600: keep it private)",
        files.secret.display()
    )?;
    outln!(
        "public key {} (name it in [trust] keys)",
        files.public.display()
    )?;
    outln!("key id     {}", key.key_id())?;
    Ok(())
}
