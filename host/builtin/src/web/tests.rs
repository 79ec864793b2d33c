use super::*;
use serde_json::json;
use toolhost_core::{Arguments, CallContext, ErrorKind, ToolHost};
use toolhost_net::NetPolicy;
use toolhost_test_support::{HttpServer, Reply};

fn policy(allow: &[&str]) -> NetPolicy {
    NetPolicy::new(allow, &[] as &[&str]).unwrap()
}

fn req(url: String) -> FetchRequest {
    FetchRequest {
        url,
        max_bytes: 1024 * 1024,
        timeout: Duration::from_secs(20),
    }
}

const PAGE: &str = "<html><body><h1>Title</h1><p>Hello <b>web</b>.</p></body></html>";

#[tokio::test]
async fn b6_fetch_returns_readable_text_through_the_pipeline() {
    let server = HttpServer::routes(vec![("/page", Reply::ok("text/html", PAGE))]).await;
    let web = LocalWeb::new(policy(&["127.0.0.1"]));
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_tool(web_fetch_tool(Arc::new(web), WebLimits::default()))
        .unwrap();
    let args = Arguments::from_value(&json!({"url": server.url("/page")})).unwrap();
    let out = host
        .invoke_tool(CallContext::new(), "web_fetch", args)
        .await
        .unwrap();
    let llm = out.llm_text();
    assert!(
        llm.starts_with(&format!("{} (HTTP 200, text/html)", server.url("/page"))),
        "{llm}"
    );
    assert!(llm.contains("# Title\n\nHello **web**."), "{llm}");
    assert!(!llm.contains("<b>"), "{llm}");
}

#[tokio::test]
async fn b6_loopback_is_refused_unless_granted_by_address() {
    let server = HttpServer::routes(vec![("/page", Reply::ok("text/html", PAGE))]).await;
    let port = server.port();
    for (grants, url) in [
        (vec![], server.url("/page")),
        (vec!["localhost"], format!("http://localhost:{port}/page")),
        (vec!["127.0.0.1:1"], server.url("/page")),
        (vec!["*.example.com"], "http://10.1.2.3/".to_owned()),
        (vec!["169.254.169.254"], "file:///etc/passwd".to_owned()),
    ] {
        let err = LocalWeb::new(policy(&grants))
            .fetch(req(url.clone()))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("refused by the network policy")
                || err.to_string().contains("only http and https"),
            "{grants:?} {url}: {err}"
        );
    }
    assert!(server.paths().is_empty(), "nothing reached the server");
    let ok = LocalWeb::new(policy(&["localhost", "127.0.0.1", "::1"]))
        .fetch(req(format!("http://localhost:{port}/page")))
        .await;
    // localhost may resolve to ::1 first, where nothing listens; the point
    // is that the policy let it through.
    if let Err(e) = ok {
        assert!(!e.to_string().contains("network policy"), "{e}");
    }
}

#[tokio::test]
async fn b6_every_redirect_is_checked() {
    let other = HttpServer::routes(vec![("/secret", Reply::ok("text/plain", "secret"))]).await;
    let server = HttpServer::routes(vec![
        ("/to-other", Reply::redirect(other.url("/secret"))),
        (
            "/to-name",
            Reply::redirect(format!("http://localhost:{}/secret", other.port())),
        ),
        (
            "/to-metadata",
            Reply::redirect("http://169.254.169.254/latest"),
        ),
        ("/hop", Reply::redirect("/page")),
        ("/page", Reply::ok("text/plain", "landed")),
        ("/loop", Reply::redirect("/loop")),
    ])
    .await;
    let web = LocalWeb::new(policy(&[&format!("127.0.0.1:{}", server.port())]));
    for path in ["/to-other", "/to-name", "/to-metadata"] {
        let err = web.fetch(req(server.url(path))).await.unwrap_err();
        assert!(
            err.to_string().contains("refused by the network policy"),
            "{path}: {err}"
        );
    }
    assert!(
        other.paths().is_empty(),
        "the redirect target was never contacted"
    );
    let resp = web.fetch(req(server.url("/hop"))).await.unwrap();
    assert_eq!(resp.body, b"landed");
    assert_eq!(resp.redirects, [server.url("/page")]);
    let err = web.fetch(req(server.url("/loop"))).await.unwrap_err();
    assert!(err.to_string().contains("more than 5 redirects"), "{err}");
}

#[tokio::test]
async fn b6_body_is_capped() {
    let big = "x".repeat(100_000);
    let server = HttpServer::routes(vec![("/big", Reply::ok("text/plain", big))]).await;
    let web = LocalWeb::new(policy(&["127.0.0.1"]));
    let mut r = req(server.url("/big"));
    r.max_bytes = 1000;
    let resp = web.fetch(r).await.unwrap();
    assert_eq!(resp.body.len(), 1000);
    assert!(resp.truncated);
    let limits = WebLimits {
        llm_chars: 10,
        ..WebLimits::default()
    };
    let out = render(&resp, &limits).unwrap();
    assert!(
        out.llm_text().contains("[body cut at 1000 bytes]"),
        "{}",
        out.llm_text()
    );
    assert!(
        out.llm_text()
            .ends_with("[… text cut: 10 of 1000 characters shown]")
    );
    assert!(
        out.user_text()
            .unwrap()
            .ends_with(&format!("\n\n{}", "x".repeat(1000)))
    );
}

#[tokio::test]
async fn b6_a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let web = LocalWeb::new(policy(&["127.0.0.1"]));
    let mut r = req(format!("http://{addr}/"));
    r.timeout = Duration::from_millis(300);
    let err = web.fetch(r).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    hold.abort();
}

#[tokio::test]
async fn b6_http_errors_are_failures_and_server_errors_are_retryable() {
    let server = HttpServer::routes(vec![(
        "/down",
        Reply::Full {
            status: 503,
            headers: vec![],
            body: b"try later".to_vec(),
        },
    )])
    .await;
    let web = LocalWeb::new(policy(&["127.0.0.1"]));
    let resp = web.fetch(req(server.url("/missing"))).await.unwrap();
    let err = render(&resp, &WebLimits::default()).unwrap_err();
    assert!(!err.is_retryable());
    assert!(err.to_string().starts_with("HTTP 404 from"), "{err}");
    let resp = web.fetch(req(server.url("/down"))).await.unwrap();
    let err = render(&resp, &WebLimits::default()).unwrap_err();
    assert!(err.is_retryable(), "{err}");
}
