//! Rule C10: no UDP leaves the browser, enforced by the kernel. A child
//! started the way Chromium is cannot open a datagram, raw or packet socket,
//! and a page that asks WebRTC for STUN, TURN and a forged peer gets no
//! datagram out.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::watch;

use super::chromium::confined;
use super::socket_filter::{SocketFilter, probe_report};
use super::{BrowseRequest, BrowserOps as _, LocalBrowser};
use toolhost_net::NetPolicy;

/// Set in the environment of the test binary started as a probe.
const PROBE_ENV: &str = "TOOLHOST_C10_SOCKET_PROBE";
const PROBE_TEST: &str = "c10_probe_reports_datagram_sockets_open_when_unconfined";

fn parse(report: &str) -> HashMap<String, String> {
    report
        .lines()
        .filter_map(|l| l.strip_prefix("C10PROBE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Unconfined, the probe sees the sockets the filter is about open (so a
/// confined probe that reports them refused is the filter's doing). Started
/// by the next test in a confined copy of this binary, it only reports.
#[test]
fn c10_probe_reports_datagram_sockets_open_when_unconfined() {
    let report = probe_report();
    if std::env::var_os(PROBE_ENV).is_some() {
        // On a line of its own, after the harness's `test … ` prefix.
        print!("\n{report}");
        return;
    }
    let seen = parse(&report);
    for name in [
        "inet_dgram",
        "inet_dgram_udp",
        "inet6_dgram",
        "forked_child_inet_dgram",
        "inet_stream",
        "unix_dgram",
    ] {
        assert_eq!(seen.get(name).map(String::as_str), Some("ok"), "{report}");
    }
}

#[tokio::test]
async fn c10_confined_child_cannot_open_datagram_raw_or_packet_sockets() {
    let exe = std::env::current_exe().unwrap();
    let path = module_path!().split_once("::").map_or("", |(_, p)| p);
    let filter = SocketFilter::new().unwrap();
    let out = confined(&exe, &filter)
        .args(["--exact", &format!("{path}::{PROBE_TEST}"), "--nocapture"])
        .args(["--test-threads=1"])
        .env(PROBE_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = parse(&report);
    let eperm = format!("errno {}", libc::EPERM);
    let mut refused = vec![
        "inet_dgram",
        "inet_dgram_nonblock_cloexec",
        "inet_dgram_udp",
        "inet_icmp",
        "inet6_dgram",
        "inet_raw_udp",
        "inet6_raw_udp",
        "inet_seqpacket",
        "inet_legacy_packet",
        "inet_stream_sctp",
        "packet_raw",
        "packet_dgram",
        "vsock_dgram",
        "socketpair_inet_dgram",
        "io_uring_setup",
        "forked_child_inet_dgram",
    ];
    if cfg!(target_arch = "x86_64") {
        refused.push("x32_inet_dgram");
    }
    for name in refused {
        assert_eq!(
            seen.get(name),
            Some(&eperm),
            "{name} was not refused with EPERM:\n{report}"
        );
    }
    for name in [
        "inet_stream",
        "inet_stream_tcp_nonblock_cloexec",
        "inet6_stream",
        "unix_stream",
        "unix_dgram",
        "unix_seqpacket",
        "netlink_route",
        "socketpair_unix_stream",
        "forked_child_unix_dgram",
    ] {
        assert_eq!(
            seen.get(name).map(String::as_str),
            Some("ok"),
            "{name} must keep working:\n{report}"
        );
    }
}

#[tokio::test]
async fn c10_a_launch_whose_filter_cannot_be_installed_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let spawned = confined(Path::new("/bin/sh"), &SocketFilter::unloadable())
        .arg("-c")
        .arg(format!("echo ran > '{}'", marker.display()))
        .spawn();
    let err = match spawned {
        Ok(mut child) => {
            let _ = child.wait().await;
            panic!("a child without its filter was started");
        }
        Err(e) => e,
    };
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    assert!(!marker.exists());
}

/// A page server for the WebRTC test: `/` is the page, whose load event
/// waits on `/hold` until the page's script reports at `/done` (so the call
/// lasts as long as the experiment, not a guessed delay).
struct PageServer {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl PageServer {
    async fn start(page: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let page = Arc::new(page);
        let (done_tx, done_rx) = watch::channel(false);
        let done_tx = Arc::new(done_tx);
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (page, done_tx, done_rx) = (page.clone(), done_tx.clone(), done_rx.clone());
                tokio::spawn(serve(conn, page, done_tx, done_rx));
            }
        });
        Self { port, task }
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut conn: TcpStream,
    page: Arc<String>,
    done_tx: Arc<watch::Sender<bool>>,
    mut done_rx: watch::Receiver<bool>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    // Through the proxy, the request line may carry the absolute URL.
    let target = head.split(' ').nth(1).unwrap_or("/");
    let path = target
        .strip_prefix("http://")
        .and_then(|t| t.find('/').map(|i| &t[i..]))
        .unwrap_or(target);
    let (status, body) = if path == "/" {
        ("200 OK", page.as_str())
    } else if path == "/hold" {
        let _ = tokio::time::timeout(Duration::from_secs(120), done_rx.wait_for(|d| *d)).await;
        ("204 No Content", "")
    } else if path.starts_with("/done") {
        let _ = done_tx.send(true);
        ("204 No Content", "")
    } else {
        ("404 Not Found", "")
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// Every datagram waiting on `socket`, without waiting for more.
fn drain(socket: &UdpSocket) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok((n, _)) = socket.try_recv_from(&mut buf) {
        got.push(buf[..n].to_vec());
    }
    got
}

/// The page: an RTCPeerConnection with a STUN server on `stun` and a TURN
/// server (with credentials) on `turn`, a data channel, an offer, then a
/// forged answer whose candidates are both listeners. Its text records each
/// step, so the test can tell the experiment ran to its end.
fn webrtc_page(stun: std::net::SocketAddr, turn: std::net::SocketAddr) -> String {
    let (sh, sp, th, tp) = (stun.ip(), stun.port(), turn.ip(), turn.port());
    format!(
        r#"<html><head><title>c10</title></head><body><p id="s">steps: </p>
<script>
const log = m => {{ document.getElementById('s').textContent += m + '; '; }};
async function run() {{
  const pc = new RTCPeerConnection({{ iceServers: [
    {{ urls: 'stun:{sh}:{sp}' }},
    {{ urls: ['turn:{th}:{tp}?transport=udp', 'turn:{th}:{tp}'],
       username: 'c10-chosen-username', credential: 'c10-secret' }},
  ] }});
  pc.onicecandidate = e => {{ if (e.candidate && e.candidate.candidate) log('candidate ' + e.candidate.candidate); }};
  pc.createDataChannel('c10');
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  log('offer set');
  await new Promise(resolve => {{
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') resolve(); }};
    setTimeout(resolve, 20000);
  }});
  log('gathering ' + pc.iceGatheringState);
  const mid = (/a=mid:(\S+)/.exec(pc.localDescription.sdp) || [, '0'])[1];
  const fp = Array.from({{ length: 32 }}, (_, i) => (i * 7 + 16).toString(16).toUpperCase()).join(':');
  const answer = [
    'v=0', 'o=- 4611731400430051336 2 IN IP4 127.0.0.1', 's=-', 't=0 0',
    'a=group:BUNDLE ' + mid, 'a=msid-semantic: WMS',
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 0.0.0.0',
    'a=ice-ufrag:C10chosenufrag', 'a=ice-pwd:C10chosenpasswordC10chosen',
    'a=ice-options:trickle', 'a=fingerprint:sha-256 ' + fp, 'a=setup:active',
    'a=mid:' + mid, 'a=sctp-port:5000', 'a=max-message-size:262144',
    'a=candidate:1 1 udp 2130706431 {sh} {sp} typ host',
    'a=candidate:2 1 udp 2130706430 {th} {tp} typ host',
    'a=end-of-candidates', ''].join('\r\n');
  await pc.setRemoteDescription({{ type: 'answer', sdp: answer }});
  log('answer applied');
  for (const c of [['{sh}', {sp}], ['{th}', {tp}]]) {{
    try {{ await pc.addIceCandidate({{ candidate: 'candidate:9 1 udp 2130706429 ' + c[0] + ' ' + c[1] + ' typ host', sdpMid: mid }}); }}
    catch (e) {{ log('addIceCandidate: ' + e); }}
  }}
  await new Promise(resolve => setTimeout(resolve, 5000));
  log('ice ' + pc.iceConnectionState);
  pc.close();
}}
run().catch(e => log('error ' + e)).finally(() => {{ log('finished'); fetch('/done'); }});
</script><img src="/hold"></body></html>"#
    )
}

/// Loads the WebRTC page with `browser` (granted only the page's origin)
/// and asserts that neither UDP listener got a single datagram.
async fn assert_webrtc_sends_no_udp(browser: impl Fn(NetPolicy) -> LocalBrowser) {
    let stun = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let turn = UdpSocket::bind("127.0.0.2:0").await.unwrap();
    let (stun_addr, turn_addr) = (stun.local_addr().unwrap(), turn.local_addr().unwrap());
    let server = PageServer::start(webrtc_page(stun_addr, turn_addr)).await;
    let grant = format!("127.0.0.1:{}", server.port);
    let policy = NetPolicy::new([grant.as_str()], &[] as &[&str]).unwrap();
    let result = browser(policy)
        .browse(BrowseRequest {
            url: format!("http://127.0.0.1:{}/", server.port),
            screenshot: false,
            settle: Duration::ZERO,
            timeout: Duration::from_secs(120),
        })
        .await
        .expect("browse failed (is chromium installed? `make setup`)");
    // The experiment ran to its end: the offer, the forged answer, the wait.
    for step in ["offer set", "answer applied", "ice ", "finished"] {
        assert!(
            result.text.contains(step),
            "no `{step}` in {:?}",
            result.text
        );
    }
    let (at_stun, at_turn) = (drain(&stun), drain(&turn));
    assert!(
        at_stun.is_empty() && at_turn.is_empty(),
        "UDP left the browser: {} datagram(s) to {stun_addr}, {} to {turn_addr}; first: {:?}\npage: {}",
        at_stun.len(),
        at_turn.len(),
        at_stun
            .first()
            .or(at_turn.first())
            .map(|d| String::from_utf8_lossy(d).into_owned()),
        result.text,
    );
}

#[tokio::test]
async fn c10_webrtc_to_stun_turn_and_a_forged_peer_sends_no_udp() {
    assert_webrtc_sends_no_udp(LocalBrowser::new).await;
}

/// The guarantee is the kernel's: with the WebRTC flags left out (as
/// Chromium 156 ignores `--force-webrtc-ip-handling-policy`, which let this
/// page send some hundred STUN datagrams), nothing goes out either.
#[tokio::test]
async fn c10_webrtc_without_the_webrtc_flags_still_sends_no_udp() {
    assert_webrtc_sends_no_udp(|p| LocalBrowser::new(p).without_webrtc_flags()).await;
}
