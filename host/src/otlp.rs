//! Exporting the host's spans by OTLP/HTTP (rule X2), as `[tracing]` says.
//!
//! Spans are batched by the OpenTelemetry SDK on a thread of its own and
//! sent as protobuf over HTTP with the host's reqwest client, on the
//! runtime that started the export. A call only hands its finished spans
//! to a bounded queue: a collector that stalls or refuses never slows a
//! call, and past the queue's size new spans are dropped rather than
//! kept. [`TraceExport::shutdown`] sends what is queued, within a bound.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, IdGenerator, RandomIdGenerator, Sampler,
    SdkTracerProvider,
};
use toolhost_core::Traces;
use toolhost_core::traces::ids;

use crate::config::TraceSettings;

/// How long spans wait to be sent in a batch.
const BATCH_DELAY: Duration = Duration::from_secs(1);

/// The provider's ids: those the host gave a call's span on the call's
/// thread when the span is built later ([`Traces::ids_from_host`]), else
/// random ones.
#[derive(Debug, Default)]
struct HostIds(RandomIdGenerator);

impl IdGenerator for HostIds {
    fn new_trace_id(&self) -> TraceId {
        ids::preset_trace_id().unwrap_or_else(|| self.0.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        ids::preset_span_id().unwrap_or_else(|| self.0.new_span_id())
    }
}

/// Why the export could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Not inside a Tokio runtime, which sends the requests.
    #[error("the trace export needs a Tokio runtime to send its requests")]
    NoRuntime(#[source] tokio::runtime::TryCurrentError),
    /// The HTTP client could not be made.
    #[error("the trace export's HTTP client: {0}")]
    Client(String),
    /// The exporter refused its settings.
    #[error("the OTLP exporter: {0}")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// Spans exported by OTLP/HTTP: the provider, and the [`Traces`] a host
/// is built with. Dropping it stops the export without sending what is
/// queued; call [`shutdown`](Self::shutdown) first.
pub struct TraceExport {
    provider: SdkTracerProvider,
    traces: Traces,
}

impl fmt::Debug for TraceExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceExport").finish_non_exhaustive()
    }
}

impl TraceExport {
    /// Starts exporting to `settings`' collector. Must be called inside a
    /// Tokio runtime, which then sends every export request.
    pub fn start(settings: &TraceSettings) -> Result<Self, ExportError> {
        let handle = tokio::runtime::Handle::try_current().map_err(ExportError::NoRuntime)?;
        let mut headers = http::HeaderMap::new();
        for (name, value) in &settings.headers {
            headers.append(name.clone(), value.clone());
        }
        let client = toolhost_net::tls::reqwest_builder()
            .map_err(|e| ExportError::Client(toolhost_core::report(&e)))?
            .default_headers(headers)
            .timeout(settings.export_timeout)
            .connect_timeout(settings.export_timeout)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ExportError::Client(e.to_string()))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(OnRuntime {
                client,
                handle,
                timeout: settings.export_timeout,
            })
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(settings.export_timeout)
            .build()
            .map_err(ExportError::Exporter)?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(settings.max_queue_size)
            .with_max_export_batch_size(settings.max_queue_size.min(512))
            .with_scheduled_delay(BATCH_DELAY)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            // The host samples (Traces::sampling_ratio), before a call
            // makes anything of its span; the SDK keeps what it is given.
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
            .with_id_generator(HostIds::default())
            .with_resource(
                Resource::builder_empty()
                    .with_service_name(settings.service_name.clone())
                    .build(),
            )
            .build();
        let traces = Traces::from_provider(&provider)
            .sampling_ratio(settings.sampling_ratio)
            .ids_from_host();
        Ok(Self { provider, traces })
    }

    /// What a host is built with to make the spans this exports.
    pub fn traces(&self) -> Traces {
        self.traces.clone()
    }

    /// Sends the spans still queued and stops, within `within` at most:
    /// what is not sent by then is dropped. Blocks a thread of the
    /// runtime's blocking pool, never the caller's.
    pub async fn shutdown(self, within: Duration) {
        let (provider, traces) = (self.provider, self.traces);
        let done = tokio::task::spawn_blocking(move || {
            // The calls' spans still being finished go to the provider first.
            traces.flush();
            provider.shutdown_with_timeout(within)
        });
        match tokio::time::timeout(within + Duration::from_secs(1), done).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                tracing::warn!(target: "toolhost::traces", "the last spans were not all sent: {e}");
            }
            Ok(Err(e)) => {
                tracing::warn!(target: "toolhost::traces", "the trace export did not stop: {e}");
            }
            Err(_) => {
                tracing::warn!(target: "toolhost::traces", "the trace export did not stop within {within:?}");
            }
        }
    }
}

/// reqwest, driven by the runtime the export was started on: the SDK's
/// export thread waits for each request without a runtime of its own.
struct OnRuntime {
    client: reqwest::Client,
    handle: tokio::runtime::Handle,
    timeout: Duration,
}

impl fmt::Debug for OnRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnRuntime").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let (client, timeout) = (self.client.clone(), self.timeout);
        let sent = self.handle.spawn(async move {
            let exchange = async {
                let response = client.execute(request).await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            };
            tokio::time::timeout(timeout, exchange).await
        });
        let (status, headers, body) = match sent.await? {
            Ok(answer) => answer?,
            Err(_) => return Err(format!("no answer within {timeout:?}").into()),
        };
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
