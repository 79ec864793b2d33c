//! Bindings of `toolhost:plugin@0.2.0` (`wit/plugin.wit`), the version the
//! SDK targets.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "toolhost:plugin/extension-plugin@0.2.0",
    exports: { default: async },
    // A host call can fail the call (a log record over its bound).
    imports: { default: trappable },
});
