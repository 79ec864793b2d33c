//! Artifact offload (rule T5): a large result is stored, and the model sees a
//! short reference with a preview; the `artifact_read` tool reads it back in
//! byte or line ranges.
//!
//! An artifact belongs to the tenant whose call stored it (rule A2): the
//! store keeps it under that tenant, and `artifact_read` of another
//! tenant's id answers as for an id that does not exist.

use std::collections::HashSet;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::Deserialize;
use serde_json::json;

pub use crate::artifact_id::{ArtifactId, ArtifactIdError};
use crate::error::ToolError;
use crate::output::{ContentBlock, OffloadedOutput, ToolOutput};
use crate::tool::{Arguments, CallContext, Tool, ToolSpec};

/// Why an artifact operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// No artifact has that id.
    #[error("no artifact `{0}`")]
    NotFound(ArtifactId),
    /// The store could not read or write.
    #[error("artifact store: {0}")]
    Io(String),
}

/// Where offloaded outputs live, each under its owner (the tenant whose
/// call stored it). Implementations must be safe to share between tasks,
/// and must answer [`ArtifactError::NotFound`] for an id stored under
/// another owner, as for one never stored.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// Stores `data` for `owner` under a fresh id.
    async fn put(&self, owner: &str, data: Vec<u8>) -> Result<ArtifactId, ArtifactError>;

    /// The size in bytes of `owner`'s artifact `id`.
    async fn len(&self, owner: &str, id: &ArtifactId) -> Result<u64, ArtifactError>;

    /// Up to `len` bytes from `offset` of `owner`'s artifact `id` (fewer
    /// at the end; none past it).
    async fn read(
        &self,
        owner: &str,
        id: &ArtifactId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ArtifactError>;
}

/// Artifacts kept in memory, for tests and short-lived hosts.
#[derive(Default)]
pub struct MemoryArtifactStore {
    items: Mutex<std::collections::HashMap<ArtifactId, Kept>>,
}

/// One artifact in a [`MemoryArtifactStore`]: the owner it was put for, and
/// its bytes.
struct Kept {
    owner: Arc<str>,
    data: Arc<[u8]>,
}

impl MemoryArtifactStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, owner: &str, id: &ArtifactId) -> Result<Arc<[u8]>, ArtifactError> {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .filter(|kept| *kept.owner == *owner)
            .map(|kept| kept.data.clone())
            .ok_or_else(|| ArtifactError::NotFound(id.clone()))
    }
}

#[async_trait]
impl ArtifactStore for MemoryArtifactStore {
    async fn put(&self, owner: &str, data: Vec<u8>) -> Result<ArtifactId, ArtifactError> {
        let id = ArtifactId::fresh();
        self.items.lock().unwrap_or_else(|e| e.into_inner()).insert(
            id.clone(),
            Kept {
                owner: owner.into(),
                data: data.into(),
            },
        );
        Ok(id)
    }

    async fn len(&self, owner: &str, id: &ArtifactId) -> Result<u64, ArtifactError> {
        Ok(self.get(owner, id)?.len() as u64)
    }

    async fn read(
        &self,
        owner: &str,
        id: &ArtifactId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ArtifactError> {
        let data = self.get(owner, id)?;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(data.len());
        Ok(data[start..end].to_vec())
    }
}

/// Artifacts stored as files in one directory, reached through a capability
/// handle: ids are validated, and even a forged name could not leave the
/// directory. Each owner's are in a directory of their own, named by a
/// digest of the owner (`o_` and 32 hex digits), so no owner's name can
/// reach another's files.
pub struct FsArtifactStore {
    dir: Arc<Dir>,
}

impl FsArtifactStore {
    /// Opens (creating if needed) the directory `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ArtifactError> {
        let path = path.as_ref();
        std::fs::create_dir_all(path)
            .map_err(|e| ArtifactError::Io(format!("creating {}: {e}", path.display())))?;
        let dir = Dir::open_ambient_dir(path, ambient_authority())
            .map_err(|e| ArtifactError::Io(format!("opening {}: {e}", path.display())))?;
        Ok(Self { dir: Arc::new(dir) })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Dir) -> Result<T, ArtifactError> + Send + 'static,
    ) -> Result<T, ArtifactError> {
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || f(&dir))
            .await
            .map_err(|e| ArtifactError::Io(e.to_string()))?
    }
}

fn io_error(id: &ArtifactId, e: std::io::Error) -> ArtifactError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ArtifactError::NotFound(id.clone())
    } else {
        ArtifactError::Io(format!("{id}: {e}"))
    }
}

/// The file of `owner`'s artifact `id`, relative to the store's directory.
fn owned_path(owner: &str, id: &ArtifactId) -> String {
    format!("{}/{id}", owner_dir(owner))
}

/// The directory of `owner`'s artifacts: a digest of the name, so that any
/// name is one safe path component and none is another's.
fn owner_dir(owner: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(owner.as_bytes());
    format!("o_{}", hex::encode(&digest[..16]))
}

#[async_trait]
impl ArtifactStore for FsArtifactStore {
    async fn put(&self, owner: &str, data: Vec<u8>) -> Result<ArtifactId, ArtifactError> {
        let id = ArtifactId::fresh();
        let name = id.clone();
        let sub = owner_dir(owner);
        let path = owned_path(owner, &id);
        self.blocking(move |dir| {
            dir.create_dir_all(&sub).map_err(|e| io_error(&name, e))?;
            let mut file = dir.create(&path).map_err(|e| io_error(&name, e))?;
            file.write_all(&data).map_err(|e| io_error(&name, e))
        })
        .await?;
        Ok(id)
    }

    async fn len(&self, owner: &str, id: &ArtifactId) -> Result<u64, ArtifactError> {
        let id = id.clone();
        let path = owned_path(owner, &id);
        self.blocking(move |dir| Ok(dir.metadata(&path).map_err(|e| io_error(&id, e))?.len()))
            .await
    }

    async fn read(
        &self,
        owner: &str,
        id: &ArtifactId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ArtifactError> {
        let id = id.clone();
        let path = owned_path(owner, &id);
        self.blocking(move |dir| {
            let mut file = dir.open(&path).map_err(|e| io_error(&id, e))?;
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| io_error(&id, e))?;
            let mut out = Vec::new();
            file.take(len)
                .read_to_end(&mut out)
                .map_err(|e| io_error(&id, e))?;
            Ok(out)
        })
        .await
    }
}

/// When and how outputs are offloaded.
#[derive(Debug, Clone)]
pub struct OffloadConfig {
    /// Outputs whose model-facing text is larger than this many bytes are
    /// offloaded. Default 50 KiB.
    pub threshold_bytes: usize,
    /// Size of the preview the model sees, in bytes. Default 2 KiB.
    pub preview_bytes: usize,
    /// Tools whose outputs are never offloaded (`artifact_read` always is).
    pub exclude: HashSet<String>,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        Self {
            threshold_bytes: 50 * 1024,
            preview_bytes: 2 * 1024,
            exclude: HashSet::new(),
        }
    }
}

impl OffloadConfig {
    /// Never offloads outputs of `tool`.
    pub fn exclude(mut self, tool: impl Into<String>) -> Self {
        self.exclude.insert(tool.into());
        self
    }
}

/// Applies [`OffloadConfig`] with a store; used by the pipeline's last step.
pub(crate) struct Offloader {
    pub(crate) store: Arc<dyn ArtifactStore>,
    pub(crate) config: OffloadConfig,
}

impl Offloader {
    /// Returns `output` unchanged, or its offloaded form if it is large,
    /// stored for `tenant`. A store failure keeps the output as it was
    /// (nothing is lost) and logs.
    pub(crate) async fn maybe_offload(
        &self,
        tenant: &str,
        tool: &str,
        output: ToolOutput,
    ) -> ToolOutput {
        if tool == ARTIFACT_READ || self.config.exclude.contains(tool) {
            return output;
        }
        // Only text can be offloaded without losing anything: media,
        // resources, annotations and structured content stay inline.
        match &output {
            ToolOutput::Blocks { blocks }
                if blocks.iter().any(|b| {
                    !matches!(b, ContentBlock::Text { annotations, .. } if annotations.is_empty())
                }) =>
            {
                return output;
            }
            ToolOutput::Structured { .. } => return output,
            _ => {}
        }
        let text = output.llm_text();
        if text.len() <= self.config.threshold_bytes {
            return output;
        }
        let size_bytes = text.len() as u64;
        let line_count = text.lines().count() as u64;
        let preview = text[..text.floor_char_boundary(self.config.preview_bytes)].to_owned();
        let bytes = text.into_owned().into_bytes();
        match self.store.put(tenant, bytes).await {
            Ok(artifact) => ToolOutput::Offloaded(OffloadedOutput {
                artifact,
                size_bytes,
                line_count,
                preview,
                for_user: output.user_text().map(|t| t.into_owned()),
            }),
            Err(e) => {
                tracing::warn!(tool, error = %e, "artifact offload failed; returning the output inline");
                output
            }
        }
    }
}

/// Name of the tool that reads artifacts.
pub const ARTIFACT_READ: &str = "artifact_read";

/// Largest byte range `artifact_read` returns at once.
const MAX_READ: u64 = 64 * 1024;

/// The `artifact_read` tool: a byte range (`offset`, `length`) or a line
/// range (`line_start`, `line_count`) of a stored artifact.
pub(crate) struct ArtifactReadTool {
    spec: ToolSpec,
    store: Arc<dyn ArtifactStore>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    id: ArtifactId,
    offset: Option<u64>,
    length: Option<u64>,
    line_start: Option<u64>,
    line_count: Option<u64>,
}

impl ArtifactReadTool {
    pub(crate) fn new(store: Arc<dyn ArtifactStore>) -> Self {
        let spec = ToolSpec::new(
            ARTIFACT_READ,
            "Read part of a stored tool output (an artifact). Give either a byte range \
             (offset, length; at most 65536 bytes) or a line range (line_start from 1, line_count).",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": "^art_[0-9a-f]{32}$"},
                    "offset": {"type": "integer", "minimum": 0},
                    "length": {"type": "integer", "minimum": 1, "maximum": MAX_READ},
                    "line_start": {"type": "integer", "minimum": 1},
                    "line_count": {"type": "integer", "minimum": 1}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        )
        .concurrency_safe(true)
        .idempotent(true);
        Self { spec, store }
    }

    async fn read_lines(
        &self,
        owner: &str,
        id: &ArtifactId,
        start: u64,
        count: u64,
    ) -> Result<String, ToolError> {
        let size = self.store.len(owner, id).await.map_err(artifact_error)?;
        let data = self
            .store
            .read(owner, id, 0, size)
            .await
            .map_err(artifact_error)?;
        let text = String::from_utf8_lossy(&data);
        let total = text.lines().count() as u64;
        if start > total {
            return Err(ToolError::invalid_arguments(
                "/line_start",
                format!("line {start} is past the end; the artifact has {total} lines"),
            ));
        }
        let mut out = String::new();
        let mut bytes = 0u64;
        let mut last = start;
        for (i, line) in text
            .lines()
            .enumerate()
            .skip((start - 1) as usize)
            .take(count as usize)
        {
            bytes += line.len() as u64 + 1;
            if bytes > MAX_READ && i as u64 >= start {
                break;
            }
            out.push_str(line);
            out.push('\n');
            last = i as u64 + 1;
        }
        Ok(format!("[{id}: lines {start}-{last} of {total}]\n{out}"))
    }
}

fn artifact_error(e: ArtifactError) -> ToolError {
    match e {
        ArtifactError::NotFound(_) => ToolError::invalid_arguments("/id", e.to_string()),
        ArtifactError::Io(_) => ToolError::transient(e.to_string()),
    }
}

#[async_trait]
impl Tool for ArtifactReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        let a: ReadArgs = args.deserialize()?;
        // The caller's tenant's artifacts alone (rule A2).
        let owner = ctx.tenant();
        if a.line_start.is_some() || a.line_count.is_some() {
            if a.offset.is_some() || a.length.is_some() {
                return Err(ToolError::invalid_arguments(
                    "",
                    "give a byte range (offset, length) or a line range (line_start, line_count), not both",
                ));
            }
            let text = self
                .read_lines(
                    owner,
                    &a.id,
                    a.line_start.unwrap_or(1),
                    a.line_count.unwrap_or(200),
                )
                .await?;
            return Ok(ToolOutput::text(text));
        }
        let size = self.store.len(owner, &a.id).await.map_err(artifact_error)?;
        let offset = a.offset.unwrap_or(0);
        let length = a.length.unwrap_or(8192).min(MAX_READ);
        let data = self
            .store
            .read(owner, &a.id, offset, length)
            .await
            .map_err(artifact_error)?;
        let end = offset + data.len() as u64;
        Ok(ToolOutput::text(format!(
            "[{}: bytes {offset}-{end} of {size}]\n{}",
            a.id,
            String::from_utf8_lossy(&data)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t5_artifact_ids_cannot_name_paths() {
        assert!(ArtifactId::try_from("../etc/passwd".to_string()).is_err());
        assert!(ArtifactId::try_from(format!("art_{}", "g".repeat(32))).is_err());
        let id = ArtifactId::fresh();
        assert_eq!(ArtifactId::try_from(id.to_string()).unwrap(), id);
    }

    #[tokio::test]
    async fn t5_stores_read_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let stores: Vec<Arc<dyn ArtifactStore>> = vec![
            Arc::new(MemoryArtifactStore::new()),
            Arc::new(FsArtifactStore::open(dir.path().join("artifacts")).unwrap()),
        ];
        for store in stores {
            let id = store.put("acme", b"0123456789".to_vec()).await.unwrap();
            assert_eq!(store.len("acme", &id).await.unwrap(), 10);
            assert_eq!(store.read("acme", &id, 3, 4).await.unwrap(), b"3456");
            assert_eq!(store.read("acme", &id, 8, 100).await.unwrap(), b"89");
            assert!(store.read("acme", &id, 20, 5).await.unwrap().is_empty());
            let missing = ArtifactId::fresh();
            assert!(matches!(
                store.len("acme", &missing).await,
                Err(ArtifactError::NotFound(_))
            ));
            // Another owner's artifact is, to this one, not there (rule A2):
            // whatever its name spells.
            for other in ["beta", "", "../acme", "acme/..", "ACME"] {
                assert_eq!(
                    store.len(other, &id).await,
                    Err(ArtifactError::NotFound(id.clone())),
                    "{other}"
                );
                assert_eq!(
                    store.read(other, &id, 0, 10).await,
                    Err(ArtifactError::NotFound(id.clone())),
                    "{other}"
                );
            }
        }
    }

    #[tokio::test]
    async fn t5_small_outputs_and_excluded_tools_stay_inline() {
        let off = Offloader {
            store: Arc::new(MemoryArtifactStore::new()),
            config: OffloadConfig {
                threshold_bytes: 10,
                ..OffloadConfig::default()
            }
            .exclude("raw"),
        };
        let small = ToolOutput::text("short");
        assert_eq!(off.maybe_offload("a", "t", small.clone()).await, small);
        let big = ToolOutput::text("x".repeat(100));
        assert_eq!(off.maybe_offload("a", "raw", big.clone()).await, big);
        assert!(matches!(
            off.maybe_offload("a", "t", big).await,
            ToolOutput::Offloaded(_)
        ));
    }

    #[tokio::test]
    async fn t5_a2_artifact_offload_round_trip_for_its_tenant_alone() {
        use crate::{FnTool, ToolHost};
        let host = ToolHost::builder()
            .artifact_offload(
                Arc::new(MemoryArtifactStore::new()),
                OffloadConfig::default().exclude("raw_dump"),
            )
            .build();
        let big: String = (1..=5000).map(|i| format!("line {i:05}\n")).collect();
        assert!(big.len() > 50 * 1024);
        for name in ["dump", "raw_dump"] {
            let text = big.clone();
            host.register_tool(FnTool::arc(
                ToolSpec::new(name, "", json!({"type": "object"})),
                move |_, _| {
                    let text = text.clone();
                    async move { Ok(ToolOutput::dual(text, "the whole log")) }
                },
            ))
            .unwrap();
        }
        let args = || Arguments::parse("{}").unwrap();
        let out = host
            .invoke_tool(CallContext::new(), "dump", args())
            .await
            .unwrap();
        let ToolOutput::Offloaded(off) = &out else {
            panic!("expected an offloaded output, got {out:?}");
        };
        assert_eq!(off.size_bytes, big.len() as u64);
        assert_eq!(off.line_count, 5000);
        assert!(off.preview.starts_with("line 00001\n"));
        assert!(off.preview.len() <= 2048);
        assert_eq!(off.for_user.as_deref(), Some("the whole log"));
        let seen = out.llm_text();
        assert!(
            seen.contains(off.artifact.as_str()) && seen.len() < 4096,
            "{seen}"
        );

        let read = |a: serde_json::Value| {
            let host = host.clone();
            async move {
                host.invoke_tool(
                    CallContext::new(),
                    ARTIFACT_READ,
                    Arguments::from_value(&a).unwrap(),
                )
                .await
            }
        };
        let lines = read(json!({"id": off.artifact, "line_start": 4999, "line_count": 10}))
            .await
            .unwrap();
        assert_eq!(
            lines.llm_text(),
            format!(
                "[{}: lines 4999-5000 of 5000]\nline 04999\nline 05000\n",
                off.artifact
            )
        );
        let bytes = read(json!({"id": off.artifact, "offset": 11, "length": 11}))
            .await
            .unwrap();
        assert_eq!(
            bytes.llm_text(),
            format!(
                "[{}: bytes 11-22 of {}]\nline 00002\n",
                off.artifact,
                big.len()
            )
        );
        // Another tenant's call gets for the same id what an id that never
        // existed gets (rule A2).
        let foreign = host
            .invoke_tool(
                CallContext::new().with_tenant("beta"),
                ARTIFACT_READ,
                Arguments::from_value(&json!({"id": off.artifact})).unwrap(),
            )
            .await
            .unwrap_err();
        assert_eq!(foreign.kind(), crate::ErrorKind::InvalidArguments);
        assert_eq!(
            foreign.to_string(),
            ToolError::invalid_arguments("/id", format!("no artifact `{}`", off.artifact))
                .to_string()
        );
        let missing = read(json!({"id": ArtifactId::fresh()})).await.unwrap_err();
        assert_eq!(missing.kind(), crate::ErrorKind::InvalidArguments);
        let bad = read(json!({"id": "../../etc/passwd"})).await.unwrap_err();
        assert_eq!(bad.kind(), crate::ErrorKind::InvalidArguments);

        // Excluded tools keep their output inline.
        let raw = host
            .invoke_tool(CallContext::new(), "raw_dump", args())
            .await
            .unwrap();
        assert!(matches!(raw, ToolOutput::Dual { .. }));
    }
}
