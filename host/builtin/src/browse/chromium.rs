//! [`LocalBrowser`]: one headless Chromium per call, with a fresh profile,
//! driven over a DevTools pipe, with all its traffic through a
//! [`PolicyProxy`].

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use async_trait::async_trait;
use base64::Engine as _;
use reqwest::Url;
use serde_json::{Value, json};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::cdp::Cdp;
use super::proxy::PolicyProxy;
use super::socket_filter::SocketFilter;
use super::{BrowseRequest, BrowseResult, BrowserOps};
use crate::process::{GroupGuard, MINIMAL_PATH, confine, find_program};
use toolhost_core::error::ToolError;
use toolhost_net::NetPolicy;

/// Flags every launch uses: headless, no first-run or background traffic,
/// no QUIC (UDP would not go through the proxy). (Chromium's crash handler
/// starts in a group of its own; it exits by itself when the browser it
/// watches is gone.)
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--no-zygote",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--window-size=1280,800",
    "--remote-debugging-pipe",
];

/// Flags that keep WebRTC off UDP outside the proxy. They only make the
/// browser try less: rule C10 (no UDP leaves the browser) is the kernel's,
/// by the [`SocketFilter`]. Chromium 156 ignores the `--force-…` form (a
/// page's STUN, TURN and ICE checks went out over UDP with it alone); the
/// plain form stops them; the `--force-…` form is kept for older builds.
const WEBRTC_FLAGS: &[&str] = &[
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--enforce-webrtc-ip-permission-check",
];

/// Browses with a local headless Chromium.
///
/// Each call starts its own browser in its own process group with a fresh
/// temporary profile, and kills the group when it ends (or is dropped).
/// The browser reaches the network only through a proxy that checks every
/// destination with the [`NetPolicy`]; the page's URL is checked before the
/// browser starts.
#[derive(Debug, Clone)]
pub struct LocalBrowser {
    policy: NetPolicy,
    program: Option<PathBuf>,
    /// Whether [`WEBRTC_FLAGS`] are passed (always, but in tests that show
    /// the kernel's filter holding without them).
    webrtc_flags: bool,
}

impl LocalBrowser {
    /// A browser reaching what `policy` grants; the Chromium program is
    /// looked up on `PATH` (`chromium`, `chromium-browser`, `google-chrome`)
    /// when a call needs it.
    pub fn new(policy: NetPolicy) -> Self {
        Self {
            policy,
            program: None,
            webrtc_flags: true,
        }
    }

    /// Leaves out [`WEBRTC_FLAGS`], as a browser that ignored them would.
    #[cfg(test)]
    pub(super) fn without_webrtc_flags(mut self) -> Self {
        self.webrtc_flags = false;
        self
    }

    /// Uses `program` as the Chromium executable.
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    fn find(&self) -> Result<PathBuf, ToolError> {
        self.program
            .clone()
            .or_else(|| {
                find_program(
                    &[
                        "chromium",
                        "chromium-browser",
                        "google-chrome",
                        "google-chrome-stable",
                    ],
                    None,
                )
            })
            .ok_or_else(|| {
                ToolError::failed(
                    "no Chromium found on PATH (chromium, chromium-browser or google-chrome); \
                     install it (`make setup` does)",
                )
            })
    }
}

/// A launched browser: the child, its DevTools connection, and the guard
/// that kills its process group.
struct Launched {
    child: Child,
    cdp: Cdp,
    guard: GroupGuard,
}

/// `program` set up as every browser starts: a cleared environment, no
/// standard streams, a process group of its own (killed on drop) and the
/// [`SocketFilter`] (rule C10), under which any later `pre_exec` step, the
/// program and every process it starts run. Spawning fails if the filter
/// cannot be installed.
pub(super) fn confined(program: &Path, filter: &SocketFilter) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", MINIMAL_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    confine(&mut cmd, None);
    filter.install(&mut cmd);
    cmd
}

/// What a launch is made of.
struct Launch<'a> {
    program: &'a Path,
    filter: &'a SocketFilter,
    webrtc_flags: bool,
    profile: &'a Path,
    proxy: &'a PolicyProxy,
}

fn launch(l: Launch<'_>) -> std::io::Result<Launched> {
    let Launch {
        program,
        filter,
        webrtc_flags,
        profile,
        proxy,
    } = l;
    let (cmd_read, cmd_write) = std::io::pipe()?;
    let (resp_read, resp_write) = std::io::pipe()?;
    let mut cmd = confined(program, filter);
    cmd.args(FLAGS)
        .args(if webrtc_flags { WEBRTC_FLAGS } else { &[] })
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://{}", proxy.addr()))
        .arg("--proxy-bypass-list=<-loopback>")
        .arg("about:blank")
        .env("HOME", profile);
    let (r, w) = (cmd_read.as_raw_fd(), resp_write.as_raw_fd());
    // SAFETY: only async-signal-safe calls (fcntl, dup2). The ends are
    // first copied above 10 so that placing them at 3 and 4 cannot
    // overwrite one with the other; dup2 clears close-on-exec on the copies.
    unsafe {
        cmd.pre_exec(move || {
            let (r, w) = (
                libc::fcntl(r, libc::F_DUPFD, 10),
                libc::fcntl(w, libc::F_DUPFD, 10),
            );
            if r < 0 || w < 0 || libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop((cmd_read, resp_write));
    let guard = GroupGuard::new(child.id());
    let tx = pipe::Sender::from_owned_fd(OwnedFd::from(cmd_write))?;
    let rx = pipe::Receiver::from_owned_fd(OwnedFd::from(resp_read))?;
    Ok(Launched {
        child,
        cdp: Cdp::new(tx, rx),
        guard,
    })
}

async fn eval(cdp: &mut Cdp, session: &str, expression: &str) -> Result<String, ToolError> {
    let r = cdp
        .call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )
        .await?;
    Ok(r["result"]["value"].as_str().unwrap_or_default().to_owned())
}

/// Opens `url` in a new tab and reads what it rendered.
async fn session(cdp: &mut Cdp, req: &BrowseRequest) -> Result<BrowseResult, ToolError> {
    let target = cdp
        .call(None, "Target.createTarget", json!({"url": "about:blank"}))
        .await?;
    let target_id = target["targetId"].as_str().unwrap_or_default();
    let attached = cdp
        .call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        )
        .await?;
    let s = attached["sessionId"]
        .as_str()
        .ok_or_else(|| ToolError::failed("the browser gave no DevTools session"))?
        .to_owned();
    cdp.call(Some(&s), "Page.enable", json!({})).await?;
    cdp.clear_events();
    let nav = cdp
        .call(Some(&s), "Page.navigate", json!({"url": req.url}))
        .await?;
    if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
        return Err(ToolError::failed(format!(
            "could not load {}: {err}",
            req.url
        )));
    }
    cdp.event(&s, "Page.loadEventFired").await?;
    if !req.settle.is_zero() {
        tokio::time::sleep(req.settle).await;
    }
    let title = eval(cdp, &s, "document.title").await?;
    let text = eval(
        cdp,
        &s,
        "document.body ? document.body.innerText : document.documentElement.innerText",
    )
    .await?;
    let final_url = eval(cdp, &s, "location.href").await?;
    let screenshot = if req.screenshot {
        let shot = cdp
            .call(Some(&s), "Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let data = shot["data"].as_str().unwrap_or_default();
        Some(
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| ToolError::failed(format!("bad screenshot data: {e}")))?,
        )
    } else {
        None
    };
    let _ = cdp.call(None, "Browser.close", json!({})).await;
    Ok(BrowseResult {
        final_url,
        title,
        text,
        screenshot,
        blocked: Vec::new(),
    })
}

#[async_trait]
impl BrowserOps for LocalBrowser {
    async fn browse(&self, req: BrowseRequest) -> Result<BrowseResult, ToolError> {
        let url = Url::parse(&req.url).map_err(|e| {
            ToolError::invalid_arguments("/url", format!("`{}` is not a URL: {e}", req.url))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::invalid_arguments(
                "/url",
                format!("`{url}`: only http and https pages can be browsed"),
            ));
        }
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        self.policy
            .resolve(url.scheme(), host, port)
            .await
            .map_err(|e| ToolError::failed(format!("refused by the network policy: {e}")))?;
        let program = self.find()?;
        // Fail closed: no filter, no browser.
        let filter = SocketFilter::new().map_err(|e| ToolError::failed(e.to_string()))?;
        let proxy = PolicyProxy::start(self.policy.clone())
            .await
            .map_err(|e| ToolError::failed(format!("cannot start the browser's proxy: {e}")))?;
        let profile = tempfile::tempdir()
            .map_err(|e| ToolError::failed(format!("cannot create a browser profile: {e}")))?;
        let mut b = launch(Launch {
            program: &program,
            filter: &filter,
            webrtc_flags: self.webrtc_flags,
            profile: profile.path(),
            proxy: &proxy,
        })
        .map_err(|e| {
            ToolError::failed(format!(
                "cannot start `{}` under its socket filter (it does not run without it): {e}",
                program.display()
            ))
        })?;
        let started = tokio::time::Instant::now();
        let outcome = tokio::time::timeout(req.timeout, session(&mut b.cdp, &req)).await;
        b.guard.kill();
        let _ = b.child.wait().await;
        b.guard.disarm();
        let mut result = outcome.map_err(|_| ToolError::timeout(started.elapsed()))??;
        result.blocked = proxy.denied();
        Ok(result)
    }
}
