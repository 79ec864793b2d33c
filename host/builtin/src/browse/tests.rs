use super::*;
use toolhost_core::{Arguments, CallContext, ToolHost};
use toolhost_net::NetPolicy;
use toolhost_test_support::{HttpServer, Reply};

fn browser(allow: &[&str]) -> LocalBrowser {
    LocalBrowser::new(NetPolicy::new(allow, &[] as &[&str]).unwrap())
}

fn req(url: String) -> BrowseRequest {
    BrowseRequest {
        url,
        screenshot: false,
        settle: Duration::ZERO,
        timeout: Duration::from_secs(60),
    }
}

const JS_PAGE: &str = r#"<html><head><title>JS page</title></head><body>
<p>static text</p><div id="out"></div>
<script>document.getElementById('out').textContent = 'rendered by ' + 'javascript';</script>
</body></html>"#;

#[tokio::test]
async fn b6_browse_returns_text_rendered_by_javascript() {
    let server = HttpServer::routes(vec![("/js", Reply::ok("text/html", JS_PAGE))]).await;
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_tool(browse_tool(
        Arc::new(browser(&["127.0.0.1"])),
        BrowseLimits::default(),
    ))
    .unwrap();
    let args = Arguments::from_value(&json!({"url": server.url("/js")})).unwrap();
    let out = host
        .invoke_tool(CallContext::new(), "browse", args)
        .await
        .expect("browse failed (is chromium installed? `make setup`)");
    let text = out.llm_text();
    assert!(
        text.starts_with(&format!("{} — JS page", server.url("/js"))),
        "{text}"
    );
    assert!(text.contains("static text"), "{text}");
    assert!(text.contains("rendered by javascript"), "{text}");
}

#[tokio::test]
async fn b6_browse_screenshot_is_a_png_image_block() {
    let server = HttpServer::routes(vec![("/js", Reply::ok("text/html", JS_PAGE))]).await;
    let mut r = req(server.url("/js"));
    r.screenshot = true;
    let result = browser(&["127.0.0.1"]).browse(r).await.unwrap();
    let out = render(result, 1000);
    let ToolOutput::Blocks { blocks } = out else {
        panic!("expected blocks, got {out:?}");
    };
    match &blocks[1] {
        ContentBlock::Image {
            mime_type, data, ..
        } => {
            assert_eq!(mime_type, "image/png");
            assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
        }
        other => panic!("expected an image, got {other:?}"),
    }
}

#[tokio::test]
async fn b6_browser_requests_are_restricted_by_the_policy() {
    let other = HttpServer::routes(vec![
        ("/pixel.png", Reply::ok("image/png", b"\x89PNG".to_vec())),
        ("/api", Reply::ok("text/plain", "leaked")),
    ])
    .await;
    let page = format!(
        r#"<html><body><p id="s">start</p><img src="{img}">
<script>
fetch("{api}").then(r => r.text()).then(t => document.getElementById('s').textContent = 'got ' + t)
  .catch(e => document.getElementById('s').textContent = 'fetch failed');
</script></body></html>"#,
        img = other.url("/pixel.png"),
        api = other.url("/api"),
    );
    let server = HttpServer::routes(vec![
        ("/page", Reply::ok("text/html", page)),
        ("/redirect", Reply::redirect(other.url("/api"))),
    ])
    .await;
    let only_server = format!("127.0.0.1:{}", server.port());
    let mut r = req(server.url("/page"));
    r.settle = Duration::from_millis(500);
    let result = browser(&[&only_server]).browse(r).await.unwrap();
    assert!(
        other.paths().is_empty(),
        "the page reached {:?}",
        other.paths()
    );
    assert!(!result.text.contains("leaked"), "{}", result.text);
    assert!(
        result
            .blocked
            .iter()
            .any(|b| b.contains(&other.port().to_string())),
        "{:?}",
        result.blocked
    );
    // A redirect to an ungranted destination is refused too.
    let _ = browser(&[&only_server])
        .browse(req(server.url("/redirect")))
        .await;
    assert!(other.paths().is_empty());
    // The page itself must be granted; nothing starts otherwise.
    let err = browser(&[])
        .browse(req(server.url("/page")))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("refused by the network policy"),
        "{err}"
    );
}

#[tokio::test]
async fn b6_browse_times_out_when_the_page_never_loads() {
    // A server that accepts connections and never answers: the page's image
    // keeps its load event from firing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hold_addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let page =
        format!(r#"<html><body>waiting<img src="http://{hold_addr}/never.png"></body></html>"#);
    let server = HttpServer::routes(vec![("/slow", Reply::ok("text/html", page))]).await;
    let mut r = req(server.url("/slow"));
    r.timeout = Duration::from_secs(5);
    let err = browser(&["127.0.0.1"]).browse(r).await.unwrap_err();
    assert_eq!(err.kind(), toolhost_core::ErrorKind::Timeout, "{err}");
    hold.abort();
}
