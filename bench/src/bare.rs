//! Bare wasmtime 48: the template plugin's `echo` on an engine with the
//! very settings toolhost's sandbox uses (`engine_config`: pooling, epochs,
//! the same stacks and slots), the same WIT bindings and WASI, and nothing
//! else — no policy, no limits, no pipeline. The floor under toolhost, in
//! the benchmark's own process (`peers`) and behind rmcp's minimal server
//! (`rmcp_wasm_echo`).

use std::path::Path;

use wasmtime::component::{Component, HasSelf, InstancePre, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_config::{WasiConfig, WasiConfigVariables};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolhost:plugin/tool-plugin@0.3.0",
    exports: { default: async },
});

use self::toolhost::plugin::types::{CallInfo, ToolError, ToolOutput};

/// The engine, configured as toolhost's sandbox configures its own.
pub fn engine() -> Engine {
    Engine::new(&::toolhost::sandbox::engine_config()).expect("the engine")
}

/// What a store holds: WASI with nothing granted, and no settings.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    config: WasiConfigVariables,
}

impl State {
    /// A store's state with nothing granted.
    pub fn fresh() -> Self {
        Self {
            wasi: WasiCtxBuilder::new().build(),
            table: ResourceTable::new(),
            config: WasiConfigVariables::new(),
        }
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl self::toolhost::plugin::types::Host for State {}

impl self::toolhost::plugin::host::Host for State {
    fn log(
        &mut self,
        _: self::toolhost::plugin::host::LogLevel,
        _: String,
        _: Vec<(String, String)>,
    ) {
    }

    fn remaining_ms(&mut self) -> Option<u64> {
        None
    }

    fn report_progress(&mut self, _: f64, _: Option<f64>, _: Option<String>) {}
}

/// A component linked and ready to instantiate.
pub struct Bare {
    /// The engine the component was compiled for.
    pub engine: Engine,
    /// The component, linked.
    pub pre: InstancePre<State>,
}

/// The linker toolhost's plugins need: WASI p2, `wasi:config/store` (the
/// template reads a setting) and the plugin world's host.
pub fn linker(engine: &Engine) -> Linker<State> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI links");
    wasmtime_wasi_config::add_to_linker(&mut linker, |s: &mut State| WasiConfig::new(&s.config))
        .expect("wasi:config links");
    ToolPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).expect("the host links");
    linker
}

impl Bare {
    /// Compiles the component at `wasm` for `engine` and links it; panics
    /// if either fails, as a benchmark cannot go on without it.
    pub fn new(engine: &Engine, wasm: &Path) -> Self {
        let component = Component::from_file(engine, wasm).expect("compiles");
        let linker = linker(engine);
        let pre = linker.instantiate_pre(&component).expect("links");
        Self {
            engine: engine.clone(),
            pre,
        }
    }

    /// A fresh store and instance.
    pub async fn instance(&self) -> (Store<State>, ToolPlugin) {
        let mut store = Store::new(&self.engine, State::fresh());
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiates");
        let plugin = ToolPlugin::new(&mut store, &instance).expect("exports");
        (store, plugin)
    }
}

/// One `echo` call on an instance; panics if it traps or fails.
pub async fn echo(store: &mut Store<State>, plugin: &ToolPlugin, args: &str) {
    let out = call(store, plugin, "echo", args).await;
    assert!(out.is_ok(), "echo failed");
}

/// One call of tool `name` with `args` (a JSON object) on an instance:
/// the tool's text, or what its failure says. Panics if the guest traps.
pub async fn call_text(
    store: &mut Store<State>,
    plugin: &ToolPlugin,
    name: &str,
    args: &str,
) -> Result<String, String> {
    match call(store, plugin, name, args).await {
        Ok(ToolOutput::Text(text) | ToolOutput::Silent(text)) => Ok(text),
        Ok(other) => Ok(format!("{other:?}")),
        Err(e) => Err(format!("{e:?}")),
    }
}

async fn call(
    store: &mut Store<State>,
    plugin: &ToolPlugin,
    name: &str,
    args: &str,
) -> Result<ToolOutput, ToolError> {
    let info = CallInfo {
        call_id: "bench".into(),
        attempt: 1,
        deadline_ms: None,
    };
    plugin
        .toolhost_plugin_tool()
        .call_call_tool(&mut *store, name, args, &info)
        .await
        .expect("no trap")
}

/// `list-tools` on an instance, as a load does once.
pub async fn list_tools(store: &mut Store<State>, plugin: &ToolPlugin) -> usize {
    plugin
        .toolhost_plugin_tool()
        .call_list_tools(&mut *store)
        .await
        .expect("no trap")
        .len()
}
