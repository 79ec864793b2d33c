//! `toolhost sign`.

use std::path::Path;

use toolhost::supply::SigningKey;

use crate::Failure;
use crate::output::outln;

pub(crate) fn run(key: &Path, input: &Path, output: &Path) -> Result<(), Failure> {
    let key = SigningKey::load(key)?;
    key.sign_file(input, output)?;
    outln!(
        "signed {} into {} (key id {})",
        input.display(),
        output.display(),
        key.key_id()
    )?;
    Ok(())
}
