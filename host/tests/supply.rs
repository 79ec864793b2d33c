//! Rules S1–S4 from the command line, against a registry nobody here
//! wrote: the CNCF distribution registry (Debian's `docker-registry`,
//! which `make setup` installs) started on 127.0.0.1. Components reach it
//! with `toolhost push` and are signed with `toolhost sign`; what the
//! ecosystem's own tools make is held to in `tests/fixtures/interop`, made
//! with `wkg oci push` and the `wasmsign2` command line by its `remake.sh`:
//! a component signed by that command line, and a manifest and config as
//! wkg writes them.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{initialize_body, root, run, texts, toolhost, wasm};
use sha2::Digest as _;

/// `docker-registry serve` on a free loopback port, storing in a
/// temporary directory; stopped on drop.
struct LocalRegistry {
    child: Option<Child>,
    host: String,
    dir: tempfile::TempDir,
}

impl LocalRegistry {
    fn start() -> Self {
        Self::start_with(None)
    }

    /// With `user` and `password`, every request needs them (htpasswd).
    fn start_with(login: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {host}\n",
            dir.path().join("data").display()
        );
        if let Some((user, password)) = login {
            let file = dir.path().join("htpasswd");
            let hash = bcrypt::hash(password, 5).unwrap();
            std::fs::write(&file, format!("{user}:{hash}\n")).unwrap();
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: test\n    path: {}\n",
                file.display()
            ));
        }
        std::fs::write(&config, yaml).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start docker-registry ({e}): run `make setup` to install it")
            });
        let registry = Self {
            child: Some(child),
            host,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ![200, 401].contains(&http(&registry.host, "GET", "/v2/", &[], &[]).0) {
            assert!(
                Instant::now() < deadline,
                "docker-registry did not answer on {}",
                registry.host
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// `oci://HOST/REPO:TAG` on this registry.
    fn reference(&self, repo_tag: &str) -> String {
        format!("oci://{}/{repo_tag}", self.host)
    }

    /// Pushes `file` as `repo_tag` with `toolhost push`; returns the
    /// manifest digest it printed.
    fn push(&self, repo_tag: &str, file: &Path) -> String {
        self.push_as(None, repo_tag, file)
    }

    /// [`push`](Self::push), logged in as `login` (through the
    /// environment).
    fn push_as(&self, login: Option<(&str, &str)>, repo_tag: &str, file: &Path) -> String {
        let mut push = toolhost();
        push.env_remove("TOOLHOST_REGISTRY_USERNAME")
            .env_remove("TOOLHOST_REGISTRY_PASSWORD")
            .env("DOCKER_CONFIG", self.dir.path().join("no-docker-config"));
        if let Some((user, password)) = login {
            push.env("TOOLHOST_REGISTRY_USERNAME", user)
                .env("TOOLHOST_REGISTRY_PASSWORD", password);
        }
        push.arg("push").arg(file).arg(self.reference(repo_tag));
        let stdout = succeeds(&push.output().unwrap());
        manifest_digest(&stdout)
    }

    /// A blob's file in the registry's storage.
    fn blob_file(&self, digest_hex: &str) -> PathBuf {
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&digest_hex[..2])
            .join(digest_hex)
            .join("data")
    }

    /// Puts an artifact by hand through the distribution API: blobs, then
    /// a manifest with `config_type` and `layers`. For artifacts no wasm
    /// tool would push.
    fn put_artifact(&self, repo: &str, tag: &str, config_type: &str, layers: &[(&str, &[u8])]) {
        let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
        let mut descriptors = Vec::new();
        for (media_type, bytes) in std::iter::once(&(config_type, &config[..])).chain(layers) {
            let digest = self.put_blob(repo, bytes);
            descriptors.push(serde_json::json!({
                "mediaType": media_type, "digest": digest, "size": bytes.len()
            }));
        }
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": descriptors[0],
            "layers": descriptors[1..],
        });
        self.put_manifest(repo, tag, manifest.to_string().as_bytes());
    }

    /// Uploads one blob to `repo`; returns its digest.
    fn put_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = digest_of(bytes);
        let (status, location) = http(
            &self.host,
            "POST",
            &format!("/v2/{repo}/blobs/uploads/"),
            &[],
            &[],
        );
        assert_eq!(status, 202);
        let location = location.expect("an upload location");
        let path = location
            .strip_prefix(&format!("http://{}", self.host))
            .unwrap_or(&location)
            .to_owned();
        let sep = if path.contains('?') { '&' } else { '?' };
        let (status, _) = http(
            &self.host,
            "PUT",
            &format!("{path}{sep}digest={digest}"),
            &[("Content-Type", "application/octet-stream")],
            bytes,
        );
        assert_eq!(status, 201, "blob upload");
        digest
    }

    /// Puts `manifest`, byte for byte, as `repo:tag`.
    fn put_manifest(&self, repo: &str, tag: &str, manifest: &[u8]) {
        let (status, _) = http(
            &self.host,
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            manifest,
        );
        assert_eq!(status, 201, "manifest upload");
    }

    /// The bytes the registry serves at `path` (under `/v2/`), asking for
    /// an OCI image manifest where that matters.
    fn get(&self, path: &str) -> Vec<u8> {
        let (status, _, body) = exchange(
            &self.host,
            "GET",
            &format!("/v2/{path}"),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            &[],
        );
        assert_eq!(status, 200, "GET /v2/{path}");
        body
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One HTTP/1.1 request; the status and the Location header.
fn http(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Option<String>) {
    let (status, location, _) = exchange(host, method, path, headers, body);
    (status, location)
}

/// One HTTP/1.1 request; the status, the Location header and the body.
fn exchange(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Option<String>, Vec<u8>) {
    let Ok(mut stream) = TcpStream::connect(host) else {
        return (0, None, Vec::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut all = vec![("Host", host), ("Connection", "close")];
    all.extend_from_slice(headers);
    let request = message_head(&format!("{method} {path} HTTP/1.1"), &all, body.len());
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(response.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&response[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = head.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("location")
            .then(|| v.trim().to_owned())
    });
    (status, location, response[split..].to_vec())
}

/// An HTTP/1.1 message's head: the start line, `headers`, the length.
fn message_head(start: &str, headers: &[(&str, &str)], length: usize) -> String {
    let mut head = format!("{start}\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
    head
}

fn sha256_file(path: &Path) -> String {
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// A project directory: `toolhost.toml` with its own cache (and so its own
/// plugin store) and `plugins` appended.
struct Project {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Project {
    fn new(plugins: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let project = Self { dir, path };
        project.write(plugins);
        project
    }

    /// Rewrites the configuration with `plugins`, keeping the cache.
    fn write(&self, plugins: &str) {
        std::fs::write(
            &self.path,
            format!(
                "[host]\ncache_dir = \"{}\"\napprovals = \"deny\"\n\n{plugins}",
                self.dir.path().join("cache").display()
            ),
        )
        .unwrap();
    }

    fn config(&self) -> &str {
        self.path.to_str().unwrap()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `toolhost ARGS -c THIS`.
    fn run(&self, args: &[&str]) -> Output {
        let mut all = args.to_vec();
        all.extend(["-c", self.config()]);
        run(&all)
    }

    /// `toolhost call [--locked] -c THIS calc '{"expression": "6*7"}'`.
    fn call_calc(&self, locked: bool) -> Output {
        let mut args = vec!["call"];
        if locked {
            args.push("--locked");
        }
        args.extend(["calc", r#"{"expression": "6*7"}"#]);
        self.run(&args)
    }
}

fn succeeds(out: &Output) -> String {
    let (stdout, stderr) = texts(out);
    assert!(out.status.success(), "failed:\n{stdout}\n{stderr}");
    stdout
}

fn fails(out: &Output) -> String {
    let (stdout, stderr) = texts(out);
    assert!(!out.status.success(), "succeeded:\n{stdout}\n{stderr}");
    stderr
}

#[test]
fn s1_a_pushed_component_is_pulled_checked_and_called() {
    let registry = LocalRegistry::start();
    let manifest = registry.push("tools/calc:1.0", &wasm("calc"));
    let reference = registry.reference("tools/calc:1.0");
    let project = Project::new(&format!("[plugins.calc]\nwasm = \"{reference}\"\n"));

    let stdout = succeeds(&project.run(&["pull", &reference]));
    let wasm_digest = sha256_file(&wasm("calc"));
    assert!(stdout.contains(&format!("manifest {manifest}")), "{stdout}");
    assert!(
        stdout.contains(&format!("wasm     sha256:{wasm_digest}")),
        "{stdout}"
    );
    let stored = project.file("cache/store/blobs/sha256").join(&wasm_digest);
    assert_eq!(sha256_file(&stored), wasm_digest);

    assert!(succeeds(&project.call_calc(false)).contains("42"));
    let report = succeeds(&project.run(&["check"]));
    for line in [
        format!("plugin calc ({reference})"),
        format!("digest: sha256:{wasm_digest}"),
        format!("manifest: {manifest} (read from the plugin store)"),
        "lock: no toolhost.lock".to_owned(),
        "registry: the tag still names it".to_owned(),
        "signature: not required".to_owned(),
    ] {
        assert!(report.contains(&line), "no `{line}` in:\n{report}");
    }

    // Without a pull first, the first run pulls.
    let fresh = Project::new(&format!("[plugins.calc]\nwasm = \"{reference}\"\n"));
    assert!(succeeds(&fresh.call_calc(false)).contains("42"));
    // A digest reference is pulled as pinned.
    let pinned = format!("oci://{}/tools/calc@{manifest}", registry.host);
    let fresh = Project::new(&format!("[plugins.calc]\nwasm = \"{pinned}\"\n"));
    assert!(succeeds(&fresh.call_calc(false)).contains("42"));
}

#[test]
fn s1_a_tampered_blob_is_refused_and_not_stored() {
    let registry = LocalRegistry::start();
    registry.push("tools/calc:1.0", &wasm("calc"));
    let digest = sha256_file(&wasm("calc"));
    let blob = registry.blob_file(&digest);
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&blob, &bytes).unwrap();

    let reference = registry.reference("tools/calc:1.0");
    let project = Project::new(&format!("[plugins.calc]\nwasm = \"{reference}\"\n"));
    let stderr = fails(&project.call_calc(false));
    assert!(
        stderr.contains(&format!("cannot pull {reference}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("component does not match its digest"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("sha256:{digest}")), "{stderr}");
    assert!(
        !project
            .file("cache/store/blobs/sha256")
            .join(&digest)
            .exists()
    );
    let stderr = fails(&project.run(&["pull", &reference]));
    assert!(stderr.contains("does not match its digest"), "{stderr}");
}

#[test]
fn s1_what_cannot_be_pulled_is_named_with_the_reason() {
    let registry = LocalRegistry::start();
    registry.put_artifact(
        "tools/image",
        "1",
        "application/vnd.oci.image.config.v1+json",
        &[("application/vnd.oci.image.layer.v1.tar", b"not wasm")],
    );
    registry.put_artifact(
        "tools/twice",
        "1",
        "application/vnd.wasm.config.v0+json",
        &[
            ("application/wasm", b"\0asm one"),
            ("application/wasm", b"\0asm two"),
        ],
    );
    let cases = [
        (registry.reference("tools/image:1"), "not a wasm artifact"),
        (registry.reference("tools/twice:1"), "exactly one layer"),
        (registry.reference("tools/none:1"), "cannot pull"),
        ("oci://127.0.0.1:1/tools/calc:1".to_owned(), "cannot pull"),
    ];
    for (reference, says) in cases {
        let project = Project::new(&format!("[plugins.calc]\nwasm = \"{reference}\"\n"));
        let stderr = fails(&project.call_calc(false));
        assert!(
            stderr.contains(&format!("cannot pull {reference}")),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{reference}: {stderr}");
        assert!(stderr.contains("plugins.calc.wasm"), "{stderr}");
    }

    for (table, key, says) in [
        (
            "wasm = \"oci://calc:1\"",
            "plugins.calc.wasm",
            "not an OCI reference",
        ),
        (
            "wasm = \"oci://ghcr.io/acme/calc\"",
            "plugins.calc.wasm",
            "neither a tag nor a digest",
        ),
        (
            &format!("wasm = \"{}\"\ninsecure = true", wasm("calc").display()),
            "plugins.calc.insecure",
            "applies only to a plugin pulled from a registry",
        ),
    ] {
        let project = Project::new(&format!("[plugins.calc]\n{table}\n"));
        let stderr = fails(&project.run(&["check"]));
        assert!(stderr.contains(key), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    let stderr = fails(&run(&["pull", "oci://ghcr.io/acme/calc"]));
    assert!(stderr.contains("neither a tag nor a digest"), "{stderr}");
}

#[test]
fn s2_the_lock_pins_every_plugin_and_locked_runs_hold_to_it() {
    let mut registry = LocalRegistry::start();
    let first = registry.push("tools/calc:1.0", &wasm("calc"));
    let reference = registry.reference("tools/calc:1.0");
    let project = Project::new("");
    let local = project.file("template.wasm");
    std::fs::copy(wasm("template"), &local).unwrap();
    let plugins = format!(
        "[plugins.calc]\nwasm = \"{reference}\"\n\n[plugins.template]\nwasm = \"template.wasm\"\n"
    );
    project.write(&plugins);

    let stderr = fails(&project.run(&["check", "--locked"]));
    assert!(stderr.contains("there is no lock file"), "{stderr}");

    let stdout = succeeds(&project.run(&["lock"]));
    assert!(
        stdout.contains(&format!("calc: {reference} sha256:")),
        "{stdout}"
    );
    assert!(
        stdout.contains("template: template.wasm sha256:"),
        "{stdout}"
    );
    let lock = std::fs::read_to_string(project.file("toolhost.lock")).unwrap();
    assert!(lock.contains(&format!("manifest = \"{first}\"")), "{lock}");
    assert!(
        lock.contains(&format!("wasm = \"sha256:{}\"", sha256_file(&local))),
        "{lock}"
    );
    let report = succeeds(&project.run(&["check", "--locked"]));
    assert_eq!(report.matches("lock: locked").count(), 2, "{report}");
    assert!(
        report.contains("registry: the tag still names it"),
        "{report}"
    );

    // The tag is moved to other content.
    let moved = registry.push("tools/calc:1.0", &wasm("runaway"));
    assert_ne!(moved, first);
    let stderr = fails(&project.run(&["check", "--locked"]));
    assert!(
        stderr.contains(&format!("now resolves to manifest {moved}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("toolhost.lock says {first}")),
        "{stderr}"
    );
    // A locked run that has the locked component uses it: no network, no
    // surprise.
    assert!(succeeds(&project.call_calc(true)).contains("42"));
    // A locked run without it in the store pulls the tag, and refuses what
    // it names now.
    let elsewhere = Project::new(&plugins);
    std::fs::copy(&local, elsewhere.file("template.wasm")).unwrap();
    std::fs::copy(
        project.file("toolhost.lock"),
        elsewhere.file("toolhost.lock"),
    )
    .unwrap();
    let stderr = fails(&elsewhere.call_calc(true));
    assert!(
        stderr.contains(&format!(
            "{reference} resolves to manifest {moved}, but toolhost.lock says {first}"
        )),
        "{stderr}"
    );

    // The registry goes away: a locked run with everything in the store
    // still starts, and serves.
    registry.stop();
    assert!(succeeds(&project.call_calc(true)).contains("42"));
    let mut serve = toolhost()
        .args(["serve", "--locked", "-c", project.config()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    stdin.write_all(&initialize_body()).unwrap();
    stdin.write_all(b"\n").unwrap();
    let stdout = serve.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    drop(stdin);
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(
        line.contains("\"serverInfo\""),
        "serve --locked did not start: {line}"
    );

    // A file changed since locking is refused by a locked run, not by an
    // unlocked one.
    std::fs::copy(wasm("runaway"), &local).unwrap();
    let stderr = fails(&project.call_calc(true));
    assert!(
        stderr.contains("plugin `template`: template.wasm resolves to component"),
        "{stderr}"
    );
    assert!(stderr.contains("run `toolhost lock`"), "{stderr}");
    assert!(succeeds(&project.call_calc(false)).contains("42"));

    // A plugin the lock does not list.
    std::fs::copy(wasm("template"), &local).unwrap();
    project.write(&format!(
        "{plugins}\n[plugins.extra]\nwasm = \"{}\"\n",
        wasm("template").display()
    ));
    let stderr = fails(&project.call_calc(true));
    assert!(stderr.contains("plugin `extra` is not locked"), "{stderr}");
}

/// The manifest digest `toolhost pull` or `toolhost push` printed.
fn manifest_digest(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("manifest "))
        .unwrap_or_else(|| panic!("no manifest digest in:\n{stdout}"))
        .trim()
        .to_owned()
}

#[test]
fn s3_signatures_made_with_toolhost_are_verified_and_each_failure_named() {
    let project = Project::new("");
    let dir = project.dir.path();
    std::fs::copy(wasm("calc"), dir.join("calc.wasm")).unwrap();
    let in_dir = |args: &[&str]| {
        let out = toolhost().current_dir(dir).args(args).output().unwrap();
        succeeds(&out)
    };
    in_dir(&["keygen", "--out", "release"]);
    in_dir(&["keygen", "--out", "other"]);
    in_dir(&[
        "sign",
        "--key",
        "release.key",
        "calc.wasm",
        "-o",
        "signed.wasm",
    ]);
    in_dir(&[
        "sign",
        "--key",
        "other.key",
        "calc.wasm",
        "-o",
        "by-other.wasm",
    ]);
    let mut flipped = std::fs::read(dir.join("signed.wasm")).unwrap();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x01;
    std::fs::write(dir.join("flipped.wasm"), flipped).unwrap();

    let config = |file: &str, extra: &str| {
        format!(
            "[trust]\nkeys = {{ release = \"release.public\" }}\n{extra}\n\
             [plugins.calc]\nwasm = \"{file}\"\n"
        )
    };
    project.write(&config("signed.wasm", "").replace(
        "wasm = \"signed.wasm\"",
        "wasm = \"signed.wasm\"\nsigned_by = [\"release\"]",
    ));
    assert!(succeeds(&project.call_calc(false)).contains("42"));
    let report = succeeds(&project.run(&["check"]));
    assert!(
        report.contains("signature: signed by `release` (required)"),
        "{report}"
    );

    for (file, says) in [
        (
            "calc.wasm",
            "plugin `calc` is not signed; it must be signed by key `release`",
        ),
        (
            "flipped.wasm",
            "the signature by key `release` does not match its bytes",
        ),
        ("by-other.wasm", "plugin `calc` is signed by an unknown key"),
    ] {
        project.write(&config(file, "require_signatures = true"));
        let stderr = fails(&project.call_calc(false));
        assert!(stderr.contains(says), "{file}: {stderr}");
        assert!(stderr.contains("plugins.calc.signed_by"), "{stderr}");
    }
    // Not required: the state is reported, the plugin runs.
    project.write(&config("by-other.wasm", ""));
    assert!(succeeds(&project.call_calc(false)).contains("42"));
    let report = succeeds(&project.run(&["check"]));
    assert!(
        report.contains("signature: not verified (not required)"),
        "{report}"
    );

    project.write(&config("signed.wasm", "").replace(
        "wasm = \"signed.wasm\"",
        "wasm = \"signed.wasm\"\nsigned_by = [\"nobody\"]",
    ));
    let stderr = fails(&project.run(&["check"]));
    assert!(
        stderr.contains("plugins.calc.signed_by[0]: no key `nobody`"),
        "{stderr}"
    );

    // The signature travels with the component through a registry.
    let registry = LocalRegistry::start();
    registry.push("tools/calc:signed", &dir.join("signed.wasm"));
    let reference = registry.reference("tools/calc:signed");
    project.write(&config(&reference, "require_signatures = true"));
    assert!(succeeds(&project.call_calc(false)).contains("42"));
    registry.push("tools/calc:unsigned", &dir.join("calc.wasm"));
    project.write(&config(
        &registry.reference("tools/calc:unsigned"),
        "require_signatures = true",
    ));
    let stderr = fails(&project.call_calc(false));
    assert!(stderr.contains("is not signed"), "{stderr}");
}

/// A file of `tests/fixtures/interop`, made by its `remake.sh` with
/// `wkg oci push` and the `wasmsign2` command line.
fn interop(name: &str) -> PathBuf {
    root().join("tests/fixtures/interop").join(name)
}

/// A signed component without its signature: the bytes after its first
/// section, which a wasmsign2 signature is.
fn without_signature(signed: &[u8]) -> Vec<u8> {
    assert_eq!(signed[8], 0, "the first section is not a custom section");
    let (mut size, mut shift, mut at) = (0usize, 0, 9);
    loop {
        let byte = signed[at];
        at += 1;
        size |= usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte < 0x80 {
            break;
        }
    }
    let mut out = signed[..8].to_vec();
    out.extend(&signed[at + size..]);
    out
}

#[test]
fn s3_a_component_signed_by_the_wasmsign2_command_line_is_verified_and_signed_alike() {
    let project = Project::new("");
    let dir = project.dir.path();
    for file in ["calc.signed.wasm", "interop.public", "interop.key"] {
        std::fs::copy(interop(file), dir.join(file)).unwrap();
    }
    let config = |file: &str| {
        format!(
            "[trust]\nkeys = {{ interop = \"interop.public\" }}\nrequire_signatures = true\n\n\
             [plugins.calc]\nwasm = \"{file}\"\nsigned_by = [\"interop\"]\n"
        )
    };
    project.write(&config("calc.signed.wasm"));
    assert!(succeeds(&project.call_calc(false)).contains("42"));
    let report = succeeds(&project.run(&["check"]));
    assert!(
        report.contains("signature: signed by `interop` (required)"),
        "{report}"
    );
    // One byte changed after the command line signed it.
    let signed = std::fs::read(dir.join("calc.signed.wasm")).unwrap();
    let mut flipped = signed.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    std::fs::write(dir.join("flipped.wasm"), &flipped).unwrap();
    project.write(&config("flipped.wasm"));
    let stderr = fails(&project.call_calc(false));
    assert!(
        stderr.contains("the signature by key `interop` does not match its bytes"),
        "{stderr}"
    );

    // `toolhost sign` with the command line's key over the same component
    // makes the very same bytes (ed25519 is deterministic): the format,
    // the key identifier and the section's place all agree.
    std::fs::write(dir.join("calc.wasm"), without_signature(&signed)).unwrap();
    let stdout = succeeds(
        &toolhost()
            .current_dir(dir)
            .args(["sign", "--key", "interop.key", "calc.wasm"])
            .args(["-o", "resigned.wasm"])
            .output()
            .unwrap(),
    );
    assert!(
        stdout.contains("signed calc.wasm into resigned.wasm"),
        "{stdout}"
    );
    assert!(
        std::fs::read(dir.join("resigned.wasm")).unwrap() == signed,
        "toolhost's signature differs from the wasmsign2 command line's"
    );
}

#[test]
fn s3_toolhost_keys_and_signatures_are_wasmsign2s() {
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |args: &[&str]| {
        toolhost()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let stdout = succeeds(&in_dir(&["keygen", "--out", "release"]));
    let key_id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("key id"))
        .unwrap_or_else(|| panic!("no key id in:\n{stdout}"))
        .trim()
        .to_owned();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("release.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the secret key is mode {mode:o}");
    }
    // Never over a key that exists: the old one is kept as it was.
    let secret = std::fs::read(dir.path().join("release.key")).unwrap();
    let stderr = fails(&in_dir(&["keygen", "--out", "release"]));
    assert!(stderr.contains("release.key already exists"), "{stderr}");
    assert_eq!(
        std::fs::read(dir.path().join("release.key")).unwrap(),
        secret
    );

    std::fs::copy(wasm("calc"), dir.path().join("calc.wasm")).unwrap();
    succeeds(&in_dir(&[
        "sign",
        "--key",
        "release.key",
        "calc.wasm",
        "-o",
        "calc.signed.wasm",
    ]));
    let signed = std::fs::read(dir.path().join("calc.signed.wasm")).unwrap();
    // wasmsign2's own verifier, with the public key file as written.
    let public = wasmsign2::PublicKey::from_file(dir.path().join("release.public")).unwrap();
    public
        .verify(&mut std::io::Cursor::new(&signed), None)
        .expect("wasmsign2 refuses toolhost's signature");
    let info =
        wasmsign2::signature_info_from_reader(&mut std::io::Cursor::new(&signed), None).unwrap();
    let ids: Vec<String> = info.key_ids().iter().map(hex::encode).collect();
    assert_eq!(ids, [key_id]);
    // And refuses it once a byte is changed.
    let mut flipped = signed.clone();
    *flipped.last_mut().unwrap() ^= 0x01;
    assert!(
        public
            .verify(&mut std::io::Cursor::new(&flipped), None)
            .is_err()
    );
    assert_eq!(
        without_signature(&signed),
        std::fs::read(wasm("calc")).unwrap(),
        "signing changed the component"
    );

    // What cannot be signed, or signed with, is named.
    for (args, says) in [
        (
            vec!["sign", "--key", "missing.key", "calc.wasm", "-o", "x.wasm"],
            "cannot read missing.key",
        ),
        (
            vec!["sign", "--key", "calc.wasm", "calc.wasm", "-o", "x.wasm"],
            "calc.wasm is not an ed25519 secret key",
        ),
        (
            vec![
                "sign",
                "--key",
                "release.key",
                "release.public",
                "-o",
                "x.wasm",
            ],
            "release.public is not a wasm component",
        ),
        (
            vec![
                "sign",
                "--key",
                "release.key",
                "calc.signed.wasm",
                "-o",
                "x.wasm",
            ],
            "calc.signed.wasm is already signed by this key",
        ),
    ] {
        let stderr = fails(&in_dir(&args));
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!dir.path().join("x.wasm").exists(), "{args:?}");
    }
}

#[test]
fn s1_an_artifact_as_wkg_writes_it_is_pulled_and_runs() {
    let registry = LocalRegistry::start();
    let manifest = std::fs::read(interop("wkg-manifest.json")).unwrap();
    let config = std::fs::read(interop("wkg-config.json")).unwrap();
    let component = std::fs::read(interop("calc.signed.wasm")).unwrap();
    registry.put_blob("interop/calc", &config);
    registry.put_blob("interop/calc", &component);
    registry.put_manifest("interop/calc", "1.0", &manifest);

    let reference = registry.reference("interop/calc:1.0");
    let project = Project::new("");
    std::fs::copy(interop("interop.public"), project.file("interop.public")).unwrap();
    project.write(&format!(
        "[trust]\nkeys = {{ interop = \"interop.public\" }}\nrequire_signatures = true\n\n\
         [plugins.calc]\nwasm = \"{reference}\"\n"
    ));
    let stdout = succeeds(&project.run(&["pull", &reference]));
    assert_eq!(manifest_digest(&stdout), digest_of(&manifest));
    assert!(
        stdout.contains(&format!("wasm     {}", digest_of(&component))),
        "{stdout}"
    );
    assert!(succeeds(&project.call_calc(false)).contains("42"));
    succeeds(&project.run(&["lock"]));
    assert!(succeeds(&project.call_calc(true)).contains("42"));
}

#[test]
fn s1_a_push_writes_what_wkg_writes_and_pulls_back() {
    let registry = LocalRegistry::start();
    let project = Project::new("");
    // The file wkg pushed, under the same name (the layer's title).
    let file = project.file("calc.signed.wasm");
    std::fs::copy(interop("calc.signed.wasm"), &file).unwrap();
    let component = std::fs::read(&file).unwrap();
    let out = toolhost()
        .arg("push")
        .arg(&file)
        .arg(registry.reference("interop/calc:1.0"))
        .env("DOCKER_CONFIG", project.file("no-docker-config"))
        .output()
        .unwrap();
    let stdout = succeeds(&out);
    let digest = manifest_digest(&stdout);
    assert!(
        stdout.contains(&format!(
            "pinned   oci://{}/interop/calc@{digest}",
            registry.host
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("wasm     {}", digest_of(&component))),
        "{stdout}"
    );

    // The manifest is the registry's, byte for byte, under the digest
    // printed; it is wkg's but for the config it names (whose `created`
    // differs), down to the key order and the layer's title.
    let manifest = registry.get("interop/calc/manifests/1.0");
    assert_eq!(digest_of(&manifest), digest);
    let ours: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    let config = registry.get(&format!(
        "interop/calc/blobs/{}",
        ours["config"]["digest"].as_str().unwrap()
    ));
    let wkg_manifest =
        String::from_utf8(std::fs::read(interop("wkg-manifest.json")).unwrap()).unwrap();
    let wkg: serde_json::Value = serde_json::from_str(&wkg_manifest).unwrap();
    let expected = wkg_manifest
        .replace(
            wkg["config"]["digest"].as_str().unwrap(),
            &digest_of(&config),
        )
        .replace(
            &format!("\"size\":{}", wkg["config"]["size"]),
            &format!("\"size\":{}", config.len()),
        );
    assert_eq!(String::from_utf8(manifest).unwrap(), expected);

    // The config: every field wkg writes, with the same values (the
    // component's imports and exports in the same order), but `created`.
    let mut ours: serde_json::Value = serde_json::from_slice(&config).unwrap();
    let mut wkg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(interop("wkg-config.json")).unwrap()).unwrap();
    let created = ours["created"].take();
    assert!(
        created
            .as_str()
            .is_some_and(|c| c.ends_with('Z') && c.contains('T')),
        "{created}"
    );
    wkg["created"].take();
    assert_eq!(ours, wkg);
    assert!(
        !wkg["component"]["imports"].as_array().unwrap().is_empty(),
        "the fixture's config names no imports"
    );

    // Pulled back: the same manifest, the same bytes, and it runs.
    let reference = registry.reference("interop/calc:1.0");
    project.write(&format!("[plugins.calc]\nwasm = \"{reference}\"\n"));
    let stdout = succeeds(&project.run(&["pull", &reference]));
    assert_eq!(manifest_digest(&stdout), digest);
    let stored = project
        .file("cache/store/blobs/sha256")
        .join(digest_of(&component).trim_start_matches("sha256:"));
    assert!(std::fs::read(stored).unwrap() == component);
    assert!(succeeds(&project.call_calc(false)).contains("42"));
}

#[test]
fn s1_a_push_that_cannot_be_made_names_the_file_the_reference_and_why() {
    let registry = LocalRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let calc = dir.path().join("calc.wasm");
    std::fs::copy(wasm("calc"), &calc).unwrap();
    let text = file("notes.txt", b"not wasm");
    let module = file("core.wasm", b"\0asm\x01\0\0\0");
    let tag = registry.reference("tools/calc:1");
    let pinned = format!(
        "oci://{}/tools/calc@sha256:{}",
        registry.host,
        "0".repeat(64)
    );
    let unreachable = "oci://127.0.0.1:1/tools/calc:1".to_owned();
    let cases: [(&Path, &str, &str); 5] = [
        (&calc, &pinned, "a push names a tag"),
        (&text, &tag, "it is not a wasm component"),
        (&module, &tag, "it is a core wasm module, not a component"),
        (&dir.path().join("missing.wasm"), &tag, "cannot read it"),
        (&calc, &unreachable, "cannot push"),
    ];
    for (path, reference, says) in cases {
        let out = toolhost()
            .arg("push")
            .arg(path)
            .arg(reference)
            .env("DOCKER_CONFIG", dir.path())
            .output()
            .unwrap();
        let stderr = fails(&out);
        assert!(
            stderr.contains(&format!("cannot push {} to {reference}", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{path:?} {reference}: {stderr}");
    }
    // Nothing was tagged by the failures.
    let (status, _) = http(
        &registry.host,
        "GET",
        "/v2/tools/calc/manifests/1",
        &[],
        &[],
    );
    assert_eq!(status, 404);
    let stderr = fails(&run(&["push", "calc.wasm", "oci://ghcr.io/acme/calc"]));
    assert!(stderr.contains("neither a tag nor a digest"), "{stderr}");
}

/// What the scripted registry answers to one path.
#[derive(Clone)]
enum Answer {
    /// Status, content type, body.
    Body(u16, &'static str, Vec<u8>, Vec<(String, String)>),
    /// 200 and bytes without end.
    Endless,
}

/// A registry that answers as a script says, to play one that lies; each
/// connection it takes is counted.
struct ScriptedRegistry {
    host: String,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ScriptedRegistry {
    fn start(script: Vec<(String, Answer)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let script = script.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head);
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let answer = script
                        .iter()
                        .find(|(p, _)| *p == path)
                        .map(|(_, a)| a.clone())
                        .unwrap_or(Answer::Body(
                            404,
                            "application/json",
                            b"{}".to_vec(),
                            vec![],
                        ));
                    match answer {
                        Answer::Body(status, kind, body, headers) => {
                            let mut all = vec![("Content-Type", kind), ("Connection", "close")];
                            all.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                            let text =
                                message_head(&format!("HTTP/1.1 {status} X"), &all, body.len());
                            let _ = stream.write_all(text.as_bytes());
                            let _ = stream.write_all(&body);
                        }
                        Answer::Endless => {
                            let _ = stream.write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n",
                            );
                            let chunk = vec![b' '; 1 << 16];
                            while stream.write_all(&chunk).is_ok() {}
                        }
                    }
                });
            }
        });
        Self { host, hits }
    }
}

fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// A wasm artifact's manifest whose layer is described by `layer`.
fn manifest_with(config: &[u8], layer: serde_json::Value) -> Vec<u8> {
    serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": digest_of(config),
            "size": config.len(),
        },
        "layers": [layer],
    })
    .to_string()
    .into_bytes()
}

#[test]
fn s1_a_lying_registry_cannot_exhaust_memory_nor_send_the_host_elsewhere() {
    let spy = ScriptedRegistry::start(vec![]);
    let config = br#"{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip2","layerDigests":[]}"#.to_vec();
    let json = "application/vnd.oci.image.manifest.v1+json";
    let small = b"\0asm\x0d\0\x01\0".to_vec();
    let layer = |size: u64, digest: &str, urls: Option<Vec<String>>| {
        let mut l = serde_json::json!({
            "mediaType": "application/wasm", "digest": digest, "size": size,
        });
        if let Some(urls) = urls {
            l["urls"] = serde_json::json!(urls);
        }
        l
    };
    let liar = manifest_with(&config, layer(8, &digest_of(&small), None));
    let huge = manifest_with(&config, layer(1 << 40, &digest_of(&small), None));
    let elsewhere = manifest_with(
        &config,
        layer(
            8,
            &digest_of(&small),
            Some(vec![format!("http://{}/stolen", spy.host)]),
        ),
    );
    let announced = manifest_with(&config, layer(8, &digest_of(&small), None));
    let blob = |repo: &str, bytes: &[u8]| {
        (
            format!("/v2/{repo}/blobs/{}", digest_of(bytes)),
            Answer::Body(200, "application/octet-stream", bytes.to_vec(), vec![]),
        )
    };
    let registry = ScriptedRegistry::start(vec![
        (
            "/v2/".into(),
            Answer::Body(200, "application/json", b"{}".to_vec(), vec![]),
        ),
        ("/v2/big/manifests/1".into(), Answer::Endless),
        (
            "/v2/liar/manifests/1".into(),
            Answer::Body(200, json, liar, vec![]),
        ),
        blob("liar", &config),
        (
            format!("/v2/liar/blobs/{}", digest_of(&small)),
            Answer::Endless,
        ),
        (
            "/v2/huge/manifests/1".into(),
            Answer::Body(200, json, huge, vec![]),
        ),
        blob("huge", &config),
        (
            "/v2/elsewhere/manifests/1".into(),
            Answer::Body(200, json, elsewhere, vec![]),
        ),
        blob("elsewhere", &config),
        (
            "/v2/announced/manifests/1".into(),
            Answer::Body(
                200,
                json,
                announced,
                vec![("Docker-Content-Digest".into(), digest_of(b"something else"))],
            ),
        ),
    ]);
    let project = Project::new("");
    for (repo, says) in [
        (
            "big",
            "its manifest is larger than the 4194304 bytes accepted",
        ),
        ("liar", "the registry sent more than the 8 bytes announced"),
        (
            "huge",
            "its component is 1099511627776 bytes, more than the 268435456 accepted",
        ),
        ("elsewhere", "cannot pull"),
        ("announced", "the manifest does not match its digest"),
    ] {
        let reference = format!("oci://{}/{repo}:1", registry.host);
        let started = Instant::now();
        let stderr = fails(&project.run(&["pull", &reference]));
        assert!(
            stderr.contains(&format!("cannot pull {reference}")),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{repo}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{repo} took {:?}",
            started.elapsed()
        );
    }
    assert_eq!(
        spy.hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a descriptor's foreign url was fetched"
    );
}

#[test]
fn s1_credentials_come_from_the_environment_or_the_docker_config_never_the_file() {
    let login = ("alice", "s3cret");
    let registry = LocalRegistry::start_with(Some(login));
    let reference = registry.reference("tools/calc:1.0");
    // A push without credentials, or with wrong ones, is refused by the
    // registry, and said so.
    for login in [None, Some(("alice", "wrong"))] {
        let mut push = toolhost();
        push.env_remove("TOOLHOST_REGISTRY_USERNAME")
            .env_remove("TOOLHOST_REGISTRY_PASSWORD")
            .env("DOCKER_CONFIG", registry.dir.path());
        if let Some((user, password)) = login {
            push.env("TOOLHOST_REGISTRY_USERNAME", user)
                .env("TOOLHOST_REGISTRY_PASSWORD", password);
        }
        let out = push.arg("push").arg(wasm("calc")).arg(&reference).output();
        let stderr = fails(&out.unwrap());
        assert!(stderr.contains(&format!("to {reference}")), "{stderr}");
        assert!(stderr.contains("401"), "{login:?}: {stderr}");
    }
    registry.push_as(Some(login), "tools/calc:1.0", &wasm("calc"));
    let project = Project::new("");
    let docker = project.file("docker");
    std::fs::create_dir(&docker).unwrap();
    let pull = |env: &[(&str, &str)]| {
        let _ = std::fs::remove_dir_all(project.file("cache"));
        let mut cmd = toolhost();
        cmd.args(["pull", &reference, "-c", project.config()])
            .env_remove("TOOLHOST_REGISTRY_USERNAME")
            .env_remove("TOOLHOST_REGISTRY_PASSWORD")
            .env("DOCKER_CONFIG", &docker);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };

    // Anonymous: refused by the registry, and said so.
    let stderr = fails(&pull(&[]));
    assert!(
        stderr.contains(&format!("cannot pull {reference}")),
        "{stderr}"
    );
    assert!(stderr.contains("401"), "{stderr}");
    // A wrong password is refused the same way.
    let stderr = fails(&pull(&[
        ("TOOLHOST_REGISTRY_USERNAME", "alice"),
        ("TOOLHOST_REGISTRY_PASSWORD", "wrong"),
    ]));
    assert!(stderr.contains("401"), "{stderr}");
    // From the environment.
    succeeds(&pull(&[
        ("TOOLHOST_REGISTRY_USERNAME", "alice"),
        ("TOOLHOST_REGISTRY_PASSWORD", "s3cret"),
    ]));
    // From the Docker config file, as `docker login` writes it.
    let auth = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode("alice:s3cret")
    };
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.host
        ),
    )
    .unwrap();
    succeeds(&pull(&[]));
    // The configuration has no place for them.
    project.write(&format!(
        "[plugins.calc]\nwasm = \"{reference}\"\npassword = \"s3cret\"\n"
    ));
    let stderr = fails(&project.run(&["check"]));
    assert!(stderr.contains("unknown field `password`"), "{stderr}");
}

#[test]
fn s4_a_registry_redirect_is_followed_only_to_a_granted_host() {
    let config = br#"{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip2","layerDigests":[]}"#.to_vec();
    let component = b"\0asm\x0d\0\x01\0".to_vec();
    let json = "application/vnd.oci.image.manifest.v1+json";
    let manifest = manifest_with(
        &config,
        serde_json::json!({
            "mediaType": "application/wasm",
            "digest": digest_of(&component),
            "size": component.len(),
        }),
    );
    // Another port on this machine, serving the right bytes: only a
    // grant may send the pull there, and unless it is granted, it must not
    // even be asked.
    let elsewhere = ScriptedRegistry::start(vec![
        (
            "/cdn/component".into(),
            Answer::Body(200, "application/octet-stream", component.clone(), vec![]),
        ),
        (
            "/cdn/manifest".into(),
            Answer::Body(200, json, manifest.clone(), vec![]),
        ),
    ]);
    let redirect = |to: &str| {
        Answer::Body(
            307,
            "text/plain",
            Vec::new(),
            vec![("Location".into(), format!("http://{}{to}", elsewhere.host))],
        )
    };
    let registry = ScriptedRegistry::start(vec![
        (
            "/v2/".into(),
            Answer::Body(200, "application/json", b"{}".to_vec(), vec![]),
        ),
        (
            "/v2/tools/calc/manifests/1".into(),
            Answer::Body(200, json, manifest.clone(), vec![]),
        ),
        (
            format!("/v2/tools/calc/blobs/{}", digest_of(&config)),
            Answer::Body(200, "application/octet-stream", config.clone(), vec![]),
        ),
        (
            format!("/v2/tools/calc/blobs/{}", digest_of(&component)),
            redirect("/cdn/component"),
        ),
        (
            "/v2/tools/moved/manifests/1".into(),
            redirect("/cdn/manifest"),
        ),
    ]);
    let hits = || elsewhere.hits.load(std::sync::atomic::Ordering::SeqCst);
    let project = Project::new("");
    let stored = project
        .file("cache/store/blobs/sha256")
        .join(digest_of(&component).trim_start_matches("sha256:"));

    // Not granted: the blob's and the manifest's redirects both fail the
    // pull, naming where they pointed and why; nothing reached that port.
    for (repo, target) in [("calc", "/cdn/component"), ("moved", "/cdn/manifest")] {
        let reference = format!("oci://{}/tools/{repo}:1", registry.host);
        let stderr = fails(&project.run(&["pull", &reference]));
        for needle in [
            format!("cannot pull {reference}"),
            format!(
                "the registry redirected to http://{}{target}",
                elsewhere.host
            ),
            format!("http://{} is not granted", elsewhere.host),
            "registry_hosts".to_owned(),
        ] {
            assert!(stderr.contains(&needle), "{repo}: {needle}: {stderr}");
        }
        assert_eq!(hits(), 0, "{repo}: the redirect was followed");
        assert!(!stored.exists(), "{repo}");
    }
    // A grant for another port of the same address is no grant for this
    // one, and a plugin's grant does not outlive its table.
    let reference = format!("oci://{}/tools/calc:1", registry.host);
    let port = elsewhere.host.rsplit_once(':').unwrap().1;
    let other_port = if port == "1" { "2" } else { "1" };
    fails(&project.run(&[
        "pull",
        "--registry-host",
        &format!("127.0.0.1:{other_port}"),
        &reference,
    ]));
    assert_eq!(hits(), 0, "a grant for another port was taken for this one");

    // Granted on the command line: followed, and the bytes still checked.
    let stdout = succeeds(&project.run(&[
        "pull",
        "--registry-host",
        &format!("http://{}", elsewhere.host),
        &reference,
    ]));
    assert!(stdout.contains(&digest_of(&component)), "{stdout}");
    assert!(stored.exists());
    assert!(hits() > 0);

    // Granted in the plugin's table, for `toolhost lock` (a fresh store, so
    // that the blob is fetched again).
    let plugin = format!("[plugins.calc]\nwasm = \"{reference}\"\n");
    let project = Project::new(&plugin);
    let stderr = fails(&project.run(&["lock"]));
    assert!(stderr.contains("plugins.calc.wasm"), "{stderr}");
    assert!(stderr.contains("the registry redirected to"), "{stderr}");
    let before = hits();
    project.write(&format!(
        "{plugin}registry_hosts = [\"{}\"]\n",
        elsewhere.host
    ));
    succeeds(&project.run(&["lock"]));
    assert!(hits() > before);
    // The grant means nothing to a plugin from a file, and says so.
    project.write(&format!(
        "[plugins.calc]\nwasm = \"{}\"\nregistry_hosts = [\"example.com\"]\n",
        wasm("calc").display()
    ));
    let stderr = fails(&project.run(&["check"]));
    assert!(stderr.contains("plugins.calc.registry_hosts"), "{stderr}");
    assert!(
        stderr.contains("applies only to a plugin pulled"),
        "{stderr}"
    );
}
