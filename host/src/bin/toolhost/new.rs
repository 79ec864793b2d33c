//! `toolhost new`: a plugin project to start from, in Rust, Python or
//! JavaScript, that builds outside this repository with one command.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::Failure;
use crate::output::outln;

/// The WIT package a Python or JavaScript project builds against: the one
/// this binary speaks, copied into the project.
const WIT: &str = include_str!("../../../../wit/plugin.wit");

/// The SDK a Rust project depends on: the one beside this binary's sources.
const SDK_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

/// A plugin's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Lang {
    /// Rust, with toolhost's SDK.
    Rust,
    /// Python, built with componentize-py.
    Python,
    /// JavaScript, built with ComponentizeJS.
    Javascript,
}

/// Writes the project `name` into `dir` (default `./NAME`), and adds its
/// table to `config` if given, else prints it.
pub(crate) fn run(
    name: &str,
    lang: Lang,
    dir: Option<&Path>,
    config: Option<&Path>,
) -> Result<(), Failure> {
    check_name(name)?;
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if dir.exists() {
        return Err(Failure(format!(
            "{}: already exists; choose another name or --dir",
            dir.display()
        )));
    }
    // A table that cannot be added is found before anything is written.
    if let Some(config) = config {
        config_text(config, name)?;
    }
    let tool = name.replace('-', "_");
    let file = tool.clone();
    let sdk = fs::canonicalize(SDK_DIR).map_err(|e| {
        Failure(format!(
            "cannot find toolhost's SDK at {SDK_DIR} (the sources this binary was built from): {e}"
        ))
    })?;
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{tool}}", &tool)
            .replace("{{file}}", &file)
            .replace("{{sdk}}", &sdk.display().to_string())
    };
    let (files, build, wasm): (Vec<(&str, String)>, &str, String) = match lang {
        Lang::Rust => (
            vec![
                (
                    "Cargo.toml",
                    fill(include_str!("templates/rust_Cargo.toml")),
                ),
                ("src/lib.rs", fill(include_str!("templates/rust_lib.rs"))),
            ],
            "cargo build --release --target wasm32-wasip2",
            format!("target/wasm32-wasip2/release/{file}.wasm"),
        ),
        Lang::Python => (
            vec![
                ("app.py", fill(include_str!("templates/python_app.py"))),
                ("wit/plugin.wit", WIT.to_owned()),
            ],
            "componentize-py -d wit -w tool-plugin componentize app -o FILE.wasm",
            format!("{file}.wasm"),
        ),
        Lang::Javascript => (
            vec![
                ("plugin.js", fill(include_str!("templates/js_plugin.js"))),
                (
                    "package.json",
                    fill(include_str!("templates/js_package.json")),
                ),
                ("wit/plugin.wit", WIT.to_owned()),
            ],
            "npm install && npm run build",
            format!("{file}.wasm"),
        ),
    };
    let build = build.replace("FILE", &file);
    let readme = readme(name, lang, &build, &wasm, &tool);
    for (path, text) in files.iter().chain([&("README.md", readme)]) {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| Failure(format!("cannot create {}: {e}", parent.display())))?;
        }
        fs::write(&path, text)
            .map_err(|e| Failure(format!("cannot write {}: {e}", path.display())))?;
    }
    let wasm_path = fs::canonicalize(&dir)
        .map_err(|e| Failure(format!("cannot read {}: {e}", dir.display())))?
        .join(&wasm);
    let table = table(name, lang, &wasm_path);
    outln!("Created {} ({lang:?}) in {}.", name, dir.display())?;
    outln!("Build it:  cd {} && {build}", dir.display())?;
    match config {
        Some(config) => {
            add_table(config, name, &table)?;
            outln!("Added [plugins.{name}] to {}.", config.display())?;
        }
        None => outln!("Then add to your toolhost.toml:\n\n{table}")?,
    }
    outln!("And try it:  toolhost call {tool} '{{\"text\": \"hello\"}}'")?;
    Ok(())
}

/// A name that is a valid package, crate and (with `_` for `-`) tool name.
fn check_name(name: &str) -> Result<(), Failure> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Failure(format!(
            "`{name}` cannot name a plugin: use lowercase letters, digits, `-` and `_`, starting with a letter (at most 64)"
        )))
    }
}

/// The plugin's `toolhost.toml` table.
fn table(name: &str, lang: Lang, wasm: &Path) -> String {
    let mut t = format!(
        "[plugins.{name}]\nwasm = {:?}\n",
        wasm.display().to_string()
    );
    if lang != Lang::Rust {
        // An interpreter inside the component needs more than the default.
        t.push_str("memory_mb = 128\n");
    }
    t
}

/// The text of `config` (empty if it does not exist), refusing a file that
/// is not TOML or already has the plugin.
fn config_text(config: &Path, name: &str) -> Result<String, Failure> {
    let text = match fs::read_to_string(config) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Failure(format!("cannot read {}: {e}", config.display()))),
    };
    let parsed: toml::Table = text
        .parse()
        .map_err(|e| Failure(format!("{}: not valid TOML: {e}", config.display())))?;
    let taken = parsed
        .get("plugins")
        .and_then(|p| p.as_table())
        .is_some_and(|p| p.contains_key(name));
    if taken {
        return Err(Failure(format!(
            "{}: already has [plugins.{name}]; remove it or choose another name",
            config.display()
        )));
    }
    Ok(text)
}

/// Appends `table` to `config`, refusing if it already has the plugin.
fn add_table(config: &Path, name: &str, table: &str) -> Result<(), Failure> {
    let mut out = config_text(config, name)?;
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(table);
    fs::write(config, out).map_err(|e| Failure(format!("cannot write {}: {e}", config.display())))
}

fn readme(name: &str, lang: Lang, build: &str, wasm: &str, tool: &str) -> String {
    let mut r = format!("# {name}\n\nA toolhost plugin");
    let _ = match lang {
        Lang::Rust => writeln!(
            r,
            " in Rust, with toolhost's SDK. Needs the `wasm32-wasip2` target\n(`rustup target add wasm32-wasip2`)."
        ),
        Lang::Python => writeln!(
            r,
            " in Python. Needs componentize-py\n(`pip install componentize-py==0.25.1`). `wit/` holds the interfaces it is built\nagainst (`toolhost:plugin@0.2.0`)."
        ),
        Lang::Javascript => writeln!(
            r,
            " in JavaScript. Needs Node 20 or later; `npm install` fetches\nComponentizeJS. `wit/` holds the interfaces it is built against\n(`toolhost:plugin@0.2.0`)."
        ),
    };
    let _ = write!(
        r,
        "\nBuild:\n\n```sh\n{build}\n```\n\nThe component is `{wasm}`. Check it and call it:\n\n```sh\ntoolhost inspect {wasm}\ntoolhost call {tool} '{{\"text\": \"hello\"}}'\n```\n\nSee toolhost's sdk/README.md for the conventions of each language.\n"
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["words", "word-count", "a1_b"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Words", "1st", "a b", "../x", "é", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
