//! Bindings of `toolhost:plugin@0.3.0` (`wit/plugin.wit`), the version the
//! SDK targets. Its types are the ones the rest of the sandbox sees: what an
//! older guest hands over is upgraded to them at entry.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "toolhost:plugin/extension-plugin@0.3.0",
    exports: { default: async },
    // A host call can fail the call (a log record over its bound).
    imports: { default: trappable },
});
