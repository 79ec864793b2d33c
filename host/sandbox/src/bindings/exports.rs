//! The one place that tells the interface versions apart when calling a
//! guest (rule W1). A plugin's exports are found in the bindings of the
//! version it was built for ([`Exports`]); each call on them (the calls
//! every tool call makes, [`Exports::call_tool`], [`Exports::before_call`]
//! and [`Exports::after_call`], and the rarer [`ToolGuest::list_tools`] and
//! [`ExtensionGuest::system_prompt`]) matches on that version once, and
//! hands back 0.3 types, an older guest's answers upgraded at entry.
//! Outside the bindings, only 0.3 types are seen.

use std::sync::atomic::{AtomicBool, Ordering};

use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use wasmtime::Store;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, Instance, InstancePre, Lift, Lower, TypedFunc,
};

use super::v03::toolhost::plugin::types;
use super::{outcome_to_guest, v01, v02, v03};
use crate::inspect::{PluginWorld, WitVersion};
use crate::state::StoreState;

type Tool01 = v01::exports::toolhost::plugin::tool::GuestIndices;
type Ext01 = v01::exports::toolhost::plugin::extension::GuestIndices;
type Tool02 = v02::exports::toolhost::plugin::tool::GuestIndices;
type Ext02 = v02::exports::toolhost::plugin::extension::GuestIndices;
type Tool03 = v03::exports::toolhost::plugin::tool::GuestIndices;
type Ext03 = v03::exports::toolhost::plugin::extension::GuestIndices;

/// Where a plugin's exports are, in the bindings of the interface version
/// it was built for (rule W1); the extension's only for an extension.
/// The exports every call makes (`call-tool`, and an extension's
/// `before-call` and `after-call`) are also kept on their own
/// ([`CheckedExport`]), so that a call finds its one function without the
/// bindings' per-instance type checks of the whole interface.
pub(crate) enum Exports {
    V01 {
        tool: Tool01,
        ext: Option<Ext01>,
        call_tool: CheckedExport,
        hooks: Option<HookExports>,
    },
    V02 {
        tool: Tool02,
        ext: Option<Ext02>,
        call_tool: CheckedExport,
        hooks: Option<HookExports>,
    },
    V03 {
        tool: Tool03,
        ext: Option<Ext03>,
        call_tool: CheckedExport,
        hooks: Option<HookExports>,
    },
}

/// An extension's `before-call` and `after-call`.
pub(crate) struct HookExports {
    before: CheckedExport,
    after: CheckedExport,
}

impl HookExports {
    fn new(pre: &InstancePre<StoreState>, interface: &str) -> wasmtime::Result<Self> {
        Ok(Self {
            before: CheckedExport::new(pre, interface, "before-call")?,
            after: CheckedExport::new(pre, interface, "after-call")?,
        })
    }
}

/// One function export of one component, and whether its type has been
/// checked against the version's signature.
///
/// The bindings check the type of every function of an interface each time
/// they are loaded from an instance: for a tool call, both functions of
/// `tool` walked on every call, about 4 % of an echo (BENCHMARKS.md), and
/// for each hook all three of `extension`. Every instance of a plugin comes
/// from the same [`InstancePre`], so the same component, whose exports have
/// the same types in all of them: the first call checks the type
/// (wasmtime's own check), and later calls take the function as it is.
///
/// Each `CheckedExport` is made for one [`Exports`] variant and used in one
/// place only, that variant's arm of [`Exports::call_tool`],
/// [`Exports::before_call`] or [`Exports::after_call`], with that version's
/// one signature of that function: the type it was checked for is the type
/// it is used as.
pub(crate) struct CheckedExport {
    index: ComponentExportIndex,
    checked: AtomicBool,
    name: &'static str,
}

impl CheckedExport {
    /// Finds the function `name` in the interface `interface` of `pre`'s
    /// component.
    fn new(
        pre: &InstancePre<StoreState>,
        interface: &str,
        name: &'static str,
    ) -> wasmtime::Result<Self> {
        let component = pre.component();
        let index = component
            .get_export_index(None, interface)
            .and_then(|i| component.get_export_index(Some(&i), name))
            .ok_or_else(|| wasmtime::format_err!("`{interface}` does not export `{name}`"))?;
        Ok(Self {
            index,
            checked: AtomicBool::new(false),
            name,
        })
    }

    /// The function in `instance` as a function of `P` to `R`: checked
    /// against the component the first time, taken as it is after that.
    #[allow(unsafe_code)] // `TypedFunc::new_unchecked`, justified below.
    fn func<P, R>(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
    ) -> wasmtime::Result<TypedFunc<P, R>>
    where
        P: ComponentNamedList + Lower,
        R: ComponentNamedList + Lift,
    {
        if !self.checked.load(Ordering::Acquire) {
            let func = instance.get_typed_func::<P, R>(&mut *store, self.index)?;
            self.checked.store(true, Ordering::Release);
            return Ok(func);
        }
        let func = instance
            .get_func(&mut *store, self.index)
            .ok_or_else(|| wasmtime::format_err!("the instance has no `{}`", self.name))?;
        // SAFETY: `TypedFunc::new_unchecked` needs `func` to have the type
        // `P -> R`. `func` is `self.index` of `instance`, an instance of the
        // component this index was found in (`get_func` returns `None` for
        // an index of another component). That export's type was checked
        // to be `P -> R` by `get_typed_func` above, on an earlier instance
        // of the same component (`checked` is only set after that check
        // passed), and a component's export types are the same in all of
        // its instances. `P` and `R` are the same at every use: see the
        // type's documentation.
        Ok(unsafe { TypedFunc::new_unchecked(func) })
    }
}

impl Exports {
    /// Finds the exports of a component of `world`, built for `wit`.
    pub(crate) fn new(
        pre: &InstancePre<StoreState>,
        world: PluginWorld,
        wit: WitVersion,
    ) -> wasmtime::Result<Self> {
        let extension = world == PluginWorld::ExtensionPlugin;
        Ok(match wit {
            WitVersion::V0_1 => Self::V01 {
                tool: Tool01::new(pre)?,
                ext: extension.then(|| Ext01::new(pre)).transpose()?,
                call_tool: CheckedExport::new(pre, "toolhost:plugin/tool@0.1.0", "call-tool")?,
                hooks: extension
                    .then(|| HookExports::new(pre, "toolhost:plugin/extension@0.1.0"))
                    .transpose()?,
            },
            WitVersion::V0_2 => Self::V02 {
                tool: Tool02::new(pre)?,
                ext: extension.then(|| Ext02::new(pre)).transpose()?,
                call_tool: CheckedExport::new(pre, "toolhost:plugin/tool@0.2.0", "call-tool")?,
                hooks: extension
                    .then(|| HookExports::new(pre, "toolhost:plugin/extension@0.2.0"))
                    .transpose()?,
            },
            WitVersion::V0_3 => Self::V03 {
                tool: Tool03::new(pre)?,
                ext: extension.then(|| Ext03::new(pre)).transpose()?,
                call_tool: CheckedExport::new(pre, "toolhost:plugin/tool@0.3.0", "call-tool")?,
                hooks: extension
                    .then(|| HookExports::new(pre, "toolhost:plugin/extension@0.3.0"))
                    .transpose()?,
            },
        })
    }

    /// The guest's `call-tool` of the tool `name` with `args` (JSON text),
    /// in `instance`.
    pub(crate) async fn call_tool(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        name: &str,
        args: &str,
        info: &types::CallInfo,
    ) -> wasmtime::Result<Result<types::ToolOutput, types::ToolError>> {
        match self {
            Self::V01 { call_tool, .. } => {
                use v01::toolhost::plugin::types as old;
                let info = v01::call_info(info);
                let func = call_tool
                    .func::<(&str, &str, &old::CallInfo), (Result<old::ToolOutput, old::ToolError>,)>(
                        store, instance,
                    )?;
                let (r,) = func.call_async(&mut *store, (name, args, &info)).await?;
                Ok(r.map(v01::upgrade_output).map_err(v01::upgrade_error))
            }
            Self::V02 { call_tool, .. } => {
                use v02::toolhost::plugin::types as old;
                let info = v02::down::call_info(info);
                let func = call_tool
                    .func::<(&str, &str, &old::CallInfo), (Result<old::ToolOutput, old::ToolError>,)>(
                        store, instance,
                    )?;
                let (r,) = func.call_async(&mut *store, (name, args, &info)).await?;
                Ok(r.map(v02::up::output).map_err(v02::up::error))
            }
            Self::V03 { call_tool, .. } => {
                let func = call_tool.func::<
                    (&str, &str, &types::CallInfo),
                    (Result<types::ToolOutput, types::ToolError>,),
                >(store, instance)?;
                let (r,) = func.call_async(&mut *store, (name, args, info)).await?;
                Ok(r)
            }
        }
    }

    /// The extension's `before-call` in `instance`, as a 0.3 decision. A
    /// 0.1 guest only allows or rejects. `None` for a plugin that is not an
    /// extension.
    pub(crate) async fn before_call(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        call: &types::HookCall,
    ) -> Option<wasmtime::Result<types::BeforeDecision>> {
        Some(match self {
            Self::V01 { hooks, .. } => {
                use v01::toolhost::plugin::types as old;
                let before = &hooks.as_ref()?.before;
                let call = v01::hook_call(call);
                async {
                    let func =
                        before.func::<(&old::HookCall,), (Result<(), String>,)>(store, instance)?;
                    let (r,) = func.call_async(&mut *store, (&call,)).await?;
                    Ok(match r {
                        Ok(()) => types::BeforeDecision::Allow,
                        Err(reason) => types::BeforeDecision::Reject(reason),
                    })
                }
                .await
            }
            Self::V02 { hooks, .. } => {
                use v02::toolhost::plugin::types as old;
                let before = &hooks.as_ref()?.before;
                let call = v02::down::hook_call(call);
                async {
                    let func = before
                        .func::<(&old::HookCall,), (old::BeforeDecision,)>(store, instance)?;
                    let (r,) = func.call_async(&mut *store, (&call,)).await?;
                    Ok(v02::up::before(r))
                }
                .await
            }
            Self::V03 { hooks, .. } => {
                let before = &hooks.as_ref()?.before;
                async {
                    let func = before
                        .func::<(&types::HookCall,), (types::BeforeDecision,)>(store, instance)?;
                    let (r,) = func.call_async(&mut *store, (call,)).await?;
                    Ok(r)
                }
                .await
            }
        })
    }

    /// The extension's `after-call` in `instance` with the call's
    /// `outcome`, as a 0.3 decision. A 0.1 guest only observes: its decision
    /// is always to keep the outcome. `None` for a plugin that is not an
    /// extension.
    pub(crate) async fn after_call(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
        call: &types::HookCall,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> Option<wasmtime::Result<types::AfterDecision>> {
        Some(match self {
            Self::V01 { hooks, .. } => {
                use v01::toolhost::plugin::types as old;
                let after = &hooks.as_ref()?.after;
                let (call, outcome) = (v01::hook_call(call), v01::outcome_to_guest(outcome));
                async {
                    let func =
                        after.func::<(&old::HookCall, &old::CallOutcome), ()>(store, instance)?;
                    func.call_async(&mut *store, (&call, &outcome)).await?;
                    Ok(types::AfterDecision::Keep)
                }
                .await
            }
            Self::V02 { hooks, .. } => {
                use v02::toolhost::plugin::types as old;
                let after = &hooks.as_ref()?.after;
                let call = v02::down::hook_call(call);
                let outcome = v02::down::outcome(outcome_to_guest(outcome));
                async {
                    let func = after
                        .func::<(&old::HookCall, &old::CallOutcome), (old::AfterDecision,)>(
                            store, instance,
                        )?;
                    let (r,) = func.call_async(&mut *store, (&call, &outcome)).await?;
                    Ok(v02::up::after(r))
                }
                .await
            }
            Self::V03 { hooks, .. } => {
                let after = &hooks.as_ref()?.after;
                let outcome = outcome_to_guest(outcome);
                async {
                    let func = after
                        .func::<(&types::HookCall, &types::CallOutcome), (types::AfterDecision,)>(
                            store, instance,
                        )?;
                    let (r,) = func.call_async(&mut *store, (call, &outcome)).await?;
                    Ok(r)
                }
                .await
            }
        })
    }

    /// The `tool` exports of `instance`.
    pub(crate) fn tool(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
    ) -> wasmtime::Result<ToolGuest> {
        Ok(match self {
            Self::V01 { tool, .. } => ToolGuest::V01(tool.load(store, instance)?),
            Self::V02 { tool, .. } => ToolGuest::V02(tool.load(store, instance)?),
            Self::V03 { tool, .. } => ToolGuest::V03(tool.load(store, instance)?),
        })
    }

    /// The `extension` exports of `instance`; `None` for a plugin that is
    /// not an extension.
    pub(crate) fn extension(
        &self,
        store: &mut Store<StoreState>,
        instance: &Instance,
    ) -> Option<wasmtime::Result<ExtensionGuest>> {
        Some(match self {
            Self::V01 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V01),
            Self::V02 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V02),
            Self::V03 { ext, .. } => ext.as_ref()?.load(store, instance).map(ExtensionGuest::V03),
        })
    }
}

/// A plugin's `tool` exports in one instance.
pub(crate) enum ToolGuest {
    V01(v01::exports::toolhost::plugin::tool::Guest),
    V02(v02::exports::toolhost::plugin::tool::Guest),
    V03(v03::exports::toolhost::plugin::tool::Guest),
}

impl ToolGuest {
    /// The guest's `list-tools`.
    pub(crate) async fn list_tools(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<types::ToolDescriptor>> {
        match self {
            Self::V01(g) => {
                let list = g.call_list_tools(store).await?;
                Ok(list.into_iter().map(v01::upgrade_descriptor).collect())
            }
            Self::V02(g) => {
                let list = g.call_list_tools(store).await?;
                Ok(list.into_iter().map(v02::upgrade_descriptor).collect())
            }
            Self::V03(g) => g.call_list_tools(store).await,
        }
    }
}

/// A plugin's `extension` exports in one instance.
pub(crate) enum ExtensionGuest {
    V01(v01::exports::toolhost::plugin::extension::Guest),
    V02(v02::exports::toolhost::plugin::extension::Guest),
    V03(v03::exports::toolhost::plugin::extension::Guest),
}

impl ExtensionGuest {
    /// The guest's `system-prompt`.
    pub(crate) async fn system_prompt(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Option<String>> {
        match self {
            Self::V01(g) => g.call_system_prompt(store).await,
            Self::V02(g) => g.call_system_prompt(store).await,
            Self::V03(g) => g.call_system_prompt(store).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use wasmtime::component::{Component, Linker};
    use wasmtime::{Engine, Store};

    use super::*;
    use crate::policy::PluginPolicy;
    use crate::state::ResolvedPolicy;

    /// A component whose `toolhost:plugin/tool@0.3.0` has a `call-tool` of
    /// another type than the interface's: `func(x: u32) -> u32`.
    const CALL_TOOL_OF_ANOTHER_TYPE: &str = r#"
        (component
          (core module $m (func (export "f") (param i32) (result i32) local.get 0))
          (core instance $i (instantiate $m))
          (func $call (param "x" u32) (result u32) (canon lift (core func $i "f")))
          (instance $tool (export "call-tool" (func $call)))
          (export "toolhost:plugin/tool@0.3.0" (instance $tool)))
    "#;

    fn store(engine: &Engine) -> Store<StoreState> {
        let policy = ResolvedPolicy::new(PluginPolicy::default(), "other-type");
        let state = StoreState::new(
            &policy.http_grant("other-type".into()),
            &policy,
            None,
            Instant::now() + Duration::from_secs(600),
        )
        .unwrap();
        let mut store = Store::new(engine, state);
        // The engine interrupts at each epoch; nothing bumps it here.
        store.set_epoch_deadline(u64::MAX);
        store
    }

    #[tokio::test]
    async fn w1_a_call_tool_of_another_type_is_refused_at_every_call_never_taken_unchecked() {
        let engine = Engine::new(&crate::engine::engine_config_for(4)).unwrap();
        let wasm = wat::parse_str(CALL_TOOL_OF_ANOTHER_TYPE).unwrap();
        let component = Component::new(&engine, &wasm).unwrap();
        let pre = Linker::<StoreState>::new(&engine)
            .instantiate_pre(&component)
            .unwrap();
        let call_tool =
            CheckedExport::new(&pre, "toolhost:plugin/tool@0.3.0", "call-tool").unwrap();
        // Every call checks again: a failed check never lets a later call
        // take the function unchecked.
        for _ in 0..3 {
            let mut store = store(&engine);
            let instance = pre.instantiate_async(&mut store).await.unwrap();
            let err = call_tool
                .func::<
                    (&str, &str, &types::CallInfo),
                    (Result<types::ToolOutput, types::ToolError>,),
                >(&mut store, &instance)
                .err()
                .expect("a `call-tool` of another type is refused");
            assert!(
                format!("{err:#}").contains("type mismatch"),
                "the refusal says why: {err:#}"
            );
            assert!(!call_tool.checked.load(Ordering::Acquire));
        }
        // The same index with the type it has is taken, checked once.
        for _ in 0..2 {
            let mut store = store(&engine);
            let instance = pre.instantiate_async(&mut store).await.unwrap();
            let func = call_tool
                .func::<(u32,), (u32,)>(&mut store, &instance)
                .unwrap();
            assert_eq!(func.call_async(&mut store, (7,)).await.unwrap(), (7,));
        }
        assert!(call_tool.checked.load(Ordering::Acquire));
    }

    #[tokio::test]
    async fn w1_hooks_of_another_type_are_refused_at_every_call_never_taken_unchecked() {
        // An extension whose every function has the names of 0.3 and the
        // type `func(x: u32) -> u32`: found at load (names only), refused
        // at each call.
        let funcs = |names: &[&str]| {
            names
                .iter()
                .map(|n| format!(r#"(export "{n}" (func $f))"#))
                .collect::<String>()
        };
        let wat = format!(
            r#"(component
                 (core module $m (func (export "f") (param i32) (result i32) local.get 0))
                 (core instance $i (instantiate $m))
                 (func $f (param "x" u32) (result u32) (canon lift (core func $i "f")))
                 (instance $tool {})
                 (instance $ext {})
                 (export "toolhost:plugin/tool@0.3.0" (instance $tool))
                 (export "toolhost:plugin/extension@0.3.0" (instance $ext)))"#,
            funcs(&["list-tools", "call-tool"]),
            funcs(&["system-prompt", "before-call", "after-call"]),
        );
        let engine = Engine::new(&crate::engine::engine_config_for(4)).unwrap();
        let component = Component::new(&engine, wat::parse_str(&wat).unwrap()).unwrap();
        let pre = Linker::<StoreState>::new(&engine)
            .instantiate_pre(&component)
            .unwrap();
        let exports = Exports::new(&pre, PluginWorld::ExtensionPlugin, WitVersion::V0_3).unwrap();
        let call = types::HookCall {
            tool: "echo".into(),
            arguments: "{}".into(),
            call_id: "c1".into(),
        };
        for _ in 0..3 {
            let mut store = store(&engine);
            let instance = pre.instantiate_async(&mut store).await.unwrap();
            let before = exports
                .before_call(&mut store, &instance, &call)
                .await
                .expect("an extension")
                .expect_err("a `before-call` of another type is refused");
            assert!(
                format!("{before:#}").contains("type mismatch"),
                "{before:#}"
            );
            let after = exports
                .after_call(&mut store, &instance, &call, &Ok(ToolOutput::text("x")))
                .await
                .expect("an extension")
                .expect_err("an `after-call` of another type is refused");
            assert!(format!("{after:#}").contains("type mismatch"), "{after:#}");
        }
        let Exports::V03 {
            hooks: Some(hooks), ..
        } = &exports
        else {
            panic!("a 0.3 extension");
        };
        assert!(!hooks.before.checked.load(Ordering::Acquire));
        assert!(!hooks.after.checked.load(Ordering::Acquire));
    }

    #[test]
    fn w1_an_interface_without_call_tool_is_named_at_load() {
        let engine = Engine::new(&crate::engine::engine_config_for(4)).unwrap();
        let wasm = wat::parse_str(
            r#"(component
                 (instance $tool)
                 (export "toolhost:plugin/tool@0.3.0" (instance $tool)))"#,
        )
        .unwrap();
        let component = Component::new(&engine, &wasm).unwrap();
        let pre = Linker::<StoreState>::new(&engine)
            .instantiate_pre(&component)
            .unwrap();
        let err = CheckedExport::new(&pre, "toolhost:plugin/tool@0.3.0", "call-tool")
            .err()
            .expect("refused");
        assert_eq!(
            err.to_string(),
            "`toolhost:plugin/tool@0.3.0` does not export `call-tool`"
        );
    }
}
