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

/// The world a Python or JavaScript project builds for: `tool-plugin` and
/// the standard `wasi:config/store`, whose WIT is written beside it.
const SETTINGS_WIT: &str = include_str!("templates/settings.wit");
const WASI_CONFIG_WIT: &str = include_str!("templates/wasi_config_store.wit");

/// The SDK a Rust project depends on, carried in this binary so that a
/// `toolhost` installed anywhere (its sources long gone) writes a project
/// that builds: each file with its path in the project (all but the SDK's
/// own tests). The SDK's build script reads `../wit/`, which is the
/// project's `wit/`.
/// (`sdk_files_are_all_embedded` fails when a file is added to `sdk/`
/// without being listed here.)
const SDK_FILES: &[(&str, &str)] = &[
    ("sdk/build.rs", include_str!("../../../../sdk/build.rs")),
    ("sdk/README.md", include_str!("../../../../sdk/README.md")),
    (
        "sdk/src/__private.rs",
        include_str!("../../../../sdk/src/__private.rs"),
    ),
    (
        "sdk/src/bindings.rs",
        include_str!("../../../../sdk/src/bindings.rs"),
    ),
    (
        "sdk/src/extension.rs",
        include_str!("../../../../sdk/src/extension.rs"),
    ),
    (
        "sdk/src/generated/config_store.rs",
        include_str!("../../../../sdk/src/generated/config_store.rs"),
    ),
    (
        "sdk/src/generated/config_store.wit",
        include_str!("../../../../sdk/src/generated/config_store.wit"),
    ),
    (
        "sdk/src/generated/extension_plugin.rs",
        include_str!("../../../../sdk/src/generated/extension_plugin.rs"),
    ),
    (
        "sdk/src/generated/tool_plugin.rs",
        include_str!("../../../../sdk/src/generated/tool_plugin.rs"),
    ),
    (
        "sdk/src/http.rs",
        include_str!("../../../../sdk/src/http.rs"),
    ),
    ("sdk/src/lib.rs", include_str!("../../../../sdk/src/lib.rs")),
    ("sdk/src/log.rs", include_str!("../../../../sdk/src/log.rs")),
    (
        "sdk/src/output.rs",
        include_str!("../../../../sdk/src/output.rs"),
    ),
    (
        "sdk/src/progress.rs",
        include_str!("../../../../sdk/src/progress.rs"),
    ),
    (
        "sdk/src/settings.rs",
        include_str!("../../../../sdk/src/settings.rs"),
    ),
    (
        "sdk/src/tools.rs",
        include_str!("../../../../sdk/src/tools.rs"),
    ),
];

/// The SDK's manifest, whose package fields come from this repository's
/// workspace.
const SDK_MANIFEST: &str = include_str!("../../../../sdk/Cargo.toml");

/// The SDK's manifest for a project of its own: the workspace's package
/// fields written out (this binary's version, licence and Rust version;
/// the workspace's edition, checked by `the_sdk_manifest_stands_alone`).
fn sdk_manifest() -> String {
    // `rust-version.workspace` first: it ends like `version.workspace`.
    SDK_MANIFEST
        .replace(
            "rust-version.workspace = true",
            &format!("rust-version = \"{}\"", env!("CARGO_PKG_RUST_VERSION")),
        )
        .replace(
            "version.workspace = true",
            &format!("version = \"{}\"", env!("CARGO_PKG_VERSION")),
        )
        .replace("edition.workspace = true", "edition = \"2024\"")
        .replace(
            "license.workspace = true",
            &format!("license = \"{}\"", env!("CARGO_PKG_LICENSE")),
        )
}

/// What a person is told about the first call: it compiles the plugin.
const FIRST_CALL: &str = "The first call after each build compiles the plugin (a few seconds \
in Rust, 10 to 20 s in Python or JavaScript; a terminal shows its progress) and keeps the \
code for the calls after it; `toolhost inspect` on the .wasm compiles it ahead.";

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
    check_name(name, lang)?;
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
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{tool}}", &tool)
            .replace("{{file}}", &file)
    };
    let (files, build, wasm): (Vec<(&str, String)>, &str, String) = match lang {
        Lang::Rust => (
            [
                (
                    "Cargo.toml",
                    fill(include_str!("templates/rust_Cargo.toml")),
                ),
                ("src/lib.rs", fill(include_str!("templates/rust_lib.rs"))),
                ("sdk/Cargo.toml", sdk_manifest()),
                ("wit/plugin.wit", WIT.to_owned()),
            ]
            .into_iter()
            .chain(SDK_FILES.iter().map(|(p, t)| (*p, (*t).to_owned())))
            .collect(),
            "cargo build --release --target wasm32-wasip2",
            format!("target/wasm32-wasip2/release/{file}.wasm"),
        ),
        Lang::Python => (
            vec![
                ("app.py", fill(include_str!("templates/python_app.py"))),
                ("wit/plugin.wit", WIT.to_owned()),
                ("wit/settings.wit", SETTINGS_WIT.to_owned()),
                ("wit/deps/config/store.wit", WASI_CONFIG_WIT.to_owned()),
            ],
            "componentize-py -d wit -w tool-plugin-with-settings componentize app -o FILE.wasm",
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
                ("wit/settings.wit", SETTINGS_WIT.to_owned()),
                ("wit/deps/config/store.wit", WASI_CONFIG_WIT.to_owned()),
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
    outln!("{FIRST_CALL}")?;
    Ok(())
}

/// The naming rule, as a refusal states it (and `--help`, through
/// [`NAME_HELP`]).
macro_rules! name_rule {
    () => {
        "lowercase ASCII letters, digits, `-` and `_`, starting with a letter, at most 64 \
         characters; in Rust, not a Rust keyword once `-` is `_`. The tool and the .wasm file \
         take the name with `_` for `-` (`word-count` makes the tool `word_count`)"
    };
}

/// The help of `toolhost new`'s NAME: the whole naming rule.
pub(crate) const NAME_HELP: &str = concat!("The plugin's name: ", name_rule!(), ".");

/// Rust's keywords, strict and reserved: the Rust template names a
/// function after the tool.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// A name that is a valid package, crate and (with `_` for `-`) tool name,
/// and in Rust a valid function name.
fn check_name(name: &str, lang: Lang) -> Result<(), Failure> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && !(lang == Lang::Rust && RUST_KEYWORDS.contains(&name.replace('-', "_").as_str()));
    if ok {
        Ok(())
    } else {
        Err(Failure(format!(
            "`{name}` cannot name a plugin: {}",
            name_rule!()
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
    let schema = match lang {
        Lang::Rust => "; src/lib.rs has their schema",
        _ => "",
    };
    t.push_str(&format!(
        "# What the plugin reads through wasi:config/store{schema}.\n\
         [plugins.{name}.settings]\nprefix = \"\"\n"
    ));
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
            " in Rust, with toolhost's SDK (in `sdk/`, with the interfaces it is\nbuilt against in `wit/`: the ones of the toolhost that made this project). Needs\nthe `wasm32-wasip2` target (`rustup target add wasm32-wasip2`)."
        ),
        Lang::Python => writeln!(
            r,
            " in Python. Needs componentize-py\n(`pip install componentize-py==0.25.1`). `wit/` holds the interfaces it is built\nagainst (`toolhost:plugin@0.3.0`)."
        ),
        Lang::Javascript => writeln!(
            r,
            " in JavaScript. Needs Node 20 or later; `npm install` fetches\nComponentizeJS. `wit/` holds the interfaces it is built against\n(`toolhost:plugin@0.3.0`)."
        ),
    };
    let _ = write!(
        r,
        "\nBuild:\n\n```sh\n{build}\n```\n\nThe component is `{wasm}`. Check it and call it:\n\n```sh\ntoolhost inspect {wasm}\ntoolhost call {tool} '{{\"text\": \"hello\"}}'\n```\n\n{FIRST_CALL}\n\nSee toolhost's sdk/README.md for the conventions of each language.\n"
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["words", "word-count", "a1_b", &"a".repeat(64)] {
            assert!(check_name(good, Lang::Rust).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Words",
            "1st",
            "a b",
            "../x",
            "é",
            "-a",
            &"a".repeat(65),
        ] {
            for lang in [Lang::Rust, Lang::Python, Lang::Javascript] {
                assert!(check_name(bad, lang).is_err(), "{bad}");
            }
        }
        // The Rust template names a function after the tool.
        for keyword in ["fn", "type", "self", "r-ef"] {
            let refused = check_name(keyword, Lang::Rust).is_err();
            assert_eq!(refused, keyword != "r-ef", "{keyword}");
            assert!(check_name(keyword, Lang::Python).is_ok(), "{keyword}");
        }
    }

    #[test]
    fn sdk_files_are_all_embedded() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
        let mut on_disk = Vec::new();
        let mut dirs = vec![sdk.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    // The SDK's own tests stay out of a project.
                    if path != sdk.join("tests") {
                        dirs.push(path);
                    }
                } else {
                    let rel = path.strip_prefix(&sdk).unwrap().to_str().unwrap();
                    on_disk.push(format!("sdk/{rel}"));
                }
            }
        }
        let mut embedded: Vec<String> = SDK_FILES.iter().map(|(p, _)| (*p).to_owned()).collect();
        embedded.push("sdk/Cargo.toml".into());
        on_disk.sort();
        embedded.sort();
        assert_eq!(on_disk, embedded);
        for (path, text) in SDK_FILES {
            let disk = fs::read_to_string(sdk.join(path.strip_prefix("sdk/").unwrap())).unwrap();
            assert_eq!(&disk, text, "{path}");
        }
    }

    #[test]
    fn the_sdk_manifest_stands_alone() {
        let manifest: toml::Table = sdk_manifest().parse().unwrap();
        let package = manifest["package"].as_table().unwrap();
        for key in ["version", "edition", "license", "rust-version"] {
            assert!(package[key].is_str(), "{key}: {:?}", package[key]);
        }
        let workspace: toml::Table =
            fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
                .unwrap()
                .parse()
                .unwrap();
        for key in ["version", "edition", "license", "rust-version"] {
            assert_eq!(
                package[key], workspace["workspace"]["package"][key],
                "{key}"
            );
        }
        assert!(!sdk_manifest().contains("workspace"), "{}", sdk_manifest());
    }
}
