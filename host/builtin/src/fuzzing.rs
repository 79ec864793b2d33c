//! Entry points for the fuzz targets: bytes the
//! browser hands the host. Not part of the API.

#[cfg(feature = "browser")]
pub use crate::browse::cdp::MAX_MESSAGE_BYTES;

/// The DevTools client reading `data` as the browser's side of the pipe,
/// while it waits for replies and an event.
///
/// Must hold: no panic; each wait ends (with the reply, the event, or an
/// error once the stream ends or breaks the protocol); a message longer
/// than [`MAX_MESSAGE_BYTES`] is refused rather than buffered.
#[cfg(feature = "browser")]
pub async fn cdp(data: &[u8]) {
    use serde_json::json;

    use crate::browse::cdp::Cdp;

    let mut cdp = Cdp::from_streams(
        Box::new(tokio::io::sink()),
        Box::new(std::io::Cursor::new(data.to_vec())),
    );
    let _ = cdp
        .call(Some("s"), "Page.navigate", json!({"url": "about:blank"}))
        .await;
    let _ = cdp.event("s", "Page.loadEventFired").await;
    cdp.clear_events();
    let _ = cdp.call(None, "Browser.close", json!({})).await;
}
