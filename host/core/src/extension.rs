//! Extensions (rules E1, E2): named bundles of tools, system-prompt text,
//! hooks, middleware and lifecycle hooks, applied together on registration and
//! removed together on unload.

use std::sync::{Arc, Weak};

use async_trait::async_trait;

use crate::error::{InitError, RegistryError};
use crate::hook::{AfterHook, BeforeHook, HookScope};
use crate::lifecycle::LifecycleHook;
use crate::pipeline::Middleware;
use crate::registry::Registry;
use crate::tool::Tool;

/// An extension. Every contribution is optional: implement `name` and the
/// methods for what the extension offers; the rest default to nothing.
///
/// On [`ToolHost::register_extension`](crate::ToolHost::register_extension)
/// the host calls [`init`](Self::init), then collects the contributions and
/// applies them all, or none if one fails (and then calls `dispose`). On
/// [`ToolHost::unload_extension`](crate::ToolHost::unload_extension) or
/// [`ToolHost::shutdown`](crate::ToolHost::shutdown) it removes them all and
/// calls [`dispose`](Self::dispose).
#[async_trait]
pub trait Extension: Send + Sync {
    /// A unique name; it owns the extension's contributions.
    fn name(&self) -> &str;

    /// Prepares the extension (connect, discover files, …). The context can
    /// be kept to change the extension's tools later. An error aborts the
    /// registration.
    async fn init(&self, ctx: &ExtensionContext) -> Result<(), InitError> {
        let _ = ctx;
        Ok(())
    }

    /// Releases what `init` acquired. Called once, after the contributions
    /// have been removed.
    async fn dispose(&self) {}

    /// Tools to register, owned by this extension. Called once, after
    /// `init`.
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    /// Text to add to the agent's system prompt; asked at the start of each
    /// agent run and kept for the whole run.
    async fn system_prompt(&self) -> Option<String> {
        None
    }

    /// Before hooks, each for all tools or one.
    fn before_hooks(&self) -> Vec<(HookScope, Arc<dyn BeforeHook>)> {
        Vec::new()
    }

    /// After hooks, each for all tools or one.
    fn after_hooks(&self) -> Vec<(HookScope, Arc<dyn AfterHook>)> {
        Vec::new()
    }

    /// Middleware, placed inside the host's own middleware, in order.
    fn middleware(&self) -> Vec<Arc<dyn Middleware>> {
        Vec::new()
    }

    /// Hooks around agent runs, turns, model calls and tool executions.
    fn lifecycle_hooks(&self) -> Vec<Arc<dyn LifecycleHook>> {
        Vec::new()
    }
}

/// What an extension gets at `init`: its name and a handle to change its own
/// tools later (for example when a remote server's tool list changes).
/// Cloning is cheap; the handle does not keep the host alive.
#[derive(Clone)]
pub struct ExtensionContext {
    name: Arc<str>,
    registry: Weak<Registry>,
}

impl ExtensionContext {
    pub(crate) fn new(name: Arc<str>, registry: Weak<Registry>) -> Self {
        Self { name, registry }
    }

    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Replaces all tools this extension owns with `tools`, atomically.
    /// Fails, changing nothing, if a name clashes with another owner's tool.
    pub fn set_tools(&self, tools: Vec<Arc<dyn Tool>>) -> Result<(), RegistryError> {
        let registry = self.registry.upgrade().ok_or(RegistryError::HostGone)?;
        registry.replace_owned(&self.name, tools)
    }

    /// The names of the tools this extension owns, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.registry
            .upgrade()
            .map(|r| r.names_owned_by(&self.name))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use std::time::Duration;

    use super::*;
    use crate::error::ToolError;
    use crate::output::ToolOutput;
    use crate::testing::{RecordAfter, RecordBefore, RecordMiddleware, Recorder, recording_tool};
    use crate::{Arguments, CallContext, ToolHost};

    struct Sample {
        name: &'static str,
        rec: Recorder,
        disposed: Arc<AtomicBool>,
        fail_init: bool,
        tool: &'static str,
    }

    impl Sample {
        fn new(name: &'static str, tool: &'static str, rec: &Recorder) -> Self {
            Self {
                name,
                rec: rec.clone(),
                disposed: Arc::default(),
                fail_init: false,
                tool,
            }
        }
    }

    #[async_trait]
    impl Extension for Sample {
        fn name(&self) -> &str {
            self.name
        }
        async fn init(&self, _ctx: &ExtensionContext) -> Result<(), InitError> {
            self.rec.push(format!("init:{}", self.name));
            if self.fail_init {
                return Err(InitError::new("no credentials"));
            }
            Ok(())
        }
        async fn dispose(&self) {
            self.rec.push(format!("dispose:{}", self.name));
            self.disposed.store(true, Ordering::SeqCst);
        }
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            vec![recording_tool(
                self.tool,
                None,
                Duration::ZERO,
                self.rec.clone(),
            )]
        }
        async fn system_prompt(&self) -> Option<String> {
            Some(format!("Use {} wisely.", self.tool))
        }
        fn before_hooks(&self) -> Vec<(HookScope, Arc<dyn BeforeHook>)> {
            vec![(
                HookScope::Global,
                Arc::new(RecordBefore {
                    label: "ext-before",
                    rec: self.rec.clone(),
                    reject: None,
                }),
            )]
        }
        fn after_hooks(&self) -> Vec<(HookScope, Arc<dyn AfterHook>)> {
            vec![(
                HookScope::Tool(self.tool.into()),
                Arc::new(RecordAfter {
                    label: "ext-after",
                    rec: self.rec.clone(),
                }),
            )]
        }
        fn middleware(&self) -> Vec<Arc<dyn Middleware>> {
            vec![Arc::new(RecordMiddleware {
                label: "ext-mw",
                rec: self.rec.clone(),
            })]
        }
        fn lifecycle_hooks(&self) -> Vec<Arc<dyn LifecycleHook>> {
            struct Noop;
            impl LifecycleHook for Noop {}
            vec![Arc::new(Noop)]
        }
    }

    async fn call(host: &ToolHost, tool: &str) -> Result<ToolOutput, ToolError> {
        host.invoke_tool(CallContext::new(), tool, Arguments::parse("{}").unwrap())
            .await
    }

    #[tokio::test]
    async fn e1_registering_applies_every_contribution_and_unloading_removes_them() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        let ext = Arc::new(Sample::new("sample", "sample_tool", &rec));
        host.register_extension(ext.clone()).await.unwrap();
        assert_eq!(host.extension_names(), ["sample"]);
        assert_eq!(host.tool_names(), ["sample_tool"]);
        assert_eq!(host.system_prompt().await, "Use sample_tool wisely.");
        assert_eq!(host.lifecycle_hooks().len(), 1);
        call(&host, "sample_tool").await.unwrap();
        assert_eq!(
            rec.events(),
            [
                "init:sample",
                "ext-before:sample_tool",
                "ext-mw:enter",
                "start:sample_tool",
                "finish:sample_tool",
                "ext-mw:exit",
                "ext-after:sample_tool:ok",
            ]
        );

        host.unload_extension("sample").await.unwrap();
        assert!(ext.disposed.load(Ordering::SeqCst));
        assert!(host.tool_names().is_empty());
        assert!(host.extension_names().is_empty());
        assert_eq!(host.system_prompt().await, "");
        assert!(host.lifecycle_hooks().is_empty());
        assert!(host.stack().before_global.is_empty());
        assert!(host.stack().middleware.is_empty());
        assert!(host.stack().after_tool.is_empty());
        let err = host.unload_extension("sample").await.unwrap_err();
        assert_eq!(err.to_string(), "no extension named `sample` is registered");
    }

    #[tokio::test]
    async fn e1_a_failed_init_applies_nothing() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        let mut ext = Sample::new("broken", "broken_tool", &rec);
        ext.fail_init = true;
        let disposed = ext.disposed.clone();
        let err = host.register_extension(Arc::new(ext)).await.unwrap_err();
        // The cause is kept as the error's source, and printed with it.
        assert_eq!(err.to_string(), "extension `broken` failed to initialise");
        assert_eq!(
            crate::report(&err),
            "extension `broken` failed to initialise: no credentials"
        );
        assert!(disposed.load(Ordering::SeqCst));
        assert!(host.tool_names().is_empty());
        assert!(host.extension_names().is_empty());
    }

    #[tokio::test]
    async fn e1_a_clashing_tool_rolls_the_extension_back() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        host.register_extension(Arc::new(Sample::new("first", "shared", &rec)))
            .await
            .unwrap();
        let second = Sample::new("second", "shared", &rec);
        let disposed = second.disposed.clone();
        let err = host.register_extension(Arc::new(second)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "a tool named `shared` is already registered by extension `first`"
        );
        assert!(disposed.load(Ordering::SeqCst));
        assert_eq!(host.extension_names(), ["first"]);
        assert_eq!(host.stack().before_global.len(), 1);
    }

    #[tokio::test]
    async fn e1_extension_names_are_unique() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        host.register_extension(Arc::new(Sample::new("x", "t1", &rec)))
            .await
            .unwrap();
        let err = host
            .register_extension(Arc::new(Sample::new("x", "t2", &rec)))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "an extension named `x` is already registered"
        );
    }

    #[tokio::test]
    async fn e1_shutdown_disposes_in_reverse_order() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        for (name, tool) in [("one", "t1"), ("two", "t2")] {
            host.register_extension(Arc::new(Sample::new(name, tool, &rec)))
                .await
                .unwrap();
        }
        host.shutdown().await;
        let disposals: Vec<String> = rec
            .events()
            .into_iter()
            .filter(|e| e.starts_with("dispose:"))
            .collect();
        assert_eq!(disposals, ["dispose:two", "dispose:one"]);
        assert!(host.tool_names().is_empty());
    }

    #[tokio::test]
    async fn e1_an_extension_can_replace_its_tools_later() {
        struct Dynamic(std::sync::Mutex<Option<ExtensionContext>>);
        #[async_trait]
        impl Extension for Dynamic {
            fn name(&self) -> &str {
                "dynamic"
            }
            async fn init(&self, ctx: &ExtensionContext) -> Result<(), InitError> {
                ctx.set_tools(vec![recording_tool(
                    "d1",
                    None,
                    Duration::ZERO,
                    Recorder::default(),
                )])?;
                *self.0.lock().unwrap() = Some(ctx.clone());
                Ok(())
            }
        }
        let host = ToolHost::new();
        let ext = Arc::new(Dynamic(Default::default()));
        host.register_extension(ext.clone()).await.unwrap();
        assert_eq!(host.tool_names(), ["d1"]);
        let ctx = ext.0.lock().unwrap().clone().unwrap();
        ctx.set_tools(vec![
            recording_tool("d2", None, Duration::ZERO, Recorder::default()),
            recording_tool("d3", None, Duration::ZERO, Recorder::default()),
        ])
        .unwrap();
        assert_eq!(host.tool_names(), ["d2", "d3"]);
        assert_eq!(ctx.tool_names(), ["d2", "d3"]);
        assert!(call(&host, "d1").await.is_err());
        host.unload_extension("dynamic").await.unwrap();
        assert!(host.tool_names().is_empty());
    }
}
